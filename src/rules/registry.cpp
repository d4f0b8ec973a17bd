// The rule registry: the list in all_rules.def, one line per rule.
#include <algorithm>

#include "shardcheck/lint.hpp"

namespace shardcheck {
namespace rules {
#define SHARDCHECK_RULE(name) extern const Rule name;
#include "rules/all_rules.def"
#undef SHARDCHECK_RULE
}  // namespace rules

const std::vector<const Rule*>& all_rules() {
  static const std::vector<const Rule*> kRules = {
#define SHARDCHECK_RULE(name) &rules::name,
#include "rules/all_rules.def"
#undef SHARDCHECK_RULE
  };
  return kRules;
}

Diagnostic loader_finding(std::string_view rule_id, SourceLocation where, std::string message, std::string help) {
  const Rule* rule = find_rule(rule_id);
  return make_diagnostic(rule_id, rule ? rule->severity : Severity::error, ExitCode::bad_accelerate_config,
                         std::move(where), std::move(message), std::move(help));
}

const Rule* find_rule(std::string_view id) {
  for (const Rule* r : all_rules())
    if (id == r->id) return r;
  return nullptr;
}

}  // namespace shardcheck
