// LintContext: the parsed file plus what accelerate derives from it, shared by every rule.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "rules/rule_util.hpp"
#include "shardcheck/lint.hpp"
#include "shardcheck/text.hpp"

namespace shardcheck {
namespace {

bool is_last_occurrence(const YamlNode& map, const YamlEntry& e) { return map.find(e.key) == &e; }

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) == std::toupper(static_cast<unsigned char>(y));
         });
}

std::string python_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  const double a = std::fabs(v);
  if (v == std::floor(v) && a < 1e16) return fmt::format("{:.1f}", v);
  return fmt::format("{}", v);
}

}  // namespace

std::string python_str(const YamlNode& value) {
  switch (value.kind) {
    case YamlNode::Kind::null:
      return "None";
    case YamlNode::Kind::sequence:
      return "[...]";
    case YamlNode::Kind::mapping:
      return "{...}";
    case YamlNode::Kind::scalar:
      break;
  }
  const YamlScalar s = value.scalar();
  switch (s.type) {
    case YamlType::null:
      return "None";
    case YamlType::boolean:
      return s.boolean ? "True" : "False";
    case YamlType::integer:
      return std::to_string(s.integer);
    case YamlType::floating:
      return python_float(s.floating);
    case YamlType::string:
      return value.text;
  }
  return value.text;
}

EnumMatch match_enum(const KeySpec& spec, const YamlNode& value, const Version& v) {
  EnumMatch m;
  if (!value.is_scalar()) return m;
  const YamlScalar s = value.scalar();
  if (s.type == YamlType::boolean || s.type == YamlType::null || s.type == YamlType::floating) return m;
  const std::string text = python_str(value);
  const auto names = spec.value_names(v);
  if (spec.integer_forms && s.type == YamlType::integer) {
    if (s.integer >= 1 && s.integer <= static_cast<std::int64_t>(spec.values.size())) {
      m.matched = true;
      m.integer_form = true;
      m.canonical = spec.values[static_cast<std::size_t>(s.integer - 1)].value;
    }
    return m;
  }
  if (spec.integer_forms && !text.empty() && std::all_of(text.begin(), text.end(), ::isdigit) && text.size() < 3) {
    const int i = std::stoi(text);
    if (i >= 1 && i <= static_cast<int>(spec.values.size())) {
      m.matched = true;
      m.integer_form = true;
      m.canonical = spec.values[static_cast<std::size_t>(i - 1)].value;
    }
    return m;
  }
  for (const auto& name : names) {
    if (spec.case_sensitive ? text == name : iequals(text, name)) {
      m.matched = true;
      m.canonical = name;
      m.exact = text == name;
      return m;
    }
  }
  return m;
}

LintContext::LintContext(const ConfigDoc& d, const AccelerateSchema& s, const LintOptions& o, DiagnosticSink& sink)
    : doc(d), schema(s), opts(o), sink_(sink) {
  const YamlNode& r = root();
  if (!r.is_mapping()) return;
  for (const auto& e : r.entries) {
    if (!is_last_occurrence(r, e)) continue;
    if (const KeySpec* k = schema.top.find(e.key)) known_.push_back({&schema.top, k, &e});
  }
  for (const auto& [name, section] : schema.sections) {
    const YamlNode* m = section_map(name);
    if (!m) continue;
    for (const auto& e : m->entries) {
      if (!is_last_occurrence(*m, e)) continue;
      if (const KeySpec* k = section.find(e.key)) known_.push_back({&section, k, &e});
    }
  }
  // FSDP keys at the top level: `fsdp_*` keys that are not top-level fields, or any spelling of an
  // FSDP key when the file has an empty `fsdp_config:` (the seed's lost indentation).
  const SectionSpec* fsdp_section = schema.section("fsdp_config");
  const YamlEntry* fsdp_entry = top("fsdp_config");
  const bool fsdp_empty = fsdp_entry && (!fsdp_entry->value || fsdp_entry->value->is_null() ||
                                         (fsdp_entry->value->is_mapping() && fsdp_entry->value->entries.empty()));
  if (fsdp_section) {
    for (const auto& e : r.entries) {
      if (schema.top.find(e.key) || !fsdp_section->find(e.key)) continue;
      if (e.key.rfind("fsdp_", 0) == 0 || fsdp_empty) flattened_.push_back(&e);
    }
  }
}

const YamlEntry* LintContext::top(std::string_view key) const {
  return root().is_mapping() ? root().find(key) : nullptr;
}

const YamlNode* LintContext::section_map(std::string_view section) const {
  const YamlEntry* e = top(section);
  return e && e->value && e->value->is_mapping() ? e->value.get() : nullptr;
}

const YamlEntry* LintContext::fsdp(std::string_view canonical) const {
  const YamlNode* m = section_map("fsdp_config");
  const SectionSpec* s = schema.section("fsdp_config");
  if (!m || !s) return nullptr;
  const YamlEntry* found = nullptr;
  for (const auto& e : m->entries)
    if (s->canonical(e.key) == canonical) found = &e;  // last spelling wins, as in launch.py's loop
  return found;
}

const KeyUse* LintContext::known(std::string_view section, std::string_view canonical) const {
  const KeyUse* found = nullptr;
  for (const KeyUse& use : known_)  // the last spelling wins, as in launch.py's loop (see fsdp())
    if (use.section->name == section && use.spec->name == canonical) found = &use;
  return found;
}

std::optional<std::string> LintContext::unread_reason(const KeyUse& use) const {
  const KeySpec& k = *use.spec;
  const Version& v = version();
  if (!k.exists_in(v)) return fmt::format("accelerate {} does not have `{}`", v.str(), k.name);
  if (k.ignored_from && v >= *k.ignored_from)
    return fmt::format("accelerate {} ignores `{}` (renamed to `{}`)", v.str(), k.name, k.renamed_to);
  if (k.read_when_key.empty()) return std::nullopt;
  // The condition key as the plugin sees it: written (canonical enum name) or its default. A written
  // but invalid value makes the plugin raise before it reaches this key, so the key is unread too.
  const KeySpec* cond = use.section->find(k.read_when_key);
  const KeyUse* written = known(use.section->name, k.read_when_key);
  std::string effective = cond ? cond->default_value : std::string();
  if (written && written->entry->value && !written->entry->value->is_null()) {
    const EnumMatch m = match_enum(*cond, *written->entry->value, v);
    if (!m.matched)
      return fmt::format("`{}` is not a valid value, so accelerate stops before reading it", k.read_when_key);
    effective = m.canonical;
  }
  if (effective == k.read_when_value) return std::nullopt;
  return fmt::format("accelerate reads it only when `{}` is {}, and it is {}{}", k.read_when_key, k.read_when_value,
                     effective, written ? "" : " (the default)");
}

std::string LintContext::distributed_type() const {
  const YamlEntry* e = top("distributed_type");
  if (!e || !e->value || !e->value->is_scalar() || e->value->scalar().type != YamlType::string) return {};
  return e->value->text;
}

int LintContext::fsdp_version() const {
  const YamlEntry* e = fsdp("fsdp_version");
  const KeySpec* k = schema.fsdp_key("fsdp_version");
  if (!e || !e->value || (k && !k->exists_in(version()))) return 1;
  return python_str(*e->value) == "2" ? 2 : 1;
}

std::optional<std::string> LintContext::fsdp_enum(std::string_view canonical) const {
  const YamlEntry* e = fsdp(canonical);
  const KeySpec* k = schema.fsdp_key(canonical);
  if (!e || !e->value || !k) return std::nullopt;
  EnumMatch m = match_enum(*k, *e->value, version());
  if (!m.matched) return std::nullopt;
  return m.canonical;
}

std::optional<std::int64_t> LintContext::top_int(std::string_view key) const {
  const YamlEntry* e = top(key);
  if (!e || !e->value || !e->value->is_scalar()) return std::nullopt;
  const YamlScalar s = e->value->scalar();
  if (s.type != YamlType::integer) return std::nullopt;
  return s.integer;
}

std::optional<bool> LintContext::fsdp_bool(std::string_view canonical) const {
  const YamlEntry* e = fsdp(canonical);
  if (!e || !e->value || !e->value->is_scalar()) return std::nullopt;
  // accelerate's str_to_bool (utils/environment.py) on str(value).lower()
  return accelerate_str_to_bool(python_str(*e->value));
}

bool LintContext::is_flattened(const YamlEntry* e) const {
  return std::find(flattened_.begin(), flattened_.end(), e) != flattened_.end();
}

Diagnostic& LintContext::report(const Rule& rule, SourceLocation where, std::string message, std::string help,
                                std::vector<TextEdit> fix) {
  return report(rule, rule.severity, std::move(where), std::move(message), std::move(help), std::move(fix));
}

Diagnostic& LintContext::report(const Rule& rule, Severity severity, SourceLocation where, std::string message,
                                std::string help, std::vector<TextEdit> fix) {
  // A rule's finding may be milder than the rule's severity, never harsher (lint.hpp).
  if (severity > rule.severity) severity = rule.severity;
  Diagnostic d = make_diagnostic(rule.id, severity, severity == Severity::error ? ExitCode::findings : ExitCode::ok,
                                 std::move(where), std::move(message), std::move(help));
  d.fix = std::move(fix);
  sink_.report(std::move(d));
  return sink_.items().back();
}

TextEdit LintContext::edit(std::size_t offset, std::size_t length, std::string text) const {
  return TextEdit{doc.path, offset, length, std::move(text)};
}

SourceLocation LintContext::file_location() const {
  if (const YamlEntry* e = top("distributed_type")) return doc.key_location(*e);
  return doc.location(0, 0);
}

}  // namespace shardcheck
