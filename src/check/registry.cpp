// The plan-check registry: the list in all_checks.def, one line per check.
#include "check/plan_check.hpp"

namespace shardcheck {
namespace checks {
#define SHARDCHECK_CHECK(name) extern const PlanCheck name;
#include "check/all_checks.def"
#undef SHARDCHECK_CHECK
}  // namespace checks

const std::vector<const PlanCheck*>& all_plan_checks() {
  static const std::vector<const PlanCheck*> kChecks = {
#define SHARDCHECK_CHECK(name) &checks::name,
#include "check/all_checks.def"
#undef SHARDCHECK_CHECK
  };
  return kChecks;
}

void run_plan_checks(const PlanContext& ctx, DiagnosticSink& sink) {
  for (const PlanCheck* check : all_plan_checks()) check->run(ctx, sink);
}

}  // namespace shardcheck
