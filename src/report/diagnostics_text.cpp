// Compiler-style diagnostics for a terminal or a log. (The linter adds source snippets on top.)
#include <fmt/format.h>

#include "shardcheck/report.hpp"
#include "report/json_writer.hpp"

namespace shardcheck {

std::string render_diagnostics_text(const std::vector<Diagnostic>& diagnostics, const TextStyle& style) {
  std::string out;
  for (const auto& d : diagnostics) {
    std::string where = d.location.file;
    if (d.location.line > 0) where += fmt::format(":{}:{}", d.location.line, d.location.column);
    else if (d.location.byte_offset) where += fmt::format(":@{}", *d.location.byte_offset);
    const char* sev = severity_name(d.severity);
    if (style.color) {
      const char* col = d.severity == Severity::error ? "\x1b[1;31m" : d.severity == Severity::warning ? "\x1b[1;33m" : "\x1b[1;36m";
      out += fmt::format("\x1b[1m{}:\x1b[0m {}{}:\x1b[0m {} [{}]\n", where, col, sev, d.message, d.code);
    } else {
      out += fmt::format("{}: {}: {} [{}]\n", where, sev, d.message, d.code);
    }
    if (!d.help.empty()) out += fmt::format("  help: {}\n", d.help);
  }
  return out;
}

std::string diagnostic_json(const Diagnostic& d) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("rule").value(d.code);
  w.key("severity").value(severity_name(d.severity));
  w.key("file").value(d.location.file);
  w.key("line").value(d.location.line);
  w.key("column").value(d.location.column);
  if (d.location.byte_offset) w.key("byte_offset").value(*d.location.byte_offset);
  w.key("message").value(d.message);
  w.key("help").value(d.help);
  w.key("exit_code").value(to_int(d.exit_code));
  w.end_object();
  return out;
}

}  // namespace shardcheck
