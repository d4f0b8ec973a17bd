// flattened-fsdp-config: FSDP keys written at the top level, typically because the lines under
// `fsdp_config:` lost their indentation (every FSDP option is then silently gone).
#include <fmt/format.h>

#include <algorithm>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace flattened_fsdp_config {
void check(LintContext& ctx);
}

extern const Rule kFlattenedFsdpConfig;
const Rule kFlattenedFsdpConfig{
    .id = "flattened-fsdp-config",
    .severity = Severity::error,
    .summary = "FSDP options sit at the top level instead of under fsdp_config",
    .explanation =
        "accelerate only reads FSDP options from the `fsdp_config` mapping: launch.py::_validate_launch_command copies "
        "each key of `fsdp_config` onto the launcher arguments, and utils/launch.py::prepare_multi_gpu_env exports "
        "them "
        "as FSDP_* variables (v0.34.0 through v1.14.0). When the lines under `fsdp_config:` are not indented, YAML "
        "makes `fsdp_config` empty (null) and every FSDP option a top-level key. load_config_from_file "
        "(commands/config/config_args.py) then rejects the file with `ValueError: The config file at ... had unknown "
        "keys ([...])`; a loader that dropped them instead would run FSDP with every default (FULL_SHARD, NO_WRAP: "
        "the whole model as one unit). The fix indents the keys back under `fsdp_config:` (or moves them there), "
        "keeping their order, values and comments.",
    .fix = "re-nest the keys under `fsdp_config:` (indent by two spaces)",
    .check = flattened_fsdp_config::check,
};

namespace flattened_fsdp_config {

bool blank_or_comment(std::string_view line) {
  const auto p = line.find_first_not_of(" \t");
  return p == std::string_view::npos || line[p] == '#';
}

// Indents every line of [begin, end) by `indent`.
void indent_lines(const LintContext& ctx, std::size_t begin, std::size_t end, const std::string& indent,
                  std::vector<TextEdit>& edits) {
  const int first = ctx.doc.pos_at(begin).line;
  const int last = ctx.doc.pos_at(end > begin ? end - 1 : begin).line;
  for (int l = first; l <= last; ++l) edits.push_back(ctx.edit(line_start(ctx.doc, l), 0, indent));
}

std::string indented_copy(std::string_view text, const std::string& indent) {
  std::string out;
  bool at_line_start = true;
  for (char c : text) {
    if (at_line_start && c != '\n') out += indent;
    out += c;
    at_line_start = c == '\n';
  }
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

struct Plan {
  std::vector<TextEdit> edits;
  std::string block;  // the re-nested block, for the help text
};

Plan plan_fix(const LintContext& ctx, std::vector<const YamlEntry*> flat) {
  Plan plan;
  const ConfigDoc& doc = ctx.doc;
  std::sort(flat.begin(), flat.end(), [](auto a, auto b) { return a->key_pos.offset < b->key_pos.offset; });
  const YamlEntry* fsdp_entry = ctx.top("fsdp_config");
  std::string indent = "  ";
  std::size_t insert_at = 0;
  int walk_from = 0;  // first line that may continue the fsdp_config block
  bool walk = true;

  if (!fsdp_entry) {
    insert_at = line_start(doc, flat.front()->key_pos.line);
    plan.edits.push_back(ctx.edit(insert_at, 0, "fsdp_config:\n"));
    walk_from = flat.front()->key_pos.line;
  } else if (fsdp_entry->value && fsdp_entry->value->is_mapping() && !fsdp_entry->value->entries.empty()) {
    const auto& children = fsdp_entry->value->entries;
    indent = std::string(static_cast<std::size_t>(std::max(1, children.front().key_pos.column - 1)), ' ');
    insert_at = line_start(doc, doc.pos_at(std::max(entry_end(children.back()), std::size_t(1)) - 1).line + 1);
    walk = false;
  } else {
    // `fsdp_config:` with nothing, `~`, `null` or `{}` after the colon: drop the explicit empty value.
    const YamlNode* v = fsdp_entry->value.get();
    if (v && v->end > v->pos.offset && v->pos.line == fsdp_entry->key_pos.line) {
      const std::size_t colon = doc.text.find(':', fsdp_entry->key_end);
      if (colon != std::string::npos && colon < v->pos.offset)
        plan.edits.push_back(ctx.edit(colon + 1, v->end - (colon + 1), ""));
    }
    walk_from = fsdp_entry->key_pos.line + 1;
    insert_at = line_start(doc, walk_from);
  }

  std::vector<const YamlEntry*> moved;
  std::vector<bool> done(flat.size(), false);
  if (walk) {
    // Indent in place the flattened keys that directly follow (blank and comment lines may intervene).
    int line = walk_from;
    const int lines = static_cast<int>(doc.line_starts.size());
    while (line <= lines) {
      if (blank_or_comment(doc.line_text(line))) {
        ++line;
        continue;
      }
      auto it = std::find_if(flat.begin(), flat.end(), [&](auto e) { return e->key_pos.line == line; });
      if (it == flat.end()) break;
      const auto [b, e] = line_span(doc, (*it)->key_pos.offset, entry_end(**it));
      indent_lines(ctx, b, e, indent, plan.edits);
      done[static_cast<std::size_t>(it - flat.begin())] = true;
      insert_at = e;
      line = doc.pos_at(e > 0 ? e - 1 : 0).line + 1;
      if (e >= doc.text.size()) break;
    }
  }
  std::string moved_text;
  for (std::size_t i = 0; i < flat.size(); ++i) {
    const auto [b, e] = line_span(doc, flat[i]->key_pos.offset, entry_end(*flat[i]));
    if (!done[i]) {
      plan.edits.push_back(ctx.edit(b, e - b, ""));
      moved_text += indented_copy(std::string_view(doc.text).substr(b, e - b), indent);
    }
  }
  if (!moved_text.empty()) {
    if (insert_at >= doc.text.size() && !doc.text.empty() && doc.text.back() != '\n') moved_text = "\n" + moved_text;
    plan.edits.push_back(ctx.edit(insert_at, 0, moved_text));
  }
  plan.block = "fsdp_config:\n";
  for (const YamlEntry* e : flat) {
    const auto [b, end] = line_span(doc, e->key_pos.offset, entry_end(*e));
    plan.block += indented_copy(std::string_view(doc.text).substr(b, end - b), indent);
  }
  return plan;
}

void check(LintContext& ctx) {
  const auto& flat = ctx.flattened_fsdp_entries();
  if (flat.empty()) return;
  const YamlEntry* fsdp_entry = ctx.top("fsdp_config");
  std::vector<std::string> names;
  int first_line = flat.front()->key_pos.line, last_line = first_line;
  for (const YamlEntry* e : flat) {
    names.push_back(e->key);
    first_line = std::min(first_line, e->key_pos.line);
    last_line = std::max(last_line, e->key_pos.line);
  }
  const std::string lines =
      first_line == last_line ? fmt::format("line {}", first_line) : fmt::format("lines {}-{}", first_line, last_line);
  const bool empty_block =
      fsdp_entry && !(fsdp_entry->value && fsdp_entry->value->is_mapping() && !fsdp_entry->value->entries.empty());
  std::string message;
  if (empty_block)
    message = fmt::format(
        "`fsdp_config` is empty: the {} FSDP key{} below it ({}) {} not indented, so YAML makes "
        "{} top-level key{}, which accelerate refuses (no FSDP option reaches it)",
        flat.size(), flat.size() == 1 ? "" : "s", lines, flat.size() == 1 ? "is" : "are",
        flat.size() == 1 ? "it a" : "them", flat.size() == 1 ? "" : "s");
  else if (!fsdp_entry)
    message = fmt::format(
        "{} FSDP key{} at the top level ({}) and no `fsdp_config`: accelerate reads FSDP options "
        "only from `fsdp_config` and refuses unknown top-level keys",
        flat.size(), flat.size() == 1 ? "" : "s", lines);
  else
    message = fmt::format(
        "{} FSDP key{} outside `fsdp_config` ({}): accelerate reads FSDP options only from "
        "`fsdp_config` and refuses unknown top-level keys",
        flat.size(), flat.size() == 1 ? "" : "s", lines);
  Plan plan = plan_fix(ctx, flat);
  std::string help = fmt::format(
      "accelerate refuses the file: `ValueError: The config file at {} had unknown keys ({}), please try upgrading "
      "your `accelerate` version or fix (and potentially remove) these keys from your config file.` Nest them:\n{}",
      ctx.doc.path, python_list(names), plan.block);
  while (!help.empty() && help.back() == '\n') help.pop_back();
  const SourceLocation where = fsdp_entry ? ctx.doc.key_location(*fsdp_entry) : ctx.doc.key_location(*flat.front());
  ctx.report(kFlattenedFsdpConfig, where, message, help, std::move(plan.edits));
  for (const YamlEntry* e : flat)
    ctx.report(kFlattenedFsdpConfig, Severity::note, ctx.doc.key_location(*e),
               fmt::format("`{}` belongs under `fsdp_config`", e->key));
}

}  // namespace flattened_fsdp_config

}  // namespace shardcheck::rules
