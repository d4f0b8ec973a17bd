#pragma once
// The catalogue of finding codes reported by the load, resolve and plan stages (ST, IX, CFG, IO,
// REG, ARCH, MT, PLAN, FIT, HUB). Lint rules document themselves (lint.hpp, one file per rule);
// these codes are raised from inside loaders and simulators, so their documentation lives in one
// table instead: `shardcheck explain CODE` prints it and SARIF's tool.driver.rules carries it.
// Codes are stable: never renumber, only append.

#include <span>
#include <string_view>

#include "shardcheck/diagnostics.hpp"
#include "shardcheck/exit_codes.hpp"

namespace shardcheck {

struct FindingCode {
  const char* id;           // "ST003"
  Severity severity;        // as reported (the harshest, when the stage chooses per case)
  ExitCode exit_code;       // the process exit code when it is an error
  const char* summary;      // one line: what is wrong (SARIF shortDescription)
  const char* explanation;  // a paragraph: what is checked and why, and the upstream behaviour
                            // it reproduces (file, version)
};

// Every code, grouped by stage, in code order within a group.
std::span<const FindingCode> finding_codes();
// nullptr when `id` is not a finding code.
const FindingCode* find_finding_code(std::string_view id);
// The catalogue's severity of a code; call sites report by code and do not repeat it. An unknown code
// is an error (the unit tests require every reported code to be catalogued).
Severity catalogued_severity(std::string_view id);

}  // namespace shardcheck
