#include "shardcheck/diagnostics.hpp"

namespace shardcheck {

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::note: return "note";
    case Severity::warning: return "warning";
    case Severity::error: return "error";
  }
  return "error";
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
