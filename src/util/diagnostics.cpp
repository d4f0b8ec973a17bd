#include "shardcheck/diagnostics.hpp"

#include <algorithm>
#include <cctype>

namespace shardcheck {

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::note:
      return "note";
    case Severity::warning:
      return "warning";
    case Severity::error:
      return "error";
  }
  return "error";
}

Diagnostic make_diagnostic(std::string_view code, Severity severity, ExitCode exit_code, SourceLocation where,
                           std::string message, std::string help) {
  Diagnostic d;
  d.code = std::string(code);
  d.severity = severity;
  d.location = std::move(where);
  d.message = std::move(message);
  d.help = std::move(help);
  d.exit_code = exit_code;
  return d;
}

SourceLocation setting_location(const std::string& source, const std::string& fallback_file, std::string* note) {
  SourceLocation loc;
  // Sources from the accelerate config are "FILE:LINE" (effective_settings.cpp); a file name may
  // itself hold colons, so only the digits after the last one are the line (at most 9: an int).
  const auto colon = source.rfind(':');
  const bool file_line = colon != std::string::npos && colon + 1 < source.size() && colon + 10 >= source.size() &&
                         std::all_of(source.begin() + static_cast<std::ptrdiff_t>(colon) + 1, source.end(),
                                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
  if (file_line && std::string_view(source).substr(0, colon).ends_with(kFixedConfigSuffix)) {
    loc.file = source.substr(0, colon - kFixedConfigSuffix.size());
    if (note) *note = " (from " + source + ")";
  } else if (file_line) {
    loc.file = source.substr(0, colon);
    loc.line = std::stoi(source.substr(colon + 1));
    loc.column = 1;
  } else {
    loc.file = fallback_file;
    if (note) *note = " (from " + source + ")";
  }
  return loc;
}

void DiagnosticSink::report(Diagnostic d) { items_.push_back(std::move(d)); }

bool DiagnosticSink::has_errors() const { return count(Severity::error) > 0; }

std::size_t DiagnosticSink::count(Severity s) const {
  std::size_t n = 0;
  for (const auto& d : items_) n += d.severity == s;
  return n;
}

ExitCode DiagnosticSink::first_error_exit_code() const {
  for (const auto& d : items_)
    if (d.severity == Severity::error) return d.exit_code;
  return ExitCode::ok;
}

void DiagnosticSink::append(const DiagnosticSink& other) {
  items_.insert(items_.end(), other.items_.begin(), other.items_.end());
}

}  // namespace shardcheck
