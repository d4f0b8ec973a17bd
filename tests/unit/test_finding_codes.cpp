// The finding-code catalogue (src/codes/) against the sources: every code a stage can report is
// documented, and nothing documented is gone. Codes written as string literals are found by a
// scan of src/; ST and IX codes are numbered from enums, documented in those files' code tables.
#include <doctest/doctest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <vector>
#include <string>

#include "shardcheck/finding_codes.hpp"
#include "test_files.hpp"

namespace fs = std::filesystem;
using namespace shardcheck;

namespace {

// Codes the sources can report: "PLAN012"-style literals anywhere in src/ (the catalogue itself
// excluded), and the `//   ST001  ...` rows of the enum-numbered code tables.
std::set<std::string> codes_in_sources() {
  const std::regex literal(R"rx("((?:ST|IX|CFG|IO|REG|ARCH|MT|PLAN|FIT|HUB|SET|PEFT|TRL|TREE)[0-9]{3})")rx");
  const std::regex table_row(R"rx(\n//\s+((?:ST|IX)[0-9]{3})\s)rx");
  std::set<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(SHARDCHECK_SOURCE_DIR) / "src")) {
    if (!e.is_regular_file() || e.path().parent_path().filename() == "codes") continue;
    const std::string text = shardcheck::test::read_file(e.path());
    for (std::sregex_iterator it(text.begin(), text.end(), literal), end; it != end; ++it) found.insert((*it)[1]);
    const std::string name = e.path().filename().string();
    if (name == "safetensors.cpp" || name == "checkpoint_index.cpp")
      for (std::sregex_iterator it(text.begin(), text.end(), table_row), end; it != end; ++it) found.insert((*it)[1]);
  }
  return found;
}

}  // namespace

TEST_CASE("finding codes: every code in the sources is catalogued, and every catalogued code is used") {
  const std::set<std::string> used = codes_in_sources();
  REQUIRE(used.size() >= 80);  // the scan works: ST001-ST022 and IX001-IX016 alone are 38
  std::set<std::string> catalogued;
  for (const FindingCode& c : finding_codes()) catalogued.insert(c.id);
  for (const std::string& code : used) CHECK_MESSAGE(catalogued.count(code) == 1, code << " is not in src/codes/");
  for (const std::string& code : catalogued)
    CHECK_MESSAGE(used.count(code) == 1, code << " is catalogued but never reported");
}

TEST_CASE("finding codes: unique ids, a one-line summary and a real explanation each") {
  std::set<std::string> ids;
  for (const FindingCode& c : finding_codes()) {
    INFO(c.id);
    CHECK(ids.insert(c.id).second);
    const std::string summary = c.summary, explanation = c.explanation;
    CHECK(!summary.empty());
    CHECK(summary.size() <= 120);
    CHECK(summary.find('\n') == std::string::npos);
    CHECK(!summary.ends_with("."));
    CHECK(explanation.size() >= 80);
    CHECK(find_finding_code(c.id) == &c);
  }
  CHECK(find_finding_code("ST999") == nullptr);
  CHECK(find_finding_code("flattened-fsdp-config") == nullptr);  // a lint rule, documented in src/rules/
}

TEST_CASE("finding codes: a finding that is not an error exits 0") {
  for (const FindingCode& c : finding_codes()) {
    INFO(c.id);
    if (c.severity != Severity::error) CHECK(c.exit_code == ExitCode::ok);
    if (c.severity == Severity::error) CHECK(c.exit_code != ExitCode::ok);
  }
}

TEST_CASE("finding(): severity and exit code come from the catalogue; milder() only lowers") {
  const Diagnostic mt = finding("MT002", in_file("ckpt"), "shape differs", "help");
  CHECK(mt.code == "MT002");
  CHECK(mt.severity == Severity::error);
  CHECK(mt.exit_code == ExitCode::model_mismatch);  // exit 9, as docs/codes.md lists it
  CHECK(mt.location.file == "ckpt");
  CHECK(mt.message == "shape differs");
  CHECK(mt.help == "help");
  const Diagnostic io = finding("IO001", in_file("config.json"), "cannot read");
  CHECK(io.exit_code == ExitCode::io);
  CHECK(io.help.empty());

  // ARCH001 is an error with nothing to infer the layout from, a warning when a checkpoint is there.
  const Diagnostic arch = milder(finding("ARCH001", in_file("config.json"), "unknown"), Severity::warning);
  CHECK(arch.severity == Severity::warning);
  CHECK(arch.exit_code == ExitCode::ok);
  // Never harsher than the catalogue: PEFT009 is a warning.
  const Diagnostic peft = milder(finding("PEFT009", in_file("adapter"), "extra tensors"), Severity::error);
  CHECK(peft.severity == Severity::warning);
  CHECK(peft.exit_code == ExitCode::ok);
}

TEST_CASE("finding codes: no stage writes a finding's severity or exit code by hand") {
  // Only these files build a Diagnostic field by field: the catalogue's constructors (src/codes/), the
  // setting findings whose exit code depends on the source (util/diagnostics.cpp), and the lint
  // rules, which are their own catalogue (src/rules/, each Rule with its severity).
  const std::regex assignment(R"rx(\.(severity|exit_code)\s*=[^=])rx");
  std::vector<std::string> offenders;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(SHARDCHECK_SOURCE_DIR) / "src")) {
    if (!e.is_regular_file()) continue;
    const std::string dir = e.path().parent_path().filename().string();
    if (dir == "codes" || dir == "rules" || dir == "smoke") continue;  // smoke reports results, not findings
    if (e.path().filename() == "diagnostics.cpp") continue;
    std::istringstream lines(shardcheck::test::read_file(e.path()));
    for (std::string line; std::getline(lines, line);)
      if (std::regex_search(line, assignment) && line.find("ctx.exit_code") == std::string::npos)
        offenders.push_back(e.path().string() + ": " + line);
  }
  CHECK_MESSAGE(offenders.empty(), "set by hand in " << offenders.size() << " file(s), first: "
                                                     << (offenders.empty() ? "" : offenders.front()));
}
