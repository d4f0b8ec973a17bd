// yaml11-implicit-type: plain scalars that PyYAML's YAML 1.1 resolver types differently from what the
// reader expects: `no` is False, `1e8` is the string '1e8', `1.0e+8` is a float.
#include <fmt/format.h>

#include <cmath>
#include <regex>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace yaml11_implicit_type {
void check(LintContext& ctx);
}

extern const Rule kYaml11ImplicitType;
const Rule kYaml11ImplicitType{
    .id = "yaml11-implicit-type",
    .severity = Severity::error,
    .summary = "YAML 1.1 turns a plain value into the wrong type",
    .explanation =
        "accelerate loads the file with PyYAML (YAML 1.1): unquoted `no`, `yes`, `on`, `off` (any case) are booleans, "
        "and a float needs a dot and a signed exponent, so `1e8` stays the string '1e8' while `1.0e+8` is a float. "
        "`mixed_precision: no` therefore loads as False: v0.19.0 (PR #1386) turned that back into 'no', but v0.34.0 "
        "(1a6af0bd) dropped the line, and from v0.34.0 `accelerate launch` fails with `AttributeError: 'bool' object "
        "has no attribute 'lower'` (Ziems/arbor PR #156). `distributed_type: NO` is converted with DistributedType() "
        "only when it is a str: the launcher then matches no paradigm and runs its single-process launcher, which is "
        "what 'NO' does (a warning), but process_config no longer sees 'NO' and leaves num_processes at -1 when the "
        "key is absent, so the launch fails (an error). For integer FSDP settings the value is exported as str(value) "
        "and read with int(): "
        "'1e8' and '100000000.0' both fail with `ValueError: invalid literal for int() with base 10`. The files "
        "`accelerate config` writes quote these values ('NO', 'no').",
    .fix = "quote YAML-1.1 booleans; write scientific-notation integers out in full",
    .check = yaml11_implicit_type::check,
};

namespace yaml11_implicit_type {
bool wants_string(const KeySpec& k) {
  return k.type == "enum" || k.type == "string" || k.type == "class_list" || k.type == "regex";
}

bool looks_scientific(std::string_view s) {
  static const std::regex re(R"([-+]?[0-9][0-9_]*(\.[0-9_]*)?[eE][-+]?[0-9]+)");
  return s.size() < 64 && std::regex_match(s.begin(), s.end(), re);
}

void check(LintContext& ctx) {
  const Version& v = ctx.version();
  for (const KeyUse& use : ctx.known_keys()) {
    const KeySpec& k = *use.spec;
    const YamlEntry& e = *use.entry;
    if (!e.value || !e.value->is_scalar() || e.value->quoted || !ctx.value_is_read(use)) continue;
    const YamlScalar s = e.value->scalar();
    const SourceLocation where = ctx.doc.value_location(e);
    const std::size_t vb = e.value->pos.offset, ve = e.value->end;
    if (s.type == YamlType::boolean && wants_string(k)) {
      Severity sev = Severity::error;
      std::string consequence = "accelerate compares it with strings and fails";
      if (k.yaml_bool_crash_from) {
        if (v >= *k.yaml_bool_crash_from) {
          consequence =
              fmt::format("accelerate {} fails with `AttributeError: 'bool' object has no attribute 'lower'`", v.str());
        } else {
          sev = Severity::warning;
          consequence =
              fmt::format("accelerate {} still maps False to 'no', but v0.34.0 and later crash on it", v.str());
        }
      } else if (k.name == "distributed_type") {
        // BaseConfig.__post_init__ converts only a str; commands/launch.py then matches no paradigm and
        // launch_command falls through to simple_launcher, the launcher of 'NO' (v1.14.0). Only
        // process_config's `distributed_type == DistributedType.NO` default of num_processes misses it.
        if (ctx.top("num_processes")) {
          sev = Severity::warning;
          consequence =
              "DistributedType() is applied only to strings, so no paradigm matches and `accelerate launch` falls "
              "back to its single-process launcher, which is what 'NO' does";
        } else {
          consequence =
              "process_config sets num_processes to 1 only for the string 'NO', so accelerate launch fails with "
              "`You need to manually pass in `--num_processes` using this config yaml.`";
        }
      } else if (!k.env.empty()) {
        consequence = fmt::format("it is exported as {}={}, which is not one of the accepted values", k.env,
                                  s.boolean ? "True" : "False");
      }
      ctx.report(kYaml11ImplicitType, sev, where,
                 fmt::format("`{}: {}` is the boolean {} in YAML 1.1, not the string '{}': {}", e.key, e.value->text,
                             s.boolean ? "True" : "False", e.value->text, consequence),
                 fmt::format("quote it: `{}: {}`", e.key, single_quoted(e.value->text)),
                 {ctx.edit(vb, ve - vb, single_quoted(e.value->text))});
      continue;
    }
    if (k.type != "env_int" && k.type != "int") continue;
    if (s.type == YamlType::string && looks_scientific(e.value->text)) {
      std::string fixed;
      try {
        const double d = std::stod(e.value->text);
        if (d == std::floor(d) && std::fabs(d) < 9e18) fixed = std::to_string(static_cast<long long>(d));
      } catch (...) {
      }
      ctx.report(kYaml11ImplicitType, where,
                 fmt::format("`{}: {}` is the string '{}' in YAML 1.1 (a float needs a dot and a signed exponent); "
                             "int('{}') fails with `ValueError: invalid literal for int() with base 10: '{}'`",
                             e.key, e.value->text, e.value->text, e.value->text, e.value->text),
                 fixed.empty() ? "write the integer out in full" : fmt::format("write `{}: {}`", e.key, fixed),
                 fixed.empty() ? std::vector<TextEdit>{} : std::vector<TextEdit>{ctx.edit(vb, ve - vb, fixed)});
    } else if (s.type == YamlType::floating && k.type == "env_int") {
      const std::string as_str = python_str(*e.value);
      std::string fixed;
      if (std::isfinite(s.floating) && s.floating == std::floor(s.floating) && std::fabs(s.floating) < 9e18)
        fixed = std::to_string(static_cast<long long>(s.floating));
      ctx.report(kYaml11ImplicitType, where,
                 fmt::format("`{}: {}` is the float {}: it is exported as '{}' and int() fails with `ValueError: "
                             "invalid literal for int() with base 10: '{}'`",
                             e.key, e.value->text, as_str, as_str, as_str),
                 fixed.empty() ? "write an integer" : fmt::format("write `{}: {}`", e.key, fixed),
                 fixed.empty() ? std::vector<TextEdit>{} : std::vector<TextEdit>{ctx.edit(vb, ve - vb, fixed)});
    }
  }
}
}  // namespace yaml11_implicit_type

}  // namespace shardcheck::rules
