// The whole finding-code catalogue (finding_codes.hpp): the table's codes (src/codes/, raised by name
// from the stages below) and every release and plan check's (src/check/, documented in the check's own file). The
// check stage is the lowest that sees both, so the catalogue is assembled here.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "check/plan_check.hpp"
#include "codes/finding_codes_table.hpp"

namespace shardcheck {
namespace {

std::string_view prefix_of(std::string_view id) { return id.substr(0, id.find_first_of("0123456789")); }

int number_of(std::string_view id) { return std::atoi(std::string(id.substr(prefix_of(id).size())).c_str()); }

// Each check's code takes the place it had when every code sat in one table (`shardcheck rules`,
// SARIF and docs/codes.md list them in that order): before the first code of its prefix with a
// larger number, else after the last code of its prefix, else at the end.
void place(std::vector<FindingCode>& codes, const FindingCode& c) {
  const std::string_view prefix = prefix_of(c.id);
  auto at = codes.end();
  for (auto it = codes.begin(); it != codes.end(); ++it) {
    if (prefix_of(it->id) != prefix) continue;
    if (number_of(it->id) > number_of(c.id)) {
      at = it;
      break;
    }
    at = it + 1;
  }
  codes.insert(at, c);
}

std::vector<FindingCode> assemble() {
  const auto table = table_finding_codes();
  std::vector<FindingCode> codes(table.begin(), table.end());
  std::vector<FindingCode> checks;
  for (const ReleaseCheck* check : all_release_checks())
    checks.insert(checks.end(), check->codes.begin(), check->codes.end());
  for (const PlanCheck* check : all_plan_checks())
    checks.insert(checks.end(), check->codes.begin(), check->codes.end());
  std::sort(checks.begin(), checks.end(), [](const FindingCode& a, const FindingCode& b) {
    return std::pair(prefix_of(a.id), number_of(a.id)) < std::pair(prefix_of(b.id), number_of(b.id));
  });
  for (const FindingCode& c : checks) place(codes, c);
  return codes;
}

}  // namespace

std::span<const FindingCode> finding_codes() {
  static const std::vector<FindingCode> kCatalogue = assemble();
  return kCatalogue;
}

const FindingCode* find_finding_code(std::string_view id) {
  const auto codes = finding_codes();
  const auto it = std::find_if(codes.begin(), codes.end(), [id](const FindingCode& c) { return id == c.id; });
  return it == codes.end() ? nullptr : &*it;
}

}  // namespace shardcheck
