// unknown-nested-key: a misspelled key inside fsdp_config (or parallelism_config, dynamo_config).
// accelerate never validates nested keys: the setting is dropped without a word.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace unknown_nested_key {
void check(LintContext& ctx);
}

extern const Rule kUnknownNestedKey;
const Rule kUnknownNestedKey{
    .id = "unknown-nested-key",
    .severity = Severity::warning,
    .summary = "A key inside fsdp_config (or another section) that accelerate ignores",
    .explanation =
        "launch.py::_validate_launch_command (v1.5.0+, and the same loop since v0.34.0) copies every key of "
        "`fsdp_config` onto the launcher arguments with setattr, adding the `fsdp_` prefix when the key does not start "
        "with `fsdp`. A key that matches no launcher option becomes an unused attribute: `fsdp_sharding_stratgy: "
        "SHARD_GRAD_OP` silently runs FULL_SHARD. The load-time unknown-key check in config_args.py covers top-level "
        "keys only. The same holds for `dynamo_config` and `parallelism_config`.",
    .fix = "",
    .check = unknown_nested_key::check,
};

namespace unknown_nested_key {
void check(LintContext& ctx) {
  for (const auto& [name, section] : ctx.schema.sections) {
    if (!section.check_unknown) continue;
    const YamlNode* m = ctx.section_map(name);
    if (!m) continue;
    std::vector<std::string> candidates;
    for (const auto& [k, spec] : section.keys) {
      if (!spec.exists_in(ctx.version()) && !spec.renamed_to.empty()) continue;
      candidates.push_back(k);
      if (section.prefix_optional && k.rfind(section.prefix, 0) == 0)
        candidates.push_back(k.substr(section.prefix.size()));
    }
    std::vector<std::string> names;
    for (const auto& [k, spec] : section.keys)
      if (spec.exists_in(ctx.version()) && spec.renamed_to.empty()) names.push_back(k);
    const std::string known = quoted_list(names, "and");
    for (const auto& e : m->entries) {
      if (section.find(e.key)) continue;
      std::string message = fmt::format("unknown key `{}` in `{}` is silently ignored by accelerate", e.key, name);
      if (ctx.schema.top.find(e.key))
        message += fmt::format(" (`{}` is a top-level key: move it out of `{}`)", e.key, name);
      else if (auto guess = did_you_mean(e.key, candidates); !guess.empty())
        message += fmt::format(" (did you mean `{}`?)", guess);
      ctx.report(kUnknownNestedKey, ctx.doc.key_location(e), message,
                 fmt::format("accelerate {} knows these `{}` keys: {}", ctx.version().str(), name, known));
    }
  }
}
}  // namespace unknown_nested_key

}  // namespace shardcheck::rules
