// The finding-code catalogue (src/codes/) against the sources: every code a stage can report is
// documented, and nothing documented is gone. Codes written as string literals are found by a
// scan of src/; ST and IX codes are numbered from enums, documented in those files' code tables.
#include <doctest/doctest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include "shardcheck/finding_codes.hpp"
#include "test_files.hpp"

namespace fs = std::filesystem;
using namespace shardcheck;

namespace {

// Codes the sources can report: "PLAN012"-style literals anywhere in src/ (the catalogue itself
// excluded), and the `//   ST001  ...` rows of the enum-numbered code tables.
std::set<std::string> codes_in_sources() {
  const std::regex literal(R"rx("((?:ST|IX|CFG|IO|REG|ARCH|MT|PLAN|FIT|HUB|SET|PEFT|TRL)[0-9]{3})")rx");
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
