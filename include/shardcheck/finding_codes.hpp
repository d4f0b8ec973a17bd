#pragma once
// The catalogue of finding codes reported by the load, resolve, plan and check stages (ST, IX, CFG,
// IO, REG, ARCH, MT, PLAN, FIT, HUB, ...). Lint rules document themselves (lint.hpp, one file per
// rule), and so do plan checks (src/check/, one file per check with its codes). The codes raised by
// name from inside loaders, resolvers and simulators are documented in one table
// (src/codes/finding_codes_table.cpp). `shardcheck explain CODE` prints a code's text and SARIF's
// tool.driver.rules carries it. Codes are stable: never renumber, only append.

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

// Every code, grouped by stage, in code order within a group: the table's and each plan check's
// (assembled by the check stage, src/check/catalogue.cpp, which sees both).
std::span<const FindingCode> finding_codes();
// nullptr when `id` is not a finding code.
const FindingCode* find_finding_code(std::string_view id);
// The severity of a code of the table (codes raised by name); call sites report by code and do not
// repeat it. An unknown code is an error (the unit tests require every reported code to be catalogued).
Severity catalogued_severity(std::string_view id);

// A finding of catalogued `code` at `where`: its severity and exit code are the catalogue's, so a call
// site names the code and says what is wrong, nothing else. (An unknown code is an error exiting with
// `findings`; the unit tests require every reported code to be catalogued.) By name for the codes of
// the table; a plan check passes its own FindingCode.
Diagnostic finding(std::string_view code, SourceLocation where, std::string message, std::string help = {});
Diagnostic finding(const FindingCode& code, SourceLocation where, std::string message, std::string help = {});

// A finding about what a setting does to this model (a wrap class it lacks, a policy that leaves
// the model in one unit): at the setting's source when that is a line of the accelerate config,
// else at the model's config.json (`model_config`) with " (from SOURCE)" appended. Severity and exit
// code are the catalogue's: `findings` for an error whatever the source, as the model, not the
// command line, is what does not fit.
Diagnostic model_setting_finding(std::string_view code, const std::string& source, const std::string& model_config,
                                 std::string message, std::string help);
Diagnostic model_setting_finding(const FindingCode& code, const std::string& source, const std::string& model_config,
                                 std::string message, std::string help);

// A finding about a setting's value. A command-line flag ("--world-size") is a usage error shown under
// the flag's name (exit 2); a value from the config file or the environment points at its source
// (setting_location, " (from SOURCE)" appended when that has no line) and exits with `findings`.
// Notes and warnings exit 0 either way. Its severity is the catalogue's.
Diagnostic setting_finding(std::string_view code, const std::string& source, const std::string& fallback_file,
                           std::string message, std::string help);
Diagnostic setting_finding(const FindingCode& code, const std::string& source, const std::string& fallback_file,
                           std::string message, std::string help);

// The same finding in one of the milder cases its stage reports (the catalogue lists the harshest:
// ARCH001 is an error with nothing to lay the model out from, a warning when a checkpoint's tensor
// names can be). Only milder: a harsher `severity` is ignored. A finding that is no longer an error
// exits 0.
Diagnostic milder(Diagnostic d, Severity severity);

}  // namespace shardcheck
