// processes-not-divisible: num_processes that does not split evenly over num_machines.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace processes_not_divisible {
void check(LintContext& ctx);
}

extern const Rule kProcessesNotDivisible;
const Rule kProcessesNotDivisible{
    .id = "processes-not-divisible",
    .severity = Severity::error,
    .summary = "num_processes is not a multiple of num_machines",
    .explanation =
        "utils/launch.py (v0.34.0 and v1.14.0) computes `nproc_per_node = num_processes // num_machines` with integer "
        "division and no check, then starts torchrun with nnodes=num_machines. If the division is not exact the job "
        "starts fewer processes than num_processes says, and every size computed from num_processes (batch size per "
        "rank, parallelism sizes) is wrong.",
    .fix = "",
    .check = processes_not_divisible::check,
};

namespace processes_not_divisible {
void check(LintContext& ctx) {
  const auto n = ctx.top_int("num_processes");
  const auto m = ctx.top_int("num_machines");
  if (!n || !m || *m <= 1 || *n <= 0 || *n % *m == 0) return;
  ctx.report(kProcessesNotDivisible, ctx.doc.value_location(*ctx.top("num_processes")),
             fmt::format("num_processes {} is not a multiple of num_machines {}: accelerate starts {} // {} = {} "
                         "processes per machine, {} in all",
                         *n, *m, *n, *m, *n / *m, (*n / *m) * *m),
             fmt::format("num_processes counts all GPUs on all machines: e.g. {}", ((*n + *m - 1) / *m) * *m));
}
}  // namespace processes_not_divisible

}  // namespace shardcheck::rules
