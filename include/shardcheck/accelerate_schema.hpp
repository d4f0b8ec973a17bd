#pragma once
// The accelerate config schema: every top-level and nested key with its type, accepted values,
// default, environment variable and version history. Data, loaded from rules/accelerate/schema.yaml,
// so that a rename or a new key needs no C++.

#include <map>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcheck/diagnostics.hpp"
#include "shardcheck/version.hpp"

namespace shardcheck {

struct EnumValue {
  std::string value;
  std::optional<Version> since, removed;
};

struct KeySpec {
  std::string name;
  std::string type = "any";  // see the header of schema.yaml
  std::vector<EnumValue> values;
  bool case_sensitive = false;
  bool integer_forms = false;
  std::optional<Version> name_forms_since;
  std::string default_value;
  std::string env;
  std::string exported;  // always | if_set | never | "" (no variable)
  std::optional<Version> since, removed, deprecated, ignored_from, renamed_in, required_from;
  std::optional<Version> yaml_bool_crash_from;
  std::string renamed_to;
  std::string only;  // cluster | sagemaker | ""
  bool nullable = false;
  std::optional<std::string> launch_ignored;  // the argparse default that wins
  std::string fsdp1_only;                     // removed | not_implemented | obsolete | ignored | ""
  // `read_when: {KEY: VALUE}`: accelerate reads this key's value only when KEY (an enum of the same
  // section) is VALUE; otherwise the value never reaches int()/split() and cannot fail.
  std::string read_when_key, read_when_value;
  std::optional<std::int64_t> min, max;  // the range an integer value must lie in (accelerate, torchrun)
  std::string invalid_message;
  std::string required_message;
  std::string doc;

  // Whether the key exists (is read) in `v`: since <= v < removed.
  bool exists_in(const Version& v) const;
  std::vector<std::string> value_names(const Version& v) const;  // enum values valid in v
};

struct SectionSpec {
  std::string name;    // "fsdp_config"
  std::string prefix;  // "fsdp_"
  bool prefix_optional = false;
  bool check_unknown = false;
  std::map<std::string, KeySpec, std::less<>> keys;

  // The spec a written key refers to: exact, or with the optional prefix added.
  const KeySpec* find(std::string_view written) const;
  std::string canonical(std::string_view written) const;
};

struct AccelerateSchema {
  Version newest, oldest;
  SectionSpec top;  // name "", no prefix
  std::map<std::string, SectionSpec, std::less<>> sections;

  const SectionSpec* section(std::string_view name) const;
  const KeySpec* fsdp_key(std::string_view canonical) const;
  // Every key of every section whose `env` is `var`, or nullptr.
  const KeySpec* key_for_env(std::string_view var, const SectionSpec** section = nullptr) const;

  // Loads <rules_dir>/accelerate/schema.yaml. Problems: ExitCode::bad_rules.
  static std::optional<AccelerateSchema> load(const std::string& rules_dir, DiagnosticSink& sink);
  static std::optional<AccelerateSchema> parse(const std::string& yaml_text, const std::string& label,
                                               DiagnosticSink& sink);
};

}  // namespace shardcheck
