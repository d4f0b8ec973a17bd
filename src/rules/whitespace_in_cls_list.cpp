// whitespace-in-cls-list: `LlamaDecoderLayer, LlamaMLP` — the split keeps the space.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace whitespace_in_cls_list {
void check(LintContext& ctx);
}

extern const Rule kWhitespaceInClsList;
const Rule kWhitespaceInClsList{
    .id = "whitespace-in-cls-list",
    .severity = Severity::error,
    .summary = "Spaces or empty items in the comma-separated class list",
    .explanation =
        "The plugin splits FSDP_TRANSFORMER_CLS_TO_WRAP with `str.split(\",\")` and does not strip "
        "(utils/dataclasses.py, v0.34.0 through v1.14.0), then looks each name up with get_module_class_from_name, "
        "which compares `type(module).__name__` exactly. `LlamaDecoderLayer, LlamaMLP` yields ' LlamaMLP', which no "
        "class is called, and wrapping fails with `ValueError: Could not find the transformer layer class  LlamaMLP "
        "in the model.` (accelerate#2872; before v0.34.0 the message has no class name). An empty item (a trailing or "
        "doubled comma) fails the same way.",
    .fix = "remove the spaces and empty items",
    .check = whitespace_in_cls_list::check,
};

namespace whitespace_in_cls_list {
std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

void check(LintContext& ctx) {
  const KeyUse* use = ctx.known("fsdp_config", "fsdp_transformer_layer_cls_to_wrap");
  if (!use || !ctx.value_is_read(*use)) return;  // not split at all, so spaces cannot fail
  const YamlEntry* cls = use->entry;
  if (!cls || !cls->value || !cls->value->is_scalar() || cls->value->scalar().type != YamlType::string) return;
  const std::string& text = cls->value->text;
  std::vector<std::string> raw, clean;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    raw.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::string bad;
  for (const auto& item : raw) {
    const std::string t = trim(item);
    if (t != item && bad.empty()) bad = item;
    if (t.empty()) {
      if (bad.empty()) bad = item;
      continue;
    }
    clean.push_back(t);
  }
  if (bad.empty() && clean.size() == raw.size()) return;
  std::string joined;
  for (const auto& c : clean) joined += (joined.empty() ? "" : ",") + c;
  const YamlNode& v = *cls->value;
  const std::string replacement =
      v.quoted && !v.text.empty() && v.end > v.pos.offset && ctx.doc.text[v.pos.offset] == '"' ? "\"" + joined + "\""
      : v.quoted                                                                               ? single_quoted(joined)
                                                                                               : joined;
  std::vector<TextEdit> fix;
  if (!joined.empty() && v.end > v.pos.offset) fix.push_back(ctx.edit(v.pos.offset, v.end - v.pos.offset, replacement));
  const std::string version_msg =
      ctx.version() >= Version{0, 34, 0}
          ? fmt::format("`ValueError: Could not find the transformer layer class {} in the model.`", bad)
          : "`Exception: Could not find the transformer layer class to wrap in the model.`";
  ctx.report(kWhitespaceInClsList, ctx.doc.value_location(*cls),
             fmt::format("the class list '{}' contains '{}': accelerate splits on ',' without stripping, so FSDP "
                         "wrapping fails with {}",
                         text, bad, version_msg),
             fmt::format("write `{}: {}`", cls->key, joined.empty() ? "<ClassName>" : joined), std::move(fix));
}
}  // namespace whitespace_in_cls_list

}  // namespace shardcheck::rules
