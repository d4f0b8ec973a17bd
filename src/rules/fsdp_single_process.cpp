// fsdp-single-process: FSDP with one process shards nothing.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace fsdp_single_process {
void check(LintContext& ctx);
}

extern const Rule kFsdpSingleProcess;
const Rule kFsdpSingleProcess{
    .id = "fsdp-single-process",
    .severity = Severity::warning,
    .summary = "FSDP with a single process",
    .explanation =
        "With num_processes 1 the FSDP world has one rank: every parameter, gradient and optimizer state stays whole "
        "on "
        "that GPU, so FSDP adds wrapping and communication overhead but saves no memory. Test configs do this on "
        "purpose (accelerate's tests/test_configs/latest_fsdp.yaml); in a training config it usually means "
        "num_processes was not updated for the machine.",
    .fix = "",
    .check = fsdp_single_process::check,
};

namespace fsdp_single_process {
void check(LintContext& ctx) {
  if (!ctx.is_fsdp() || ctx.top_int("num_processes") != std::optional<std::int64_t>(1)) return;
  ctx.report(kFsdpSingleProcess, ctx.doc.value_location(*ctx.top("num_processes")),
             "FSDP with `num_processes: 1` shards nothing: the whole model stays on one GPU",
             "set num_processes to the number of GPUs (or pass --num_processes at launch)");
}
}  // namespace fsdp_single_process

}  // namespace shardcheck::rules
