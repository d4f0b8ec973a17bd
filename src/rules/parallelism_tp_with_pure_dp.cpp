// parallelism-tp-with-pure-dp: tensor or context parallelism over replicas with a dp_shard of 1
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace parallelism_tp_with_pure_dp {
void check(LintContext& ctx);
}

extern const Rule kParallelismTpWithPureDp;
const Rule kParallelismTpWithPureDp{
    .id = "parallelism-tp-with-pure-dp",
    .severity = Severity::error,
    .summary = "Tensor or context parallelism over replicas with a dp_shard of 1",
    .explanation =
        "accelerate composes tensor or context parallelism with FSDP (dp_shard) or HSDP (dp_replicate x dp_shard), "
        "never with plain replicas: ParallelismConfig.__post_init__ (accelerate parallelism_config.py, since 1.10.0) "
        "raises `ValueError: Tensor/Context parallelism (tp/cp_size > 1) cannot be used with pure data parallelism "
        "(dp_replicate_size > 1 and dp_shard_size == 1).` Move the replicas to dp_shard_size (FSDP + TP/CP), or keep "
        "dp_replicate_size and give dp_shard_size at least 2 (HSDP + TP/CP).",
    .fix = "",
    .check = parallelism_tp_with_pure_dp::check,
};

namespace parallelism_tp_with_pure_dp {
void check(LintContext& ctx) {
  const auto sizes = parallelism_sizes(ctx);
  if (!sizes || ctx.version() < Version{1, 10, 0}) return;
  if (sizes->tp.value <= 1 && sizes->cp.value <= 1) return;
  if (sizes->dp_replicate.value <= 1 || sizes->dp_shard.value != 1) return;
  const ParallelismSize& split = sizes->tp.value > 1 ? sizes->tp : sizes->cp;
  ctx.report(kParallelismTpWithPureDp, ctx.doc.value_location(*split.entry),
             fmt::format("ValueError: Tensor/Context parallelism (tp/cp_size > 1) cannot be used with pure data "
                         "parallelism (dp_replicate_size > 1 and dp_shard_size == 1): dp_replicate_size is {}",
                         sizes->dp_replicate.value),
             "set parallelism_config_dp_shard_size to the replica count and dp_replicate_size to 1 (FSDP + TP/CP), "
             "or give dp_shard_size at least 2 (HSDP + TP/CP)");
}
}  // namespace parallelism_tp_with_pure_dp

}  // namespace shardcheck::rules
