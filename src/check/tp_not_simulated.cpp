// tp-not-simulated: tensor parallelism whose layout shardcheck cannot lay out (simulate/ says why,
// tp_not_simulated in tensor_parallel.hpp). What shardcheck cannot lay out it says so rather than guess.
#include <fmt/format.h>

#include "check/plan_check.hpp"

namespace shardcheck::checks {
namespace tp_not_simulated {

constexpr FindingCode kCodes[] = {
    {"PLAN015", Severity::warning, ExitCode::ok, "Tensor parallelism is not simulated",
     "With FSDP2 and tp_size above 1, accelerate applies tensor parallelism before fully_shard, so each "
     "parameter FSDP shards is already a TP slice. shardcheck does not model TP plans and says so rather "
     "than guess: the shards shown are over the FSDP ranks of whole parameters, and with TP each rank holds "
     "about 1/tp_size of those elements. Read the per-rank figures with that in mind."},
};
constexpr const FindingCode& kNotSimulated = kCodes[0];

void run(const PlanContext& ctx, DiagnosticSink& sink) {
  if (ctx.tp_not_simulated.empty()) return;
  const FsdpSettings& s = ctx.settings;
  std::string from;
  SourceLocation where = setting_location(s.tp_size.source, ctx.tree.config_path, &from);
  sink.report(finding(kNotSimulated, std::move(where),
                      fmt::format("tensor parallelism (tp_size {}{}) is not simulated: {}; the shards below are "
                                  "over {} ranks of whole parameters, and with TP each rank holds about 1/{} of "
                                  "those elements",
                                  s.tp_size.value, from, ctx.tp_not_simulated, ctx.plan.shard_group, s.tp_size.value)));
}

}  // namespace tp_not_simulated

extern const PlanCheck kTpNotSimulated;
const PlanCheck kTpNotSimulated{
    .name = "tp-not-simulated",
    .codes = tp_not_simulated::kCodes,
    .run = tp_not_simulated::run,
};

}  // namespace shardcheck::checks
