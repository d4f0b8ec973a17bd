// fsdp1-reshard-strategy-ignored: FSDP1 file from `accelerate config` >= 1.6 whose strategy is
// written as fsdp_reshard_after_forward and silently runs as FULL_SHARD.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace fsdp1_reshard_overrides_strategy {
void check(LintContext& ctx);
}

extern const Rule kFsdp1ReshardStrategyIgnored;
const Rule kFsdp1ReshardStrategyIgnored{
    .id = "fsdp1-reshard-strategy-ignored",
    .severity = Severity::warning,
    .summary = "An FSDP1 strategy given only as fsdp_reshard_after_forward runs as FULL_SHARD",
    .explanation =
        "Since v1.6.0 `accelerate config` writes the FSDP1 strategy as `fsdp_reshard_after_forward: <NAME>` "
        "(commands/config/cluster.py). But for FSDP1 the plugin always fills sharding_strategy from "
        "FSDP_SHARDING_STRATEGY, which the launcher exports with the default FULL_SHARD, and accelerator.py passes "
        "`sharding_strategy or reshard_after_forward`; tests/fsdp/test_fsdp.py asserts reshard_after_forward is None "
        "for "
        "FSDP1. So `fsdp_reshard_after_forward: SHARD_GRAD_OP` without fsdp_sharding_strategy runs FULL_SHARD "
        "(derived from v1.14.0 source). The fix renames the key to fsdp_sharding_strategy.",
    .fix = "rename the key to fsdp_sharding_strategy",
    .check = fsdp1_reshard_overrides_strategy::check,
};

namespace fsdp1_reshard_overrides_strategy {
void check(LintContext& ctx) {
  if (!ctx.is_fsdp() || ctx.fsdp_version() != 1 || ctx.version() < Version{1, 6, 0}) return;
  if (ctx.fsdp("fsdp_sharding_strategy")) return;
  const YamlEntry* e = ctx.fsdp("fsdp_reshard_after_forward");
  const KeySpec* spec = ctx.schema.fsdp_key("fsdp_sharding_strategy");
  if (!e || !e->value || !spec) return;
  const EnumMatch m = match_enum(*spec, *e->value, ctx.version());
  if (!m.matched || m.canonical == "FULL_SHARD") return;
  const std::string key = e->key.rfind("fsdp_", 0) == 0 ? "fsdp_sharding_strategy" : "sharding_strategy";
  ctx.report(
      kFsdp1ReshardStrategyIgnored, ctx.doc.key_location(*e),
      fmt::format("`{}: {}` is not used by FSDP1: without fsdp_sharding_strategy the job runs FULL_SHARD, not {}",
                  e->key, e->value->text, m.canonical),
      fmt::format("write `{}: {}`", key, m.canonical),
      {ctx.edit(e->key_pos.offset, e->key_end - e->key_pos.offset, key)});
}
}  // namespace fsdp1_reshard_overrides_strategy

}  // namespace shardcheck::rules
