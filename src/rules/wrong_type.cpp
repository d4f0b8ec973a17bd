// wrong-type: a value of a type accelerate cannot use (a mapping where a flag goes, a string
// 'false' where Python tests truthiness, a YAML list for the comma-separated class list...).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "rules/rule_util.hpp"
#include "shardcheck/text.hpp"

namespace shardcheck::rules {
namespace wrong_type {
void check(LintContext& ctx);
}

extern const Rule kWrongType;
const Rule kWrongType{
    .id = "wrong-type",
    .severity = Severity::error,
    .summary = "A value of the wrong type",
    .explanation =
        "Top-level values are used as loaded: `use_cpu: 'false'` is a non-empty str, which Python treats as True. "
        "fsdp_config values bypass argparse `type=` (launch.py sets them with setattr) and reach the FSDP plugin as "
        "environment variables, str(value): booleans go through str_to_bool (utils/environment.py), which accepts "
        "y/yes/t/true/on/1 and n/no/f/false/off/0 in any case and raises `ValueError: invalid truth value ...` for "
        "anything else; integers go through int(). fsdp_transformer_layer_cls_to_wrap is split on commas, so a YAML "
        "list becomes the string \"['A', 'B']\" and no class matches. A section (fsdp_config, deepspeed_config, "
        "dynamo_config, ...) is copied into the launch arguments only when it is a mapping: anything else is never "
        "read (a warning), except deepspeed_config under DEEPSPEED, whose launcher calls .keys() on it, and "
        "parallelism_config, which turns use_parallelism_config on (errors).",
    .fix = "turn a YAML list of class names into the comma-separated string accelerate expects",
    .check = wrong_type::check,
};

namespace wrong_type {
const char* kind_name(const YamlNode& n) {
  switch (n.kind) {
    case YamlNode::Kind::null:
      return "null";
    case YamlNode::Kind::mapping:
      return "a mapping";
    case YamlNode::Kind::sequence:
      return "a list";
    case YamlNode::Kind::scalar:
      break;
  }
  switch (n.scalar().type) {
    case YamlType::null:
      return "null";
    case YamlType::boolean:
      return "a boolean";
    case YamlType::integer:
      return "an integer";
    case YamlType::floating:
      return "a float";
    case YamlType::string:
      return "a string";
  }
  return "a string";
}

bool is_truth_string(const std::string& s) { return accelerate_str_to_bool(s).has_value(); }

void check(LintContext& ctx) {
  for (const KeyUse& use : ctx.known_keys()) {
    const KeySpec& k = *use.spec;
    const YamlEntry& e = *use.entry;
    if (!e.value || !ctx.value_is_read(use)) continue;
    const YamlNode& n = *e.value;
    const SourceLocation where = ctx.doc.value_location(e);
    if (n.is_null() || (n.is_scalar() && n.scalar().type == YamlType::null)) continue;  // an unset value
    const YamlScalar s = n.scalar();
    const bool scalar = n.is_scalar();
    auto bad = [&](std::string expected, std::string help = {}, std::vector<TextEdit> fix = {},
                   Severity sev = Severity::error) {
      ctx.report(kWrongType, sev, where, fmt::format("`{}`: expected {}, found {}", e.key, expected, kind_name(n)),
                 std::move(help), std::move(fix));
    };
    if (k.type == "bool") {
      if (!scalar) {
        bad("true or false");
      } else if (s.type == YamlType::string) {
        std::string lower = n.text;
        lower = ascii_lower(std::move(lower));
        const bool plain_word = lower == "true" || lower == "false";
        bad("true or false",
            fmt::format("'{}' is a non-empty string, which Python treats as True; write {} unquoted", n.text,
                        plain_word ? "`" + lower + "`" : "true or false"),
            plain_word ? std::vector<TextEdit>{ctx.edit(n.pos.offset, n.end - n.pos.offset, lower)}
                       : std::vector<TextEdit>{});
      }
    } else if (k.type == "env_bool") {
      if (!scalar)
        bad("true or false");
      else if (!is_truth_string(python_str(n)))
        bad("a truth value (true/false, yes/no, 1/0)",
            fmt::format("accelerate's str_to_bool raises `ValueError: invalid truth value {}`", python_str(n)));
    } else if (k.type == "int") {
      if (!scalar || s.type == YamlType::boolean || s.type == YamlType::floating)
        bad("an integer");
      else if (s.type == YamlType::string && n.text.find_first_not_of("0123456789") == std::string::npos &&
               !n.text.empty())
        bad("an integer", "write the number without quotes", {ctx.edit(n.pos.offset, n.end - n.pos.offset, n.text)},
            Severity::warning);
      else if (s.type == YamlType::string && n.text.find_first_of("eE") == std::string::npos)
        bad("an integer");
    } else if (k.type == "env_int") {
      if (!scalar || s.type == YamlType::boolean)
        bad("an integer");
      else if (s.type == YamlType::string &&
               (n.text.empty() || n.text.find_first_not_of("0123456789") != std::string::npos) &&
               n.text.find_first_of("eE") == std::string::npos)
        bad("an integer",
            fmt::format("int() raises `ValueError: invalid literal for int() with base 10: '{}'`", n.text));
    } else if (k.type == "string" || k.type == "regex") {
      if (!scalar)
        bad("a string");
      else if (s.type == YamlType::integer || s.type == YamlType::floating)
        bad("a string", fmt::format("quote it: `{}: {}`", e.key, single_quoted(n.text)),
            {ctx.edit(n.pos.offset, n.end - n.pos.offset, single_quoted(n.text))}, Severity::warning);
    } else if (k.type == "enum" || k.type == "reshard") {
      if (!scalar) bad("one value");
    } else if (k.type == "class_list") {
      if (n.kind == YamlNode::Kind::sequence) {
        std::string joined;
        bool simple = true;
        for (const auto& item : n.items) {
          if (!item->is_scalar())
            simple = false;
          else
            joined += (joined.empty() ? "" : ",") + item->text;
        }
        bad("a comma-separated string of class names",
            "accelerate splits str(value) on commas; a YAML list becomes \"['A', 'B']\" and no class matches",
            simple && n.end > n.pos.offset ? std::vector<TextEdit>{ctx.edit(n.pos.offset, n.end - n.pos.offset, joined)}
                                           : std::vector<TextEdit>{});
      } else if (!scalar) {
        bad("a comma-separated string of class names");
      }
    } else if (k.type == "mapping") {
      if (n.kind != YamlNode::Kind::mapping) {
        // _validate_launch_command (commands/launch.py, v1.14.0) copies a section's keys into the launch
        // arguments only `if isinstance(attr, dict)`; any other value is set as an argument of the same
        // name that nothing reads. It fails only where a launcher calls dict methods on it: the DeepSpeed
        // launcher's `defaults.deepspeed_config.keys()`, and a parallelism_config that is not {} turns
        // use_parallelism_config on.
        const bool used = (e.key == "deepspeed_config" && ctx.distributed_type() == "DEEPSPEED") ||
                          e.key == "parallelism_config" || k.only == "sagemaker";
        if (used)
          bad("a mapping", e.key == "deepspeed_config"
                               ? "the DeepSpeed launcher calls `defaults.deepspeed_config.keys()` and fails with "
                                 "AttributeError; put the settings under the key, or name a JSON file with "
                                 "`deepspeed_config_file:` inside it"
                               : "");
        else
          bad("a mapping",
              fmt::format(
                  "accelerate launch copies `{}` only from a mapping, so this value is never read; put the "
                  "settings under the key as a mapping{}",
                  e.key,
                  e.key == "deepspeed_config" ? ", or name a JSON file with `deepspeed_config_file:` inside it" : ""),
              {}, Severity::warning);
      }
    } else if (k.type == "list") {
      if (scalar) bad("a list", {}, {}, Severity::warning);
    }
  }
}
}  // namespace wrong_type

}  // namespace shardcheck::rules
