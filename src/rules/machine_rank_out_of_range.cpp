// machine-rank-out-of-range: machine_rank outside [0, num_machines).
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace machine_rank_out_of_range {
void check(LintContext& ctx);
}

extern const Rule kMachineRankOutOfRange;
const Rule kMachineRankOutOfRange{
    .id = "machine-rank-out-of-range",
    .severity = Severity::error,
    .summary = "machine_rank is not below num_machines",
    .explanation =
        "machine_rank becomes torchrun's --node_rank (utils/launch.py, v1.14.0), which must lie in [0, nnodes). A rank "
        "equal to or above num_machines makes the rendezvous wait for a node that never joins, or fail.",
    .fix = "",
    .check = machine_rank_out_of_range::check,
};

namespace machine_rank_out_of_range {
void check(LintContext& ctx) {
  const auto rank = ctx.top_int("machine_rank");
  if (!rank) return;
  const std::int64_t machines = ctx.num_machines();
  if (*rank >= 0 && *rank < std::max<std::int64_t>(1, machines)) return;
  ctx.report(kMachineRankOutOfRange, ctx.doc.value_location(*ctx.top("machine_rank")),
             fmt::format("machine_rank {} is outside 0..{} (num_machines {})", *rank,
                         std::max<std::int64_t>(1, machines) - 1, machines),
             "machine ranks count from 0 to num_machines - 1");
}
}  // namespace machine_rank_out_of_range

}  // namespace shardcheck::rules
