// `--format gitlab`: GitLab's Code Quality report (docs.gitlab.com, "Code Quality": "Implement a
// custom tool"), a JSON array with one object per finding: description, check_name, fingerprint,
// severity (info|minor|major|critical|blocker) and location.path (repository-relative) with
// location.lines.begin. A CI job publishes it as `artifacts: reports: codequality:`; the merge
// request then shows the findings. `type` and `categories` are the Code Climate spec fields GitLab
// passes through.
#include <algorithm>

#include "report/json_writer.hpp"
#include "report/report_paths.hpp"
#include "shardcheck/report.hpp"

namespace shardcheck {
namespace {

// An error fails the job (exit 1): "critical"; a warning: "minor"; a note: "info".
const char* gitlab_severity(Severity s) {
  return s == Severity::error ? "critical" : s == Severity::warning ? "minor" : "info";
}

}  // namespace

std::string render_diagnostics_gitlab(const std::vector<Diagnostic>& diagnostics, const std::string& uri_base) {
  std::string out;
  JsonWriter w(out);
  w.begin_array();
  for (const auto& d : diagnostics) {
    const std::string path = report_paths::relative_path(d.location.file, uri_base);
    std::string description =
        d.location.model_path ? module_label(*d.location.model_path) + ": " + d.message : d.message;
    if (!d.help.empty()) description += " (help: " + d.help + ")";
    w.begin_object();
    w.key("type").value("issue");
    w.key("check_name").value(d.code);
    w.key("description").value(description);
    w.key("categories").begin_array().value("Bug Risk").end_array();
    w.key("severity").value(gitlab_severity(d.severity));
    w.key("fingerprint").value(report_paths::fingerprint(d, path));
    w.key("location").begin_object();
    w.key("path").value(path);
    w.key("lines").begin_object().key("begin").value(std::max(1, d.location.line)).end_object();
    w.end_object();
    w.end_object();
  }
  w.end_array();
  out += '\n';
  return out;
}

}  // namespace shardcheck
