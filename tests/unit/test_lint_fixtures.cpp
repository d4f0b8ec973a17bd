// Every fixtures/configs/*.yaml with a sidecar .expect: the diagnostics (rule, line:col, severity)
// must be exactly those listed. Header lines: `# accelerate: X`, `# torch: X`, `# env: NAME=VALUE`.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <set>

#include "lint_test_support.hpp"

using namespace shardcheck;
namespace fs = std::filesystem;

namespace {

struct Fixture {
  std::string yaml;
  LintOptions opts;
  std::multiset<std::string> expected;
};

Fixture read_fixture(const fs::path& expect) {
  Fixture f;
  f.yaml = fs::path(expect).replace_extension(".yaml").string();
  f.opts = lint_test::options();
  f.opts.audit_env = true;
  f.opts.env_source = "env";
  std::istringstream in(lint_test::read_file(expect.string()));
  std::string line;
  int env_line = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      const auto colon = line.find(':');
      const std::string key = line.substr(2, colon - 2), value = line.substr(colon + 2);
      if (key == "accelerate")
        f.opts.accelerate = *Version::parse(value);
      else if (key == "torch")
        f.opts.torch = Version::parse(value);
      else if (key == "env") {
        const auto eq = value.find('=');
        f.opts.env.push_back({value.substr(0, eq), value.substr(eq + 1), ++env_line});
      }
      continue;
    }
    f.expected.insert(line);
  }
  return f;
}

std::multiset<std::string> actual(const std::vector<Diagnostic>& ds) {
  std::multiset<std::string> out;
  for (const auto& d : ds)
    out.insert(fmt::format("{} {}{}:{} {}", d.code, d.location.file == "env" ? "env:" : "", d.location.line,
                           d.location.column, severity_name(d.severity)));
  return out;
}

std::vector<fs::path> expect_files() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(std::string(SHARDCHECK_FIXTURES_DIR) + "/configs"))
    if (e.path().extension() == ".expect") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Diagnostic> lint_path(const std::string& path, const LintOptions& opts) {
  DiagnosticSink sink;
  if (auto doc = load_config_doc(path, sink)) lint_document(*doc, lint_test::schema(), opts, sink);
  return sink.items();
}

}  // namespace

TEST_CASE("lint fixtures: diagnostics match the .expect sidecars") {
  const auto files = expect_files();
  CHECK(files.size() >= 100);
  for (const auto& expect : files) {
    const Fixture f = read_fixture(expect);
    CAPTURE(f.yaml);
    CHECK(actual(lint_path(f.yaml, f.opts)) == f.expected);
  }
}

TEST_CASE("lint fixtures: every rule has a positive and a negative fixture") {
  const std::string dir = std::string(SHARDCHECK_FIXTURES_DIR) + "/configs/";
  for (const Rule* r : all_rules()) {
    CAPTURE(r->id);
    const Fixture bad = read_fixture(dir + r->id + ".bad.expect");
    const Fixture good = read_fixture(dir + r->id + ".good.expect");
    CHECK(std::any_of(bad.expected.begin(), bad.expected.end(),
                      [&](const std::string& l) { return l.rfind(std::string(r->id) + " ", 0) == 0; }));
    CHECK(std::none_of(good.expected.begin(), good.expected.end(),
                       [&](const std::string& l) { return l.rfind(std::string(r->id) + " ", 0) == 0; }));
  }
}

TEST_CASE("lint fixtures: --fix removes every fixable problem and is idempotent") {
  for (const auto& expect : expect_files()) {
    const Fixture f = read_fixture(expect);
    CAPTURE(f.yaml);
    const std::string before = lint_test::read_file(f.yaml);
    DiagnosticSink probe;
    if (!parse_config_doc(before, f.yaml, probe)) continue;  // unparsable fixtures have nothing to fix
    const std::string once = fix_to_fixpoint(before, f.yaml, lint_test::schema(), f.opts);
    const std::string twice = fix_to_fixpoint(once, f.yaml, lint_test::schema(), f.opts);
    CHECK(once == twice);
    const auto after = lint_test::lint_text(once, f.opts, f.yaml);
    for (const auto& d : after) {
      CAPTURE(d.code);
      CHECK(d.fix.empty());
    }
    if (once != before) {
      // A fix never makes things worse.
      CHECK(lint_test::count_severity(after, Severity::error) <=
            lint_test::count_severity(lint_test::lint_text(before, f.opts, f.yaml), Severity::error));
    }
  }
}

TEST_CASE("lint fixtures: the seed's flattened config is re-nested and then lints clean") {
  const std::string path = std::string(SHARDCHECK_FIXTURES_DIR) + "/configs/seed_000_flattened_fsdp_config.yaml";
  const std::string text = lint_test::read_file(path);
  for (const char* version : {"0.34.0", "1.14.0"}) {
    CAPTURE(version);
    const auto opts = lint_test::options(version);
    const auto before = lint_test::lint_text(text, opts, path);
    REQUIRE(!before.empty());
    CHECK(before[0].code == "flattened-fsdp-config");
    CHECK(before[0].severity == Severity::error);
    CHECK(before[0].location.line == 6);  // fsdp_config:
    CHECK(before[0].message.find("lines 7-17") != std::string::npos);
    CHECK(before[0].help.find("  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer") != std::string::npos);
    CHECK_FALSE(lint_test::has_rule(before, "unknown-top-level-key"));  // one finding, not eleven
    const std::string fixed = fix_to_fixpoint(text, path, lint_test::schema(), opts);
    CHECK(fixed.find("fsdp_config:\n  fsdp_activation_checkpointing: false\n") != std::string::npos);
    CHECK(fixed.find("\n  fsdp_use_orig_params: true\nmachine_rank: 0\n") != std::string::npos);
    CHECK(lint_test::lint_text(fixed, opts, path).empty());
    CHECK(fix_to_fixpoint(fixed, path, lint_test::schema(), opts) == fixed);
  }
}

TEST_CASE("lint fixtures: flattened keys without fsdp_config, and in a flow {} block, are re-nested") {
  const std::string dir = std::string(SHARDCHECK_FIXTURES_DIR) + "/configs/";
  for (const char* name : {"flattened-fsdp-config.absent.bad.yaml", "flattened-fsdp-config.flow.bad.yaml",
                           "flattened-fsdp-config.partial.bad.yaml", "flattened-fsdp-config.bad.yaml"}) {
    CAPTURE(name);
    const auto opts = lint_test::options();
    const std::string fixed = fix_to_fixpoint(lint_test::read_file(dir + name), dir + name, lint_test::schema(), opts);
    CHECK_FALSE(lint_test::has_rule(lint_test::lint_text(fixed, opts), "flattened-fsdp-config"));
    CHECK(lint_test::count_severity(lint_test::lint_text(fixed, opts), Severity::error) == 0);
  }
}
