#pragma once
// Shared helpers for the lint tests: the schema from rules/, and linting a file or a string.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "shardcheck/accelerate_schema.hpp"
#include "shardcheck/config_doc.hpp"
#include "shardcheck/lint.hpp"
#include "test_files.hpp"

namespace lint_test {

inline const shardcheck::AccelerateSchema& schema() {
  static const shardcheck::AccelerateSchema s = [] {
    shardcheck::DiagnosticSink sink;
    auto loaded = shardcheck::AccelerateSchema::load(std::string(SHARDCHECK_SOURCE_DIR) + "/rules", sink);
    if (!loaded) throw std::runtime_error("cannot load rules/accelerate/schema.yaml");
    return *loaded;
  }();
  return s;
}

inline shardcheck::LintOptions options(const char* accelerate = nullptr) {
  shardcheck::LintOptions o;
  o.accelerate = accelerate ? *shardcheck::Version::parse(accelerate) : schema().newest;
  return o;
}

inline std::vector<shardcheck::Diagnostic> lint_text(const std::string& text, const shardcheck::LintOptions& opts,
                                                     const std::string& path = "test.yaml") {
  shardcheck::DiagnosticSink sink;
  if (auto doc = shardcheck::parse_config_doc(text, path, sink)) shardcheck::lint_document(*doc, schema(), opts, sink);
  return sink.items();
}

using shardcheck::test::read_file;

inline bool has_rule(const std::vector<shardcheck::Diagnostic>& ds, const std::string& rule) {
  for (const auto& d : ds)
    if (d.code == rule) return true;
  return false;
}

inline std::size_t count_severity(const std::vector<shardcheck::Diagnostic>& ds, shardcheck::Severity s) {
  std::size_t n = 0;
  for (const auto& d : ds) n += d.severity == s;
  return n;
}

}  // namespace lint_test
