#include "rules/rule_util.hpp"

#include <algorithm>
#include <cctype>
#include "shardcheck/text.hpp"

namespace shardcheck::rules {

std::string quoted_list(const std::vector<std::string>& items, std::string_view last_sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? fmt::format(" {} ", last_sep) : ", ";
    out += "`" + items[i] + "`";
  }
  return out;
}

std::string python_list(std::vector<std::string> items) {
  std::sort(items.begin(), items.end());
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", '" : "'") + items[i] + "'";
  return out + "]";
}

std::size_t line_start(const ConfigDoc& doc, int line) {
  if (line < 1) return 0;
  if (line > static_cast<int>(doc.line_starts.size())) return doc.text.size();
  return doc.line_starts[line - 1];
}

std::pair<std::size_t, std::size_t> line_span(const ConfigDoc& doc, std::size_t start, std::size_t end) {
  const TextPos s = doc.pos_at(start);
  const TextPos e = doc.pos_at(std::max(start, end == 0 ? start : end - 1));
  return {line_start(doc, s.line), line_start(doc, e.line + 1)};
}

std::size_t entry_end(const YamlEntry& e) {
  if (e.value && e.value->end) return e.value->end;
  return e.key_end;
}

std::string single_quoted(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

}  // namespace shardcheck::rules

namespace shardcheck::rules {

SourceLocation env_location(const LintContext& ctx, const EnvVar& var, const YamlEntry* related) {
  if (!ctx.opts.env_source.empty()) {
    SourceLocation loc;
    loc.file = ctx.opts.env_source;
    loc.line = var.line;
    loc.column = 1;
    loc.end_column = static_cast<int>(var.name.size()) + 1;
    return loc;
  }
  if (related) return ctx.doc.key_location(*related);
  return ctx.file_location();
}

bool env_truthy(const std::string& value) { return accelerate_str_to_bool(value).value_or(false); }

std::optional<ParallelismSizes> parallelism_sizes(const LintContext& ctx) {
  const YamlNode* m = ctx.section_map("parallelism_config");
  if (!m) return std::nullopt;
  ParallelismSizes out;
  for (auto [dim, size] : {std::pair{"dp_replicate", &out.dp_replicate}, std::pair{"dp_shard", &out.dp_shard},
                           std::pair{"tp", &out.tp}, std::pair{"cp", &out.cp}, std::pair{"sp", &out.sp}}) {
    const YamlEntry* e = m->find(fmt::format("parallelism_config_{}_size", dim));
    if (!e || !e->value) continue;
    if (!e->value->is_scalar() || e->value->scalar().type != YamlType::integer) return std::nullopt;
    size->value = e->value->scalar().integer;
    size->entry = e;
  }
  return out;
}

}  // namespace shardcheck::rules
