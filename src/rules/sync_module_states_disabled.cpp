// sync-module-states-disabled: fsdp_sync_module_states false with CPU-RAM-efficient loading on.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace sync_module_states_disabled {
void check(LintContext& ctx);
}

extern const Rule kSyncModuleStatesDisabled;
const Rule kSyncModuleStatesDisabled{
    .id = "sync-module-states-disabled",
    .severity = Severity::error,
    .summary = "fsdp_sync_module_states is false while fsdp_cpu_ram_efficient_loading is on",
    .explanation =
        "utils/launch.py::prepare_multi_gpu_env (v0.34.0 and v1.14.0) raises `ValueError: When using "
        "`--fsdp_cpu_ram_efficient_loading` set `--fsdp_sync_module_states` to `True`` when CPU-RAM-efficient loading "
        "is "
        "on and sync is off. Only rank 0 loads real weights under efficient loading; the others must receive them "
        "through sync_module_states. The launcher's default for fsdp_cpu_ram_efficient_loading is \"true\", so a file "
        "that turns sync off and does not mention efficient loading fails too, FSDP2 included.",
    .fix = "",
    .check = sync_module_states_disabled::check,
};

namespace sync_module_states_disabled {
void check(LintContext& ctx) {
  if (!ctx.is_fsdp() || ctx.version() < Version{0, 24, 0}) return;
  const YamlEntry* sync = ctx.fsdp("fsdp_sync_module_states");
  if (!sync || ctx.fsdp_bool("fsdp_sync_module_states") != std::optional<bool>(false)) return;
  const YamlEntry* eff = ctx.fsdp("fsdp_cpu_ram_efficient_loading");
  const auto eff_value = ctx.fsdp_bool("fsdp_cpu_ram_efficient_loading");
  if (eff && eff_value != std::optional<bool>(true)) return;
  if (!eff && ctx.version() < Version{0, 34, 0}) return;  // default "true" verified from v0.34.0
  ctx.report(kSyncModuleStatesDisabled, ctx.doc.value_location(*sync),
             fmt::format("`{}: false` with fsdp_cpu_ram_efficient_loading {}: accelerate launch fails with "
                         "`ValueError: When using `--fsdp_cpu_ram_efficient_loading` set `--fsdp_sync_module_states` "
                         "to `True``",
                         sync->key, eff ? "true" : "absent (the launcher's default is true)"),
             "set `fsdp_sync_module_states: true`, or `fsdp_cpu_ram_efficient_loading: false` to load the full "
             "model on every rank");
}
}  // namespace sync_module_states_disabled

}  // namespace shardcheck::rules
