#pragma once
// The table of the codes raised by name (finding("CODE", ...)) from the stages below the checks:
// loading above all (ST, IX, CFG, IO, HUB), and the resolve and simulate codes that have not moved to
// a check of their own (src/check/). finding_codes() (src/check/catalogue.cpp) adds the checks' codes.

#include <span>

#include "shardcheck/finding_codes.hpp"

namespace shardcheck {

// In catalogue order: grouped by stage, in code order within a group.
std::span<const FindingCode> table_finding_codes();

}  // namespace shardcheck
