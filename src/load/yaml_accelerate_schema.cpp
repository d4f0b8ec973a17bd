// Loads rules/accelerate/schema.yaml (trusted data shipped with shardcheck) with yaml-cpp's node API.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

#include "shardcheck/accelerate_schema.hpp"

namespace shardcheck {
namespace {

struct SchemaError {
  std::string message;
};

std::optional<Version> version_field(const YAML::Node& n, const char* field, const std::string& where) {
  const YAML::Node v = n[field];
  if (!v) return std::nullopt;
  auto parsed = Version::parse(v.as<std::string>());
  if (!parsed) throw SchemaError{fmt::format("{}: {}: expected a version like 1.6.0, found '{}'", where, field, v.as<std::string>())};
  return parsed;
}

std::string string_field(const YAML::Node& n, const char* field) {
  const YAML::Node v = n[field];
  return v && v.IsScalar() ? v.as<std::string>() : std::string();
}

KeySpec parse_key(const std::string& name, const YAML::Node& n, const std::string& where) {
  KeySpec k;
  k.name = name;
  if (!n.IsMap()) throw SchemaError{fmt::format("{}: expected a mapping of key properties", where)};
  k.type = string_field(n, "type");
  if (k.type.empty()) k.type = "any";
  static const char* kTypes[] = {"bool", "env_bool", "int", "env_int", "string", "enum", "mapping",
                                 "list", "class_list", "regex", "any", "reshard"};
  if (std::find(std::begin(kTypes), std::end(kTypes), k.type) == std::end(kTypes))
    throw SchemaError{fmt::format("{}: unknown type '{}'", where, k.type)};
  if (const YAML::Node values = n["values"]) {
    for (const auto& v : values) {
      EnumValue ev;
      if (v.IsMap()) {
        ev.value = v["value"].as<std::string>();
        ev.since = version_field(v, "since", where);
        ev.removed = version_field(v, "removed", where);
      } else {
        ev.value = v.as<std::string>();
      }
      k.values.push_back(std::move(ev));
    }
  }
  if (k.type == "enum" && k.values.empty()) throw SchemaError{fmt::format("{}: an enum needs values", where)};
  k.case_sensitive = n["case_sensitive"] && n["case_sensitive"].as<bool>();
  k.integer_forms = n["integer_forms"] && n["integer_forms"].as<bool>();
  k.nullable = n["nullable"] && n["nullable"].as<bool>();
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
  if (n["launch_ignored"]) k.launch_ignored = n["launch_ignored"].as<std::string>();
  k.fsdp1_only = string_field(n, "fsdp1_only");
  k.invalid_message = string_field(n, "invalid_message");
  k.required_message = string_field(n, "required_message");
  k.doc = string_field(n, "doc");
  return k;
}

void parse_keys(SectionSpec& s, const YAML::Node& keys, const std::string& where) {
  if (!keys || !keys.IsMap()) throw SchemaError{fmt::format("{}: expected a mapping of keys", where)};
  for (const auto& kv : keys) {
    const std::string name = kv.first.as<std::string>();
    s.keys.emplace(name, parse_key(name, kv.second, where + "." + name));
  }
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
    Diagnostic d;
    d.code = "bad-rules";
    d.severity = Severity::error;
    d.location.file = label;
    d.message = message;
    d.exit_code = ExitCode::bad_rules;
    sink.report(std::move(d));
    return std::nullopt;
  };
  try {
    const YAML::Node root = YAML::Load(text);
    AccelerateSchema s;
    auto newest = Version::parse(string_field(root, "newest_version"));
    auto oldest = Version::parse(string_field(root, "oldest_version"));
    if (!newest || !oldest) return fail("expected newest_version and oldest_version");
    s.newest = *newest;
    s.oldest = *oldest;
    parse_keys(s.top, root["top_level"], "top_level");
    for (const auto& kv : root["sections"]) {
      SectionSpec sec;
      sec.name = kv.first.as<std::string>();
      sec.prefix = string_field(kv.second, "prefix");
      sec.prefix_optional = kv.second["prefix_optional"] && kv.second["prefix_optional"].as<bool>();
      sec.check_unknown = kv.second["check_unknown"] && kv.second["check_unknown"].as<bool>();
      parse_keys(sec, kv.second["keys"], "sections." + sec.name);
      s.sections.emplace(sec.name, std::move(sec));
    }
    return s;
  } catch (const SchemaError& e) {
    return fail(e.message);
  } catch (const YAML::Exception& e) {
    return fail(fmt::format("line {}: {}", e.mark.line + 1, e.msg));
  }
}

std::optional<AccelerateSchema> AccelerateSchema::load(const std::string& rules_dir, DiagnosticSink& sink) {
  const std::string path = rules_dir + "/accelerate/schema.yaml";
  std::ifstream in(path);
  if (!in) {
    Diagnostic d;
    d.code = "bad-rules";
    d.severity = Severity::error;
    d.location.file = path;
    d.message = "cannot read the accelerate schema";
    d.help = "pass --rules DIR or set SHARDCHECK_RULES to the rules/ directory";
    d.exit_code = ExitCode::io;
    sink.report(std::move(d));
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path, sink);
}

}  // namespace shardcheck
