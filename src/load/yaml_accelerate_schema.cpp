// Loads rules/accelerate/schema.yaml (trusted data shipped with shardcheck) from the same
// position-keeping YAML tree as the configs it describes (config_doc.hpp).
//
// Why not yaml-cpp's YAML::Node: `shardcheck lint` reads this file in every process, and building
// a node graph (a shared_ptr and a map per node, a linear key search per lookup) was the largest
// cost of a lint run after process start: 3.7 ms and 118 page faults for the 11 KB schema in a
// fresh process, against 1.8 ms and 43 faults for the event-built tree used here (CI machine,
// medians of 4).
#include <fmt/format.h>

#include <charconv>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "shardcheck/accelerate_schema.hpp"
#include "shardcheck/config_doc.hpp"
#include "shardcheck/finding_codes.hpp"

namespace shardcheck {
namespace {

struct SchemaError {
  std::string message;
};

// The value of `field` in mapping `n`, or nullptr when `n` is not a mapping or lacks the field.
const YamlNode* field_of(const YamlNode& n, std::string_view field) {
  const YamlEntry* e = n.find(field);
  return e ? e->value.get() : nullptr;
}

std::string scalar_text(const YamlNode& v, std::string_view field, const std::string& where) {
  if (!v.is_scalar()) throw SchemaError{fmt::format("{}: {}: expected a single value", where, field)};
  return v.text;
}

std::optional<Version> version_field(const YamlNode& n, const char* field, const std::string& where) {
  const YamlNode* v = field_of(n, field);
  if (!v) return std::nullopt;
  const std::string text = v->is_scalar() ? v->text : std::string();
  auto parsed = Version::parse(text);
  if (!parsed) throw SchemaError{fmt::format("{}: {}: expected a version like 1.6.0, found '{}'", where, field, text)};
  return parsed;
}

std::string string_field(const YamlNode& n, const char* field) {
  const YamlNode* v = field_of(n, field);
  return v && v->is_scalar() ? v->text : std::string();
}

// Absent means false, as before; anything but a YAML boolean is a mistake in the data.
bool bool_field(const YamlNode& n, const char* field, const std::string& where) {
  const YamlNode* v = field_of(n, field);
  if (!v) return false;
  const YamlScalar value = v->scalar();
  if (value.type != YamlType::boolean)
    throw SchemaError{fmt::format("{}: {}: expected true or false, found '{}'", where, field, v->text)};
  return value.boolean;
}

KeySpec parse_key(const std::string& name, const YamlNode& n, const std::string& where) {
  KeySpec k;
  k.name = name;
  if (!n.is_mapping()) throw SchemaError{fmt::format("{}: expected a mapping of key properties", where)};
  k.type = string_field(n, "type");
  if (k.type.empty()) k.type = "any";
  static const char* kTypes[] = {"bool",    "env_bool", "int",        "env_int", "string", "enum",
                                 "mapping", "list",     "class_list", "regex",   "any",    "reshard"};
  if (std::find(std::begin(kTypes), std::end(kTypes), k.type) == std::end(kTypes))
    throw SchemaError{fmt::format("{}: unknown type '{}'", where, k.type)};
  if (const YamlNode* values = field_of(n, "values")) {
    if (values->kind != YamlNode::Kind::sequence) throw SchemaError{fmt::format("{}: values: expected a list", where)};
    for (const auto& v : values->items) {
      EnumValue ev;
      if (v->is_mapping()) {
        const YamlNode* value = field_of(*v, "value");
        if (!value) throw SchemaError{fmt::format("{}: values: an item with since/removed needs a value", where)};
        ev.value = scalar_text(*value, "value", where);
        ev.since = version_field(*v, "since", where);
        ev.removed = version_field(*v, "removed", where);
      } else {
        ev.value = scalar_text(*v, "values", where);
      }
      k.values.push_back(std::move(ev));
    }
  }
  if (k.type == "enum" && k.values.empty()) throw SchemaError{fmt::format("{}: an enum needs values", where)};
  k.case_sensitive = bool_field(n, "case_sensitive", where);
  k.integer_forms = bool_field(n, "integer_forms", where);
  k.nullable = bool_field(n, "nullable", where);
  k.name_forms_since = version_field(n, "name_forms_since", where);
  k.default_value = string_field(n, "default");
  k.env = string_field(n, "env");
  k.exported = string_field(n, "exported");
  if (!k.env.empty() && k.exported.empty()) k.exported = "always";
  k.since = version_field(n, "since", where);
  k.removed = version_field(n, "removed", where);
  k.deprecated = version_field(n, "deprecated", where);
  k.ignored_from = version_field(n, "ignored_from", where);
  k.renamed_in = version_field(n, "renamed_in", where);
  k.required_from = version_field(n, "required_from", where);
  k.yaml_bool_crash_from = version_field(n, "yaml_bool_crash_from", where);
  k.renamed_to = string_field(n, "renamed_to");
  k.only = string_field(n, "only");
  if (const YamlNode* v = field_of(n, "launch_ignored")) k.launch_ignored = scalar_text(*v, "launch_ignored", where);
  k.fsdp1_only = string_field(n, "fsdp1_only");
  if (const YamlNode* v = field_of(n, "read_when")) {
    if (!v->is_mapping() || v->entries.size() != 1 || !v->entries[0].value)
      throw SchemaError{fmt::format("{}: read_when: expected one `KEY: VALUE` pair", where)};
    k.read_when_key = v->entries[0].key;
    k.read_when_value = scalar_text(*v->entries[0].value, "read_when", where);
  }
  for (auto [name, bound] : {std::pair{"min", &k.min}, std::pair{"max", &k.max}}) {
    if (const YamlNode* v = field_of(n, name)) {
      const std::string text = scalar_text(*v, name, where);
      std::int64_t value = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec != std::errc() || end != text.data() + text.size())
        throw SchemaError{fmt::format("{}: {} must be an integer, found '{}'", where, name, text)};
      *bound = value;
    }
  }
  k.invalid_message = string_field(n, "invalid_message");
  k.required_message = string_field(n, "required_message");
  k.doc = string_field(n, "doc");
  return k;
}

// A `read_when` condition must name an enum of the same section and one of its values: a typo in
// the data would otherwise make a key silently unread, hiding every finding about its value.
void check_read_when(const SectionSpec& s, const std::string& where) {
  for (const auto& [name, k] : s.keys) {
    if (k.read_when_key.empty()) continue;
    const auto cond = s.keys.find(k.read_when_key);
    if (cond == s.keys.end() || cond->second.type != "enum")
      throw SchemaError{
          fmt::format("{}.{}: read_when: '{}' is not an enum key of this section", where, name, k.read_when_key)};
    const auto& values = cond->second.values;
    const std::string& wanted = k.read_when_value;  // a lambda cannot capture a structured binding (clang 14)
    if (std::none_of(values.begin(), values.end(), [&](const EnumValue& v) { return v.value == wanted; }))
      throw SchemaError{
          fmt::format("{}.{}: read_when: '{}' is not a value of {}", where, name, k.read_when_value, k.read_when_key)};
  }
}

void parse_keys(SectionSpec& s, const YamlNode* keys, const std::string& where) {
  if (!keys || !keys->is_mapping()) throw SchemaError{fmt::format("{}: expected a mapping of keys", where)};
  for (const YamlEntry& e : keys->entries) {
    if (!e.value) throw SchemaError{fmt::format("{}.{}: expected a mapping of key properties", where, e.key)};
    s.keys.emplace(e.key, parse_key(e.key, *e.value, where + "." + e.key));
  }
  check_read_when(s, where);
}

}  // namespace

bool KeySpec::exists_in(const Version& v) const {
  if (since && v < *since) return false;
  if (removed && v >= *removed) return false;
  return true;
}

std::vector<std::string> KeySpec::value_names(const Version& v) const {
  std::vector<std::string> out;
  for (const auto& e : values)
    if ((!e.since || v >= *e.since) && (!e.removed || v < *e.removed)) out.push_back(e.value);
  return out;
}

const KeySpec* SectionSpec::find(std::string_view written) const {
  if (auto it = keys.find(written); it != keys.end()) return &it->second;
  if (prefix_optional && !prefix.empty()) {
    // accelerate adds the prefix when the key does not start with the section word ("fsdp"), so
    // `sharding_strategy` means `fsdp_sharding_strategy` (launch.py, v1.5.0+; substring test before).
    const std::string_view word = std::string_view(prefix).substr(0, prefix.size() - 1);
    if (written.substr(0, word.size()) != word) {
      if (auto it = keys.find(prefix + std::string(written)); it != keys.end()) return &it->second;
    }
  }
  return nullptr;
}

std::string SectionSpec::canonical(std::string_view written) const {
  if (const KeySpec* k = find(written)) return k->name;
  return std::string(written);
}

const SectionSpec* AccelerateSchema::section(std::string_view name) const {
  auto it = sections.find(name);
  return it == sections.end() ? nullptr : &it->second;
}

const KeySpec* AccelerateSchema::fsdp_key(std::string_view canonical) const {
  const SectionSpec* s = section("fsdp_config");
  if (!s) return nullptr;
  auto it = s->keys.find(canonical);
  return it == s->keys.end() ? nullptr : &it->second;
}

const KeySpec* AccelerateSchema::key_for_env(std::string_view var, const SectionSpec** where) const {
  auto scan = [&](const SectionSpec& s) -> const KeySpec* {
    for (const auto& [name, k] : s.keys)
      if (k.env == var) {
        if (where) *where = &s;
        return &k;
      }
    return nullptr;
  };
  if (auto k = scan(top)) return k;
  for (const auto& [name, s] : sections)
    if (auto k = scan(s)) return k;
  return nullptr;
}

std::optional<AccelerateSchema> AccelerateSchema::parse(const std::string& text, const std::string& label,
                                                        DiagnosticSink& sink) {
  auto fail = [&](const std::string& message) {
    sink.report(finding("REG006", in_file(label), message));
    return std::nullopt;
  };
  // The schema is ours, not a user's config, so its syntax errors are rules errors (exit 8).
  DiagnosticSink yaml_sink;
  YamlLimits limits;
  limits.max_scalar_bytes = limits.max_bytes;  // `doc:` texts may be long; the file is trusted
  const std::optional<ConfigDoc> doc = parse_config_doc(text, label, yaml_sink, limits);
  if (!doc) {
    for (const Diagnostic& d : yaml_sink.items())
      if (d.severity == Severity::error) return fail(fmt::format("line {}: {}", d.location.line, d.message));
    return fail("cannot parse the schema");
  }
  try {
    const YamlNode& root = *doc->root;
    AccelerateSchema s;
    auto newest = Version::parse(string_field(root, "newest_version"));
    auto oldest = Version::parse(string_field(root, "oldest_version"));
    if (!newest || !oldest) return fail("expected newest_version and oldest_version");
    s.newest = *newest;
    s.oldest = *oldest;
    parse_keys(s.top, field_of(root, "top_level"), "top_level");
    if (const YamlNode* sections = field_of(root, "sections")) {
      for (const YamlEntry& e : sections->entries) {
        if (!e.value || !e.value->is_mapping())
          throw SchemaError{fmt::format("sections.{}: expected a mapping", e.key)};
        const YamlNode& body = *e.value;
        SectionSpec sec;
        sec.name = e.key;
        sec.prefix = string_field(body, "prefix");
        sec.prefix_optional = bool_field(body, "prefix_optional", "sections." + sec.name);
        sec.check_unknown = bool_field(body, "check_unknown", "sections." + sec.name);
        parse_keys(sec, field_of(body, "keys"), "sections." + sec.name);
        s.sections.emplace(sec.name, std::move(sec));
      }
    }
    return s;
  } catch (const SchemaError& e) {
    return fail(e.message);
  }
}

std::optional<AccelerateSchema> AccelerateSchema::load(const std::string& rules_dir, DiagnosticSink& sink) {
  const std::string path = rules_dir + "/accelerate/schema.yaml";
  std::ifstream in(path);
  if (!in) {
    sink.report(finding("REG006", in_file(path), "cannot read the accelerate schema",
                        "pass --rules DIR or set SHARDCHECK_RULES to the rules/ directory"));
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path, sink);
}

}  // namespace shardcheck
