// Output formats: text snippets, the JSON contract, SARIF 2.1.0 shape, GitHub annotations.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "lint_test_support.hpp"
#include "shardcheck/report.hpp"

using namespace shardcheck;

namespace {
const std::string kText =
    "distributed_type: FSDP\nnum_processes: 8\nfsdp_config:\n  fsdp_sharding_stratgy: FULL_SHARD\nmixed_precision: "
    "no\n";

std::vector<Diagnostic> diagnostics() { return lint_test::lint_text(kText, lint_test::options(), "configs/a.yaml"); }
}  // namespace

TEST_CASE("lint output: text has file:line:col, severity, [rule], a snippet with a caret, and help") {
  const std::string source = kText;
  SourceLookup lookup = [&](const std::string&) { return &source; };
  const std::string out = render_diagnostics_text(diagnostics(), lookup, TextStyle{false});
  CHECK(out.find("configs/a.yaml:4:3: warning: unknown key `fsdp_sharding_stratgy`") != std::string::npos);
  CHECK(out.find("(did you mean `fsdp_sharding_strategy`?)") != std::string::npos);
  CHECK(out.find("[unknown-nested-key]") != std::string::npos);
  CHECK(out.find("    4 |   fsdp_sharding_stratgy: FULL_SHARD\n      |   ^~~~~~~~~~~~~~~~~~~~~\n") !=
        std::string::npos);
  CHECK(out.find("configs/a.yaml:5:18: error:") != std::string::npos);
  CHECK(out.find("  help: quote it: `mixed_precision: 'no'`") != std::string::npos);
  CHECK(out.find("\x1b[") == std::string::npos);  // no colour unless asked
  CHECK(render_diagnostics_text(diagnostics(), lookup, TextStyle{true}).find("\x1b[") != std::string::npos);
}

TEST_CASE("lint output: JSON contract") {
  const auto j = nlohmann::json::parse(render_diagnostics_json(diagnostics()));
  REQUIRE(j["diagnostics"].is_array());
  REQUIRE(j["diagnostics"].size() == 2);
  for (const auto& d : j["diagnostics"]) {
    for (const char* k : {"rule", "severity", "file", "line", "column", "message", "help", "fix"}) CHECK(d.contains(k));
    CHECK((d["severity"] == "error" || d["severity"] == "warning" || d["severity"] == "note"));
  }
  const auto& yaml11 = j["diagnostics"][1];
  CHECK(yaml11["rule"] == "yaml11-implicit-type");
  REQUIRE(yaml11["fix"].size() == 1);
  CHECK(yaml11["fix"][0]["text"] == "'no'");
}

TEST_CASE("lint output: SARIF 2.1.0 has what GitHub code scanning requires") {
  std::vector<SarifRule> rules;
  for (const Rule* r : all_rules())
    rules.push_back({r->id, r->id, r->summary, r->explanation, std::string("https://x/") + r->id, r->severity});
  const auto j = nlohmann::json::parse(render_diagnostics_sarif(diagnostics(), rules, "0.1.0", ""));
  CHECK(j["version"] == "2.1.0");
  CHECK(j.contains("$schema"));
  REQUIRE(j["runs"].size() == 1);
  const auto& run = j["runs"][0];
  const auto& driver = run["tool"]["driver"];
  for (const char* k : {"name", "version", "rules"}) CHECK(driver.contains(k));
  // informationUri only when the build names where the docs are published (SHARDCHECK_DOCS_URL).
  CHECK(driver.contains("informationUri") == !std::string_view(SHARDCHECK_DOCS_URL).empty());
  CHECK(driver["rules"].size() == all_rules().size());
  for (const auto& r : driver["rules"]) {
    for (const char* k : {"id", "name", "shortDescription", "fullDescription", "helpUri", "defaultConfiguration"})
      CHECK(r.contains(k));
    CHECK(r["shortDescription"]["text"].is_string());
    const auto level = r["defaultConfiguration"]["level"];
    CHECK((level == "error" || level == "warning" || level == "note"));
  }
  REQUIRE(run["results"].size() == 2);
  for (const auto& res : run["results"]) {
    CHECK(res["ruleId"].is_string());
    CHECK(res["message"]["text"].is_string());
    const auto& loc = res["locations"][0]["physicalLocation"];
    CHECK(loc["artifactLocation"]["uri"] == "configs/a.yaml");
    CHECK(loc["region"]["startLine"].get<int>() >= 1);
    CHECK(loc["region"]["startColumn"].get<int>() >= 1);
    CHECK(loc["region"]["endColumn"].get<int>() > loc["region"]["startColumn"].get<int>());
    CHECK(res["partialFingerprints"]["primaryLocationLineHash"].is_string());
    CHECK(driver["rules"][res["ruleIndex"].get<int>()]["id"] == res["ruleId"]);
  }
}

TEST_CASE("lint output: GitHub annotations") {
  const std::string out = render_diagnostics_github(diagnostics());
  CHECK(out.find("::warning file=configs/a.yaml,line=4,col=3,endColumn=24,title=unknown-nested-key::") == 0);
  CHECK(out.find("::error file=configs/a.yaml,line=5,col=18,endColumn=20,title=yaml11-implicit-type::") !=
        std::string::npos);
  CHECK(std::count(out.begin(), out.end(), '\n') == 2);  // one line each: newlines are escaped
}

TEST_CASE("lint output: every rule has an id, summary and an explanation citing upstream") {
  std::set<std::string> ids;
  for (const Rule* r : all_rules()) {
    CAPTURE(r->id);
    CHECK(ids.insert(r->id).second);
    CHECK(std::string(r->summary).size() > 10);
    CHECK(std::string(r->explanation).size() > 150);
    CHECK(find_rule(r->id) == r);
  }
  CHECK(find_rule("no-such-rule") == nullptr);
}

TEST_CASE("rule_doc_uri: a published docs URL only for the linter's own rules") {
  if (std::string_view(SHARDCHECK_DOCS_URL).empty()) {
    CHECK(rule_doc_uri("flattened-fsdp-config").empty());
  } else {
    CHECK(rule_doc_uri("flattened-fsdp-config").ends_with("flattened-fsdp-config.md"));
  }
  CHECK(rule_doc_uri("PLAN001").empty());  // no docs/rules page for plan codes
}

TEST_CASE("env file: NAME=value lines as a shell would assign them, with their line numbers") {
  const std::string text =
      "# stale settings\n"
      "export FSDP_SHARDING_STRATEGY=FULL_SHARD\n"
      "  export\tACCELERATE_USE_FSDP='true'\r\n"
      "FSDP_OFFLOAD_PARAMS=\"false\"\n"
      "\n"
      "FSDP VERSION=2\n"  // not an identifier: a shell would not assign it
      "1FSDP=x\n"         // nor this
      "=no-name\n"
      "exported_FOO=1\n"  // `export` only as a word of its own
      "no equals sign\n"
      "FSDP_EMPTY=";
  const std::vector<EnvVar> vars = parse_env_file(text);
  std::vector<std::string> got;
  for (const EnvVar& v : vars) got.push_back(fmt::format("{}:{}={}", v.line, v.name, v.value));
  CHECK(got == std::vector<std::string>{"2:FSDP_SHARDING_STRATEGY=FULL_SHARD", "3:ACCELERATE_USE_FSDP=true",
                                        "4:FSDP_OFFLOAD_PARAMS=false", "9:exported_FOO=1", "11:FSDP_EMPTY="});
}

TEST_CASE("setting_location: a setting's source as the place a finding points at") {
  std::string note;
  SourceLocation l = setting_location("cfg.yaml:12", "model/config.json", &note);
  CHECK((l.file == "cfg.yaml" && l.line == 12 && l.column == 1 && note.empty()));
  // A file name with a colon: only the digits after the last colon are the line.
  l = setting_location("c:fg.yaml:7", "model/config.json", &note);
  CHECK((l.file == "c:fg.yaml" && l.line == 7 && note.empty()));
  // Lines of shardcheck's fixed text are not lines of the user's file.
  l = setting_location("cfg.yaml (fixed):3", "model/config.json", &note);
  CHECK((l.file == "cfg.yaml" && l.line == 0 && note == " (from cfg.yaml (fixed):3)"));
  // Not a place in a file: the fallback, and the message says where the value came from.
  for (const std::string source :
       {"--frozen", "env FSDP_IGNORED_MODULES", "default", "cfg.yaml:", "cfg.yaml:1234567890"}) {
    note.clear();
    l = setting_location(source, "model/config.json", &note);
    CHECK_MESSAGE((l.file == "model/config.json" && l.line == 0 && note == " (from " + source + ")"), source);
  }
}
