// The check stage's registries (src/check/): every plan and release check's codes are in the catalogue once, and
// only the check's own file names them. A check code raised by name elsewhere would be looked up in
// the table of src/codes/, which does not hold it, and reported as an error whatever its severity.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <string>

#include "check/plan_check.hpp"
#include "test_files.hpp"

namespace fs = std::filesystem;
using namespace shardcheck;

TEST_CASE("plan and release checks: registered once each, with codes the catalogue holds once") {
  std::set<std::string> names, codes;
  for (const PlanCheck* check : all_plan_checks()) {
    INFO(check->name);
    CHECK(names.insert(check->name).second);
    CHECK(static_cast<bool>(check->run));
    CHECK(!check->codes.empty());
    for (const FindingCode& c : check->codes) {
      CHECK(codes.insert(c.id).second);
      const FindingCode* catalogued = find_finding_code(c.id);
      REQUIRE(catalogued != nullptr);
      CHECK(std::string(catalogued->explanation) == c.explanation);
    }
  }
  for (const ReleaseCheck* check : all_release_checks()) {
    INFO(check->name);
    CHECK(names.insert(check->name).second);
    CHECK(static_cast<bool>(check->run));
    for (const FindingCode& c : check->codes) {
      CHECK(codes.insert(c.id).second);
      CHECK(find_finding_code(c.id) != nullptr);
    }
  }
  CHECK(codes.size() >= 18);
}

TEST_CASE("plan checks: a check's codes are named in its own file only") {
  std::set<std::string> check_codes;
  for (const PlanCheck* check : all_plan_checks())
    for (const FindingCode& c : check->codes) check_codes.insert(c.id);
  for (const ReleaseCheck* check : all_release_checks())
    for (const FindingCode& c : check->codes) check_codes.insert(c.id);
  for (const auto& e : fs::recursive_directory_iterator(fs::path(SHARDCHECK_SOURCE_DIR) / "src")) {
    if (!e.is_regular_file() || e.path().parent_path().filename() == "check") continue;
    const std::string text = shardcheck::test::read_file(e.path());
    for (const std::string& code : check_codes)
      CHECK_MESSAGE(text.find('"' + code + '"') == std::string::npos,
                    e.path().string() << " names " << code << ", a plan check's code: raise it from its check");
  }
}
