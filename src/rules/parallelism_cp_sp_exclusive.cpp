// parallelism-cp-sp-exclusive: parallelism_config enables both context and sequence parallelism
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace parallelism_cp_sp_exclusive {
void check(LintContext& ctx);
}

extern const Rule kParallelismCpSpExclusive;
const Rule kParallelismCpSpExclusive{
    .id = "parallelism-cp-sp-exclusive",
    .severity = Severity::error,
    .summary = "parallelism_config enables both context and sequence parallelism",
    .explanation =
        "Context parallelism (cp_size) and sequence parallelism (sp_size) split the same sequence dimension in two "
        "different ways, and ParallelismConfig.__post_init__ (accelerate parallelism_config.py, since 1.13.0) refuses "
        "both at once: `ValueError: Context Parallelism (CP) and Sequence Parallelism (SP) are mutually exclusive. Got "
        "cp_size=2 and sp_size=2. Please set either cp_size=1 or sp_size=1.` The Accelerator is never built.",
    .fix = "",
    .check = parallelism_cp_sp_exclusive::check,
};

namespace parallelism_cp_sp_exclusive {
void check(LintContext& ctx) {
  const auto sizes = parallelism_sizes(ctx);
  if (!sizes || ctx.version() < Version{1, 13, 0}) return;
  if (sizes->cp.value <= 1 || sizes->sp.value <= 1) return;
  ctx.report(kParallelismCpSpExclusive, ctx.doc.value_location(*sizes->sp.entry),
             fmt::format("ValueError: Context Parallelism (CP) and Sequence Parallelism (SP) are mutually exclusive. "
                         "Got cp_size={} and sp_size={}.",
                         sizes->cp.value, sizes->sp.value),
             "set either parallelism_config_cp_size or parallelism_config_sp_size to 1");
}
}  // namespace parallelism_cp_sp_exclusive

}  // namespace shardcheck::rules
