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
  Diagnostic d;
  d.code = std::string(rule_id);
  d.severity = rule ? rule->severity : Severity::error;
  d.location = std::move(where);
  d.message = std::move(message);
  d.help = std::move(help);
  d.exit_code = ExitCode::bad_accelerate_config;
  return d;
}

const Rule* find_rule(std::string_view id) {
  for (const Rule* r : all_rules())
    if (id == r->id) return r;
  return nullptr;
}

}  // namespace shardcheck
