// yaml-limits: hostile or accidental input (alias bombs, deep nesting, huge files) is refused with
// a clear message instead of exhausting memory. Reported by the loader.
#include "shardcheck/lint.hpp"

namespace shardcheck::rules {

extern const Rule kYamlLimits;
const Rule kYamlLimits{
    .id = "yaml-limits",
    .severity = Severity::error,
    .summary = "The input exceeds the size, depth or alias-expansion limits",
    .explanation =
        "Real accelerate configs are a few KiB with at most three levels of nesting. shardcheck refuses files over "
        "1 MiB, nesting deeper than 64 levels, scalars over 64 KiB and documents whose aliases expand to more than "
        "100,000 nodes (the 'billion laughs' pattern), so that linting stays bounded in time and memory. PyYAML "
        "itself would expand such aliases.",
    .fix = "",
    .check = nullptr,
};

}  // namespace shardcheck::rules
