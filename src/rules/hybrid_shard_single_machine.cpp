// hybrid-shard-single-machine: hybrid sharding on one node replicates across a group of one.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace hybrid_shard_single_machine {
void check(LintContext& ctx);
}

extern const Rule kHybridShardSingleMachine;
const Rule kHybridShardSingleMachine{
    .id = "hybrid-shard-single-machine",
    .severity = Severity::warning,
    .summary = "A hybrid sharding strategy on a single machine",
    .explanation =
        "HYBRID_SHARD shards within a node and replicates across nodes; torch FSDP1 sizes the intra-node group from "
        "the "
        "visible GPU count. With num_machines 1 there is nothing to replicate across, so HYBRID_SHARD behaves like "
        "FULL_SHARD (HYBRID_SHARD_ZERO2 like SHARD_GRAD_OP) with extra process groups, and when fewer processes run "
        "than "
        "GPUs are visible torch fails with `ValueError: The arg 'group_size' (8) must not exceed the world size (2)` "
        "(instructlab/training#678).",
    .fix = "",
    .check = hybrid_shard_single_machine::check,
};

namespace hybrid_shard_single_machine {
void check(LintContext& ctx) {
  if (!ctx.is_fsdp() || ctx.fsdp_version() != 1 || ctx.num_machines() != 1) return;
  const auto strategy = ctx.fsdp_enum("fsdp_sharding_strategy");
  if (!strategy || strategy->rfind("HYBRID_SHARD", 0) != 0) return;
  ctx.report(kHybridShardSingleMachine, ctx.doc.value_location(*ctx.fsdp("fsdp_sharding_strategy")),
             fmt::format("{} on one machine (num_machines: 1) has no nodes to replicate across", *strategy),
             fmt::format("use {} on a single machine", *strategy == "HYBRID_SHARD" ? "FULL_SHARD" : "SHARD_GRAD_OP"));
}
}  // namespace hybrid_shard_single_machine

}  // namespace shardcheck::rules
