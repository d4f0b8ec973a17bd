// `--format sarif`: SARIF 2.1.0 in the shape GitHub code scanning accepts (docs.github.com, "SARIF
// support for code scanning"): tool.driver with rules[], results[] with ruleId, level, message.text,
// a physicalLocation with a repo-relative uri and region, and partialFingerprints.
#include <fmt/format.h>

#include <cctype>
#include <string_view>

#include "report/json_writer.hpp"
#include "report/report_paths.hpp"
#include "shardcheck/finding_codes.hpp"
#include "shardcheck/lint.hpp"
#include "shardcheck/report.hpp"

namespace shardcheck {
namespace {

const char* sarif_level(Severity s) {
  return s == Severity::error ? "error" : s == Severity::warning ? "warning" : "note";
}

// artifactLocation.uri is a URI reference (SARIF §3.4.3, RFC 3986): a path keeps its unreserved
// characters, sub-delimiters, '@' and '/'; anything else (a space, '%', ':', non-ASCII bytes of
// UTF-8) is percent-encoded, so "my config.yaml" becomes "my%20config.yaml". ':' is encoded too,
// so a first segment cannot read as a scheme.
std::string percent_encode_path(const std::string& path) {
  static constexpr std::string_view keep = "-._~!$&'()*+,;=@/";
  std::string out;
  out.reserve(path.size());
  for (const char ch : path) {
    const auto c = static_cast<unsigned char>(ch);
    const bool alnum = (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');  // ASCII, any locale
    if (alnum || keep.find(ch) != std::string_view::npos)
      out += ch;
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

std::string relative_uri(const std::string& file, const std::string& base) {
  return percent_encode_path(report_paths::relative_path(file, base));
}

}  // namespace

std::optional<SarifRule> catalogued_sarif_rule(std::string_view id) {
  SarifRule s;
  s.id = std::string(id);
  bool upper = true;
  for (char c : s.id) {
    if (c == '-') {
      upper = true;
      continue;
    }
    s.name += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  if (const Rule* r = find_rule(id)) {
    s.short_description = r->summary;
    s.full_description = r->explanation;
    s.level = r->severity;
  } else if (const FindingCode* c = find_finding_code(id)) {
    s.short_description = c->summary;
    s.full_description = c->explanation;
    s.level = c->severity;
  } else {
    return std::nullopt;
  }
  s.help_uri = rule_doc_uri(id);
  return s;
}

std::string rule_doc_uri(std::string_view rule_id) {
  const std::string_view base = SHARDCHECK_DOCS_URL;
  if (base.empty() || !find_rule(rule_id)) return {};
  return fmt::format("{}{}{}.md", base, base.ends_with('/') ? "" : "/", rule_id);
}

std::string render_diagnostics_sarif(const std::vector<Diagnostic>& diagnostics, const std::vector<SarifRule>& rules,
                                     const std::string& tool_version, const std::string& uri_base) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("$schema").value("https://json.schemastore.org/sarif-2.1.0.json");
  w.key("version").value("2.1.0");
  w.key("runs").begin_array().begin_object();
  w.key("tool").begin_object().key("driver").begin_object();
  w.key("name").value("shardcheck");
  w.key("version").value(tool_version);
  w.key("semanticVersion").value(tool_version);
  if (std::string_view(SHARDCHECK_DOCS_URL).size()) w.key("informationUri").value(SHARDCHECK_DOCS_URL);
  w.key("rules").begin_array();
  for (const auto& r : rules) {
    w.begin_object();
    w.key("id").value(r.id);
    w.key("name").value(r.name);
    w.key("shortDescription").begin_object().key("text").value(r.short_description).end_object();
    w.key("fullDescription").begin_object().key("text").value(r.full_description).end_object();
    if (!r.help_uri.empty()) w.key("helpUri").value(r.help_uri);
    w.key("help").begin_object().key("text").value(r.full_description).end_object();
    w.key("defaultConfiguration").begin_object().key("level").value(sarif_level(r.level)).end_object();
    w.end_object();
  }
  w.end_array();
  w.end_object().end_object();  // driver, tool
  w.key("results").begin_array();
  for (const auto& d : diagnostics) {
    const std::string uri = relative_uri(d.location.file, uri_base);
    w.begin_object();
    w.key("ruleId").value(d.code);
    for (std::size_t i = 0; i < rules.size(); ++i)
      if (rules[i].id == d.code) w.key("ruleIndex").value(static_cast<std::uint64_t>(i));
    w.key("level").value(sarif_level(d.severity));
    std::string text = d.message;
    if (!d.help.empty()) text += "\nhelp: " + d.help;
    w.key("message").begin_object().key("text").value(text).end_object();
    w.key("locations").begin_array().begin_object();
    w.key("physicalLocation").begin_object();
    w.key("artifactLocation").begin_object().key("uri").value(uri).end_object();
    w.key("region").begin_object();
    w.key("startLine").value(std::max(1, d.location.line));
    w.key("startColumn").value(std::max(1, d.location.column));
    w.key("endColumn").value(std::max(std::max(1, d.location.column) + 1, d.location.end_column));
    w.end_object();
    w.end_object();  // physicalLocation
    if (d.location.model_path) {
      // SARIF §3.33: a logical location for what is not a place in a file (a module of the model).
      w.key("logicalLocations").begin_array().begin_object();
      w.key("fullyQualifiedName").value(module_label(*d.location.model_path));
      w.key("kind").value("module");
      w.end_object().end_array();
    }
    w.end_object().end_array();
    w.key("partialFingerprints")
        .begin_object()
        .key("primaryLocationLineHash")
        .value(report_paths::fingerprint(d, uri) + ":1")
        .end_object();
    w.end_object();
  }
  w.end_array();
  w.end_object().end_array();  // run, runs
  w.end_object();
  out += '\n';
  return out;
}

}  // namespace shardcheck
