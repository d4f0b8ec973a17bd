#include <algorithm>

#include "shardcheck/finding_codes.hpp"

namespace shardcheck {

const FindingCode* find_finding_code(std::string_view id) {
  const auto codes = finding_codes();
  const auto it = std::find_if(codes.begin(), codes.end(), [id](const FindingCode& c) { return id == c.id; });
  return it == codes.end() ? nullptr : &*it;
}

Severity catalogued_severity(std::string_view id) {
  const FindingCode* c = find_finding_code(id);
  return c ? c->severity : Severity::error;
}

Diagnostic finding(std::string_view code, SourceLocation where, std::string message, std::string help) {
  const FindingCode* c = find_finding_code(code);
  return make_diagnostic(code, c ? c->severity : Severity::error, c ? c->exit_code : ExitCode::findings,
                         std::move(where), std::move(message), std::move(help));
}

Diagnostic milder(Diagnostic d, Severity severity) {
  if (severity >= d.severity) return d;
  d.severity = severity;
  if (severity != Severity::error) d.exit_code = ExitCode::ok;
  return d;
}

}  // namespace shardcheck
