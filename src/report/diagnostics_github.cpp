// `--format github`: GitHub Actions workflow commands, one annotation per diagnostic.
// Property values escape % \r \n : , and the message escapes % \r \n (actions/toolkit command.ts).
#include <fmt/format.h>

#include "shardcheck/report.hpp"

namespace shardcheck {
namespace {

std::string escape_data(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '%')
      out += "%25";
    else if (c == '\r')
      out += "%0D";
    else if (c == '\n')
      out += "%0A";
    else
      out += c;
  }
  return out;
}

std::string escape_property(std::string_view s) {
  std::string out;
  for (char c : escape_data(s)) {
    if (c == ':')
      out += "%3A";
    else if (c == ',')
      out += "%2C";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string render_diagnostics_github(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const auto& d : diagnostics) {
    const char* level = d.severity == Severity::error     ? "error"
                        : d.severity == Severity::warning ? "warning"
                                                          : "notice";
    std::string props = "file=" + escape_property(d.location.file);
    if (d.location.line > 0) {
      props += fmt::format(",line={},col={}", d.location.line, d.location.column);
      if (d.location.end_column > d.location.column) props += fmt::format(",endColumn={}", d.location.end_column);
    }
    props += ",title=" + escape_property(d.code);
    std::string message = d.location.model_path ? module_label(*d.location.model_path) + ": " + d.message : d.message;
    if (!d.help.empty()) message += "\nhelp: " + d.help;
    out += fmt::format("::{} {}::{}\n", level, props, escape_data(message));
  }
  return out;
}

}  // namespace shardcheck
