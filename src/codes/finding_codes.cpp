#include "shardcheck/finding_codes.hpp"

#include <algorithm>

#include "codes/finding_codes_table.hpp"

namespace shardcheck {
namespace {

// A code of the table. The checks' codes are not looked up by name: a check passes its FindingCode.
const FindingCode* find_table_code(std::string_view id) {
  const auto codes = table_finding_codes();
  const auto it = std::find_if(codes.begin(), codes.end(), [id](const FindingCode& c) { return id == c.id; });
  return it == codes.end() ? nullptr : &*it;
}

// An unknown code: an error exiting with `findings` (the unit tests require every code catalogued).
constexpr FindingCode kUnknownCode{"", Severity::error, ExitCode::findings, "", ""};

const FindingCode& table_code(std::string_view id) {
  const FindingCode* c = find_table_code(id);
  return c ? *c : kUnknownCode;
}

}  // namespace

Severity catalogued_severity(std::string_view id) { return table_code(id).severity; }

Diagnostic finding(std::string_view code, SourceLocation where, std::string message, std::string help) {
  const FindingCode& c = table_code(code);
  return make_diagnostic(code, c.severity, c.exit_code, std::move(where), std::move(message), std::move(help));
}

Diagnostic finding(const FindingCode& code, SourceLocation where, std::string message, std::string help) {
  return make_diagnostic(code.id, code.severity, code.exit_code, std::move(where), std::move(message), std::move(help));
}

namespace {

Diagnostic setting_finding_as(std::string_view id, Severity severity, const std::string& source,
                              const std::string& fallback_file, std::string message, std::string help) {
  const bool flag = source.starts_with("--");
  std::string from;
  const SourceLocation where = flag ? in_file(source) : setting_location(source, fallback_file, &from);
  const ExitCode exit_code = severity != Severity::error ? ExitCode::ok : flag ? ExitCode::usage : ExitCode::findings;
  return make_diagnostic(id, severity, exit_code, where, std::move(message) + from, std::move(help));
}

}  // namespace

Diagnostic setting_finding(std::string_view code, const std::string& source, const std::string& fallback_file,
                           std::string message, std::string help) {
  return setting_finding_as(code, catalogued_severity(code), source, fallback_file, std::move(message),
                            std::move(help));
}

Diagnostic setting_finding(const FindingCode& code, const std::string& source, const std::string& fallback_file,
                           std::string message, std::string help) {
  return setting_finding_as(code.id, code.severity, source, fallback_file, std::move(message), std::move(help));
}

Diagnostic model_setting_finding(std::string_view code, const std::string& source, const std::string& model_config,
                                 std::string message, std::string help) {
  std::string note;
  SourceLocation where = setting_location(source, model_config, &note);
  return finding(code, std::move(where), std::move(message) + note, std::move(help));
}

Diagnostic model_setting_finding(const FindingCode& code, const std::string& source, const std::string& model_config,
                                 std::string message, std::string help) {
  std::string note;
  SourceLocation where = setting_location(source, model_config, &note);
  return finding(code, std::move(where), std::move(message) + note, std::move(help));
}

Diagnostic milder(Diagnostic d, Severity severity) {
  if (severity >= d.severity) return d;
  d.severity = severity;
  if (severity != Severity::error) d.exit_code = ExitCode::ok;
  return d;
}

}  // namespace shardcheck
