// root-unit-keeps-most: a root FSDP unit that keeps most of the model, all-gathered whole on every rank
// for the whole step. The plan runs; it is probably not what was meant.
#include <fmt/format.h>

#include "check/plan_check.hpp"

namespace shardcheck::checks {
namespace root_unit_keeps_most {

constexpr FindingCode kCodes[] = {
    {"PLAN014", Severity::warning, ExitCode::ok, "The root unit keeps more than half of the parameters",
     "More than half of the model's parameters are left in the root FSDP unit (no wrap policy, or one that "
     "misses the blocks), and those are all-gathered whole on every rank for the whole step, so peak memory "
     "approaches that of an unsharded model. It is not reported when the shard group is a single rank. Wrap "
     "the repeated blocks (TRANSFORMER_BASED_WRAP with the model's layer class)."},
};
constexpr const FindingCode& kRootKeepsMost = kCodes[0];

void run(const PlanContext& ctx, DiagnosticSink& sink) {
  const ModuleTree& tree = ctx.tree;
  const ShardPlan& plan = ctx.plan;
  if (ctx.wrap_failed || plan.units.empty() || tree.num_params == 0 || plan.shard_group == 1) return;
  for (const auto& u : plan.units)
    if (u.module == 0 && u.numel * 2 > tree.num_params)
      sink.report(model_setting_finding(
          kRootKeepsMost, ctx.settings.policy.source, tree.config_path,
          fmt::format("the root unit keeps {} of {} parameters ({:.0f}%): those are all-gathered whole "
                      "on every rank for the whole step",
                      u.numel, tree.num_params,
                      100.0 * static_cast<double>(u.numel) / static_cast<double>(tree.num_params)),
          "wrap the repeated blocks (TRANSFORMER_BASED_WRAP with the model's layer class)"));
}

}  // namespace root_unit_keeps_most

extern const PlanCheck kRootUnitKeepsMost;
const PlanCheck kRootUnitKeepsMost{
    .name = "root-unit-keeps-most",
    .codes = root_unit_keeps_most::kCodes,
    .run = root_unit_keeps_most::run,
};

}  // namespace shardcheck::checks
