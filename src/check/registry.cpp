// The check registries: the lists in all_release_checks.def and all_checks.def, one line per check.
#include "check/plan_check.hpp"

namespace shardcheck {
namespace checks {
#define SHARDCHECK_CHECK(name) extern const PlanCheck name;
#include "check/all_checks.def"
#undef SHARDCHECK_CHECK
#define SHARDCHECK_RELEASE_CHECK(name) extern const ReleaseCheck name;
#include "check/all_release_checks.def"
#undef SHARDCHECK_RELEASE_CHECK
}  // namespace checks

const std::vector<const ReleaseCheck*>& all_release_checks() {
  static const std::vector<const ReleaseCheck*> kChecks = {
#define SHARDCHECK_RELEASE_CHECK(name) &checks::name,
#include "check/all_release_checks.def"
#undef SHARDCHECK_RELEASE_CHECK
  };
  return kChecks;
}

void run_release_checks(const ReleaseContext& ctx, DiagnosticSink& sink) {
  for (const ReleaseCheck* check : all_release_checks()) check->run(ctx, sink);
}

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
