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
  Diagnostic d;
  d.code = std::string(code);
  d.severity = c ? c->severity : Severity::error;
  d.location = std::move(where);
  d.message = std::move(message);
  d.help = std::move(help);
  d.exit_code = c ? c->exit_code : ExitCode::findings;
  return d;
}

Diagnostic milder(Diagnostic d, Severity severity) {
  if (severity >= d.severity) return d;
  d.severity = severity;
  if (severity != Severity::error) d.exit_code = ExitCode::ok;
  return d;
}

}  // namespace shardcheck
