// hybrid-shard-no-wrap: HYBRID_SHARD(_ZERO2) with NO_WRAP fails inside torch's FSDP1.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace hybrid_shard_no_wrap {
void check(LintContext& ctx);
}

extern const Rule kHybridShardNoWrap;
const Rule kHybridShardNoWrap{
    .id = "hybrid-shard-no-wrap",
    .severity = Severity::error,
    .summary = "A hybrid sharding strategy without an auto-wrap policy",
    .explanation =
        "torch FSDP1 (_init_utils.py) raises `ValueError: ('Manual wrapping with ShardingStrategy.HYBRID_SHARD', "
        "'requires explicit specification of process group or device_mesh.')` when a hybrid strategy gets no auto-wrap "
        "policy, no process group and no device mesh. accelerate's FSDP1 path passes neither a process group nor a "
        "mesh, "
        "so HYBRID_SHARD and HYBRID_SHARD_ZERO2 need TRANSFORMER_BASED_WRAP or SIZE_BASED_WRAP (accelerate#2671).",
    .fix = "",
    .check = hybrid_shard_no_wrap::check,
};

namespace hybrid_shard_no_wrap {
void check(LintContext& ctx) {
  if (!ctx.is_fsdp() || ctx.fsdp_version() != 1) return;
  const auto strategy = ctx.fsdp_enum("fsdp_sharding_strategy");
  if (!strategy || strategy->rfind("HYBRID_SHARD", 0) != 0) return;
  const YamlEntry* policy_entry = ctx.fsdp("fsdp_auto_wrap_policy");
  const auto policy = ctx.fsdp_enum("fsdp_auto_wrap_policy");
  if (policy_entry && !policy) return;
  if (policy.value_or("NO_WRAP") != "NO_WRAP") return;
  const YamlEntry* e = ctx.fsdp("fsdp_sharding_strategy");
  ctx.report(
      kHybridShardNoWrap, ctx.doc.value_location(*e),
      fmt::format("{} with {}: torch fails with `ValueError: ('Manual wrapping with ShardingStrategy.{}', "
                  "'requires explicit specification of process group or device_mesh.')`",
                  *strategy, policy_entry ? "fsdp_auto_wrap_policy NO_WRAP" : "no fsdp_auto_wrap_policy (NO_WRAP)",
                  *strategy),
      "set `fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP` (or SIZE_BASED_WRAP)");
}
}  // namespace hybrid_shard_no_wrap

}  // namespace shardcheck::rules
