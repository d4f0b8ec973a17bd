#include <algorithm>

#include "shardcheck/finding_codes.hpp"

namespace shardcheck {

const FindingCode* find_finding_code(std::string_view id) {
  const auto codes = finding_codes();
  const auto it = std::find_if(codes.begin(), codes.end(), [id](const FindingCode& c) { return id == c.id; });
  return it == codes.end() ? nullptr : &*it;
}

Severity catalogued_severity(std::string_view id) {
  const FindingCode* c = find_finding_code(id);
  return c ? c->severity : Severity::error;
}

}  // namespace shardcheck
