// `--format json` for lint: {"diagnostics": [...]} with the fix as clang-tidy style replacements.
#include "report/json_writer.hpp"
#include "shardcheck/report.hpp"

namespace shardcheck {

// One diagnostic, the same object in every JSON output (lint, check, inspect, plan).
std::string diagnostic_json(const Diagnostic& d) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("rule").value(d.code);
  w.key("severity").value(severity_name(d.severity));
  w.key("file").value(d.location.file);
  w.key("line").value(d.location.line);
  w.key("column").value(d.location.column);
  w.key("end_column").value(d.location.end_column > 0 ? d.location.end_column : d.location.column);
  if (d.location.model_path) w.key("module").value(*d.location.model_path);
  if (d.location.byte_offset) w.key("byte_offset").value(*d.location.byte_offset);
  w.key("message").value(d.message);
  w.key("help").value(d.help);
  w.key("fix").begin_array();
  for (const auto& e : d.fix) {
    w.begin_object();
    w.key("file").value(e.file);
    w.key("offset").value(static_cast<std::uint64_t>(e.offset));
    w.key("length").value(static_cast<std::uint64_t>(e.length));
    w.key("text").value(e.text);
    w.end_object();
  }
  w.end_array();
  w.key("exit_code").value(to_int(d.exit_code));
  w.end_object();
  return out;
}

void write_diagnostics(JsonWriter& w, const std::vector<Diagnostic>& diagnostics) {
  w.key("diagnostics").begin_array();
  for (const auto& d : diagnostics) w.raw(diagnostic_json(d));
  w.end_array();
}

std::string render_diagnostics_json(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  write_diagnostics(w, diagnostics);
  w.end_object();
  out += '\n';
  return out;
}

}  // namespace shardcheck
