// env-overridden-by-launch: a variable in the shell that contradicts the file; accelerate launch
// overwrites it, but torchrun or python would not.
#include <fmt/format.h>

#include <cctype>

#include "rules/rule_util.hpp"
#include "shardcheck/text.hpp"

namespace shardcheck::rules {
namespace env_overridden_by_launch {
void check(LintContext& ctx);
}

extern const Rule kEnvOverriddenByLaunch;
const Rule kEnvOverriddenByLaunch{
    .id = "env-overridden-by-launch",
    .severity = Severity::note,
    .summary = "An environment variable that contradicts the file",
    .explanation =
        "For the variables `accelerate launch` always exports (FSDP_SHARDING_STRATEGY, FSDP_OFFLOAD_PARAMS, "
        "ACCELERATE_MIXED_PRECISION, ...; utils/launch.py::prepare_multi_gpu_env, v1.14.0) the file wins and the "
        "shell's "
        "value is overwritten. Started any other way (torchrun, python, a notebook), the FSDP plugin reads the shell's "
        "value instead. A contradiction is harmless under accelerate launch but a trap otherwise.",
    .fix = "",
    .check = env_overridden_by_launch::check,
};

namespace env_overridden_by_launch {

void check(LintContext& ctx) {
  if (!ctx.opts.audit_env) return;
  for (const EnvVar& var : ctx.opts.env) {
    const SectionSpec* section = nullptr;
    const KeySpec* k = ctx.schema.key_for_env(var.name, &section);
    if (!k || k->exported != "always") continue;
    const bool is_fsdp_key = section && section->name == "fsdp_config";
    if (is_fsdp_key && !ctx.is_fsdp()) continue;
    const YamlEntry* e = is_fsdp_key                        ? ctx.fsdp(k->name)
                         : section && section->name.empty() ? ctx.top(k->name)
                                                            : nullptr;
    std::string file_value = e && e->value ? python_str(*e->value) : k->default_value;
    std::string env_value = var.value;
    if (k->type == "enum" && e && e->value) {
      const EnumMatch m = match_enum(*k, *e->value, ctx.version());
      if (m.matched) file_value = m.canonical;
      if (k->integer_forms && !env_value.empty() && std::isdigit(static_cast<unsigned char>(env_value[0]))) {
        const std::size_t i = static_cast<std::size_t>(std::atoi(env_value.c_str()));
        if (i >= 1 && i <= k->values.size()) env_value = k->values[i - 1].value;
      }
    }
    if (k->type == "env_bool" || k->type == "bool") {
      if (env_truthy(env_value) == env_truthy(file_value)) continue;
    } else if (ascii_lower(env_value) == ascii_lower(file_value)) {
      continue;
    }
    ctx.report(kEnvOverriddenByLaunch, env_location(ctx, var, e),
               fmt::format("{}={} in the environment contradicts the file ({}: {}); accelerate launch overwrites it, "
                           "but torchrun or python would use it",
                           var.name, var.value, k->name, file_value.empty() ? "unset" : file_value),
               fmt::format("unset {}", var.name));
  }
}
}  // namespace env_overridden_by_launch

}  // namespace shardcheck::rules
