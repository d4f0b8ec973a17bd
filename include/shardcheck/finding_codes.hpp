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

// A finding of catalogued `code` at `where`: its severity and exit code are the catalogue's, so a call
// site names the code and says what is wrong, nothing else. (An unknown code is an error exiting with
// `findings`; the unit tests require every reported code to be catalogued.)
Diagnostic finding(std::string_view code, SourceLocation where, std::string message, std::string help = {});

// The same finding in one of the milder cases its stage reports (the catalogue lists the harshest:
// ARCH001 is an error with nothing to lay the model out from, a warning when a checkpoint's tensor
// names can be). Only milder: a harsher `severity` is ignored. A finding that is no longer an error
// exits 0.
Diagnostic milder(Diagnostic d, Severity severity);

}  // namespace shardcheck
