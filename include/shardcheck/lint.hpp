#pragma once
// `shardcheck lint`: checks an accelerate config file (and the caller's environment) against what
// the targeted accelerate release actually does with it. Each rule is one file in src/rules/ and one
// line in src/rules/registry.cpp; key facts (types, versions, renames) come from the schema data.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcheck/accelerate_schema.hpp"
#include "shardcheck/config_doc.hpp"
#include "shardcheck/diagnostics.hpp"
#include "shardcheck/environment.hpp"

namespace shardcheck {

struct LintOptions {
  Version accelerate;            // the release whose behaviour is checked
  std::optional<Version> torch;  // unknown unless --torch-version / --python-env says
  bool audit_env = false;
  std::vector<EnvVar> env;  // the variables to audit
  std::string env_source;   // "" = the shell; else the --env-file path
};

class LintContext;

struct Rule {
  const char* id;
  Severity severity;            // default severity (a finding may be milder, never harsher)
  const char* summary;          // one line (SARIF shortDescription)
  const char* explanation;      // a paragraph: what accelerate does, citing file and version
  const char* fix;              // what --fix does ("" = nothing automatic)
  void (*check)(LintContext&);  // nullptr for the loader's own rules (yaml-syntax, yaml-limits)
  // The finding depends on the environment alone, not on the file: linting several files reports
  // it once, not once per file.
  bool environment_only = false;
};

// Every rule, in a stable order. `find_rule` returns nullptr for an unknown id.
const std::vector<const Rule*>& all_rules();
const Rule* find_rule(std::string_view id);

// A finding of one of the loader's own rules (yaml-syntax, yaml-limits: `check` is nullptr), raised
// while the file is read, before any LintContext exists: the rule's severity, and the exit code
// bad_accelerate_config, since nothing else in the file can be checked.
Diagnostic loader_finding(std::string_view rule_id, SourceLocation where, std::string message, std::string help);

// One use of a key the schema knows, as PyYAML sees it (the last of duplicates).
struct KeyUse {
  const SectionSpec* section;  // &schema.top for top-level keys
  const KeySpec* spec;
  const YamlEntry* entry;
  bool top_level() const { return section && section->name.empty(); }
};

class LintContext {
 public:
  LintContext(const ConfigDoc& doc, const AccelerateSchema& schema, const LintOptions& opts, DiagnosticSink& sink);

  const ConfigDoc& doc;
  const AccelerateSchema& schema;
  const LintOptions& opts;
  const Version& version() const { return opts.accelerate; }

  const YamlNode& root() const { return *doc.root; }
  const YamlEntry* top(std::string_view key) const;
  // The mapping under a top-level section key, or nullptr (absent, null, or not a mapping).
  const YamlNode* section_map(std::string_view section) const;
  // A key of fsdp_config by canonical name (written with or without the fsdp_ prefix).
  const YamlEntry* fsdp(std::string_view canonical) const;
  const std::vector<KeyUse>& known_keys() const { return known_; }
  // The known key of `section` ("" = top level) with this canonical name, or nullptr.
  const KeyUse* known(std::string_view section, std::string_view canonical) const;

  // Why the targeted accelerate never reads this key's value, or nullopt when it does. The one place
  // that decides it: rules about a value (its type, range, spelling) skip an unread one, since a bad
  // value that never reaches int() or split() cannot fail the job; the rules that say "is ignored"
  // (key-not-in-version, renamed-key, min-num-params-without-size-wrap, ...) still report the key.
  std::optional<std::string> unread_reason(const KeyUse& use) const;
  bool value_is_read(const KeyUse& use) const { return !unread_reason(use); }

  // ---- what accelerate will do, derived once -------------------------------------------------
  std::string distributed_type() const;  // "" when absent or not a string
  bool is_fsdp() const { return distributed_type() == "FSDP"; }
  int fsdp_version() const;  // 1 unless fsdp_version: 2 and the target version reads it
  std::optional<std::string> fsdp_enum(std::string_view canonical) const;  // canonical enum name
  std::optional<std::int64_t> top_int(std::string_view key) const;         // a YAML int, else nullopt
  std::int64_t num_machines() const { return top_int("num_machines").value_or(1); }
  std::optional<bool> fsdp_bool(std::string_view canonical) const;  // a truth value, else nullopt
  // FSDP keys written at the top level (claimed by flattened-fsdp-config, skipped by unknown-key rules).
  const std::vector<const YamlEntry*>& flattened_fsdp_entries() const { return flattened_; }
  bool is_flattened(const YamlEntry* e) const;

  // ---- reporting -----------------------------------------------------------------------------
  Diagnostic& report(const Rule& rule, SourceLocation where, std::string message, std::string help = {},
                     std::vector<TextEdit> fix = {});
  Diagnostic& report(const Rule& rule, Severity severity, SourceLocation where, std::string message,
                     std::string help = {}, std::vector<TextEdit> fix = {});
  TextEdit edit(std::size_t offset, std::size_t length, std::string text) const;
  // Where a finding about the whole file goes: distributed_type's line, else line 1.
  SourceLocation file_location() const;

 private:
  DiagnosticSink& sink_;
  std::vector<KeyUse> known_;
  std::vector<const YamlEntry*> flattened_;
};

// Enum values as accelerate compares them.
struct EnumMatch {
  bool matched = false;
  std::string canonical;      // the schema's spelling
  bool integer_form = false;  // matched through 1..N
  bool exact = false;         // written exactly as the canonical name
};
EnumMatch match_enum(const KeySpec& spec, const YamlNode& value, const Version& v);
// The value as Python's str() would export it to the environment ("True" for a YAML true).
std::string python_str(const YamlNode& value);

// Lints one parsed document. Loader problems are not repeated here.
void lint_document(const ConfigDoc& doc, const AccelerateSchema& schema, const LintOptions& opts, DiagnosticSink& sink);

// Lints `text` and applies every fix, repeatedly, until nothing changes (at most 8 rounds): edits of
// two rules on one line may overlap, and the next round picks up what the previous one dropped.
std::string fix_to_fixpoint(std::string text, const std::string& path, const AccelerateSchema& schema,
                            const LintOptions& opts);

// Applies non-overlapping edits (an edit overlapping an earlier one is dropped).
std::string apply_edits(std::string_view text, std::vector<TextEdit> edits);
// A unified diff (3 lines of context) between two texts, labelled a/<path> and b/<path>.
std::string unified_diff(const std::string& path, std::string_view before, std::string_view after);

// The accelerate release a pip requirement resolves to, given the releases the schema knows:
// "==0.33.0" -> 0.33.0, "<=0.34.2" -> 0.34.2, ">=1.4.0" / "" -> newest.
Version version_for_requirement(std::string_view spec, const AccelerateSchema& schema);

// Reads KEY=VALUE lines (optional `export `, quotes, # comments) from an env file.
std::vector<EnvVar> parse_env_file(std::string_view text);

}  // namespace shardcheck
