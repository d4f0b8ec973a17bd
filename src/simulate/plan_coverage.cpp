// Warnings about a plan that runs but is probably not what was meant: a wrap class whose modules
// hold no parameters (empty units), and a root unit that keeps most of the model (all-gathered
// whole on every rank for the whole step). They read the finished plan, so they live here, after
// simulation, not with the resolution of the wrap classes.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "shardcheck/shard_plan.hpp"

namespace shardcheck {

void check_plan_coverage(const ModuleTree& tree, const FsdpSettings& s, const ShardPlan& plan, DiagnosticSink& sink) {
  if (s.policy.value == WrapPolicyKind::transformer) {
    for (const auto& name : s.wrap_classes.value) {
      bool any = false, with_params = false;
      for (const auto& m : tree.modules)
        if (m.cls == name) {
          any = true;
          with_params = with_params || m.total_numel > 0;
        }
      if (any && !with_params)
        sink.report(model_setting_finding(
            "PLAN013", s.wrap_classes.source, tree.config_path,
            fmt::format("wrap class {} exists in the model but none of its modules has parameters, so "
                        "its units are empty",
                        name),
            fmt::format("wrap the blocks instead: {}", fmt::format("{}", fmt::join(block_classes(tree), ", ")))));
    }
  }
  if (plan.units.empty() || tree.num_params == 0 || plan.shard_group == 1) return;
  for (const auto& u : plan.units)
    if (u.module == 0 && u.numel * 2 > tree.num_params)
      sink.report(model_setting_finding(
          "PLAN014", s.policy.source, tree.config_path,
          fmt::format("the root unit keeps {} of {} parameters ({:.0f}%): those are all-gathered whole "
                      "on every rank for the whole step",
                      u.numel, tree.num_params,
                      100.0 * static_cast<double>(u.numel) / static_cast<double>(tree.num_params)),
          "wrap the repeated blocks (TRANSFORMER_BASED_WRAP with the model's layer class)"));
}

}  // namespace shardcheck
