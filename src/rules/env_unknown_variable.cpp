// env-unknown-variable: an FSDP_* variable no accelerate release reads (a typo, or a stale name).
#include <fmt/format.h>

#include "rules/rule_util.hpp"
#include "shardcheck/text.hpp"

namespace shardcheck::rules {
namespace env_unknown_variable {
void check(LintContext& ctx);
}

extern const Rule kEnvUnknownVariable;
const Rule kEnvUnknownVariable{
    .id = "env-unknown-variable",
    .severity = Severity::warning,
    .summary = "An FSDP_* or accelerate variable that nothing reads",
    .explanation =
        "FullyShardedDataParallelPlugin reads a fixed set of FSDP_* variables (utils/dataclasses.py, v1.14.0; listed "
        "in rules/accelerate/schema.yaml as each key's `env`). A misspelled one (FSDP_SHARDING_STRATGY) is ignored, "
        "and so is ACCELERATE_CONFIG_FILE: accelerate has no such variable and finds its config only through "
        "--config_file or $HF_HOME/accelerate/default_config.yaml (commands/config/config_args.py).",
    .fix = "",
    .check = env_unknown_variable::check,
    .environment_only = /*environment_only=*/true,
};

namespace env_unknown_variable {
void check(LintContext& ctx) {
  if (!ctx.opts.audit_env) return;
  std::vector<std::string> known;
  auto collect = [&](const SectionSpec& s) {
    for (const auto& [name, k] : s.keys)
      if (!k.env.empty()) known.push_back(k.env);
  };
  collect(ctx.schema.top);
  for (const auto& [name, s] : ctx.schema.sections) collect(s);
  known.push_back("FSDP_USE_ORIG_PARAMS");
  for (const EnvVar& var : ctx.opts.env) {
    if (var.name == "ACCELERATE_CONFIG_FILE") {
      ctx.report(
          kEnvUnknownVariable, env_location(ctx, var, nullptr),
          fmt::format("ACCELERATE_CONFIG_FILE={} is not read by accelerate", var.value),
          "pass `accelerate launch --config_file FILE`, or put the file at $HF_HOME/accelerate/default_config.yaml");
      continue;
    }
    if (var.name.rfind("FSDP_", 0) != 0 || ctx.schema.key_for_env(var.name)) continue;
    std::vector<std::string> lowered;
    for (auto k : known) {
      k = ascii_lower(std::move(k));
      lowered.push_back(k);
    }
    std::string guess = did_you_mean(var.name, lowered);
    for (auto& c : guess) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    ctx.report(kEnvUnknownVariable, env_location(ctx, var, nullptr),
               fmt::format("{} is not read by accelerate{}", var.name,
                           guess.empty() ? "" : fmt::format(" (did you mean {}?)", guess)),
               fmt::format("unset {}", var.name));
  }
}
}  // namespace env_unknown_variable

}  // namespace shardcheck::rules
