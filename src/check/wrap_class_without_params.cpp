// wrap-class-without-params: a TRANSFORMER_BASED_WRAP class whose modules hold no parameters, so its
// units are empty. It reads the finished plan's settings and tree, so it runs after simulation, not
// with the resolution of the wrap classes.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "check/plan_check.hpp"

namespace shardcheck::checks {
namespace wrap_class_without_params {

constexpr FindingCode kCodes[] = {
    {"PLAN013", Severity::warning, ExitCode::ok, "A wrap class exists but none of its modules has parameters",
     "The class named for TRANSFORMER_BASED_WRAP is in the model, but none of its modules holds parameters, "
     "so each becomes an empty FSDP unit and the parameters stay in the enclosing unit. The job runs, but "
     "sharding and memory are not what the wrap list suggests. Wrap the model's repeated blocks instead."},
};
constexpr const FindingCode& kEmptyWrapClass = kCodes[0];

void run(const PlanContext& ctx, DiagnosticSink& sink) {
  if (ctx.wrap_failed) return;
  const ModuleTree& tree = ctx.tree;
  const FsdpSettings& s = ctx.settings;
  if (s.policy.value != WrapPolicyKind::transformer) return;
  for (const auto& name : s.wrap_classes.value) {
    bool any = false, with_params = false;
    for (const auto& m : tree.modules)
      if (m.cls == name) {
        any = true;
        with_params = with_params || m.total_numel > 0;
      }
    if (any && !with_params)
      sink.report(model_setting_finding(
          kEmptyWrapClass, s.wrap_classes.source, tree.config_path,
          fmt::format("wrap class {} exists in the model but none of its modules has parameters, so "
                      "its units are empty",
                      name),
          fmt::format("wrap the blocks instead: {}", fmt::format("{}", fmt::join(block_classes(tree), ", ")))));
  }
}

}  // namespace wrap_class_without_params

extern const PlanCheck kWrapClassWithoutParams;
const PlanCheck kWrapClassWithoutParams{
    .name = "wrap-class-without-params",
    .codes = wrap_class_without_params::kCodes,
    .run = wrap_class_without_params::run,
};

}  // namespace shardcheck::checks
