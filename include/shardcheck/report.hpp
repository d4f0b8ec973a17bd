#pragma once
// Stage "report": renderers turn results into bytes. They format; they never compute a number
// (every count they print is a field of the value they are given).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcheck/diagnostics.hpp"
#include "shardcheck/module_tree.hpp"
#include "shardcheck/shard_plan.hpp"
#include "shardcheck/text.hpp"

namespace shardcheck {

struct TextStyle {
  bool color = false;
};

// `print(model)`-like tree with parameter counts; identical consecutive layers collapsed.
std::string render_tree_text(const ModuleTree& tree, const TextStyle& style = {});
// "LoRA adapter SRC: trainable params: N || all params: M || trainable%: P" (peft's
// print_trainable_parameters), in the tree and in the plan.
std::string peft_trainable_line(const std::string& adapter, std::int64_t trainable, std::int64_t total);
// The same print(model)-shaped tree, module lines only, with marks[i] after module i (one per module).
std::string render_marked_tree_text(const ModuleTree& tree, const std::vector<std::string>& marks,
                                    const TextStyle& style = {});
// The module tree with every FSDP unit / fully_shard group marked: flat size, per-rank shard,
// padding by rank and dtype (the plan's numbers, formatted).
std::string render_plan_tree_text(const ModuleTree& tree, const ShardPlan& plan, const TextStyle& style = {});
// The `inspect --format json` contract (see README "JSON output").
std::string render_tree_json(const ModuleTree& tree, const std::vector<Diagnostic>& diagnostics);

// Diagnostics as compiler-style text: `file:line:col: severity: message [code]`, snippet, help.
std::string render_diagnostics_text(const std::vector<Diagnostic>& diagnostics, const TextStyle& style = {});
// One diagnostic as a JSON object (shared by every JSON output).
std::string diagnostic_json(const Diagnostic& d);

}  // namespace shardcheck

#include "shardcheck/memory.hpp"
#include "shardcheck/peft_model.hpp"
#include "shardcheck/settings.hpp"
#include "shardcheck/shard_plan.hpp"

namespace shardcheck {

// `plan --format json`: {"world_size", "fsdp_version", "torch_version", "sharding_strategy",
// "settings": {name: {"value", "source"}}, "units": [...], "diagnostics": [...]}.
// With a PEFT adapter, "peft": {"adapter", "trainable_params", "all_params", "targeted", "saved"}.
std::string render_plan_json(const ShardPlan& plan, const FsdpSettings& settings, const MemoryEstimate& memory,
                             const CommVolume& comm, const std::vector<Diagnostic>& diagnostics,
                             const PeftSummary* peft = nullptr);
// `plan --format html`: one self-contained page (no network): verdict, a bar per rank against the GPU,
// findings with fixes, units, the module tree with its units marked, settings with their sources
// (read by the page from the embedded JSON plan above).
std::string render_plan_html(const ModuleTree& tree, const ShardPlan& plan, const FsdpSettings& settings,
                             const MemoryEstimate& memory, const CommVolume& comm,
                             const std::vector<Diagnostic>& diagnostics);
// The unit table with repeated identical units collapsed, then memory per rank and the verdict;
// with a PEFT adapter, peft's trainable-parameter line first.
std::string render_plan_text(const ShardPlan& plan, const FsdpSettings& settings, const MemoryEstimate& memory,
                             const CommVolume& comm, const TextStyle& style = {}, const PeftSummary* peft = nullptr);

}  // namespace shardcheck

#include <functional>

namespace shardcheck {

// ---- Lint output. Snippets need the text of each file; `SourceLookup` returns it (or nullptr).
using SourceLookup = std::function<const std::string*(const std::string& file)>;
// Compiler-style text with the source line and a caret/underline under the span (actionlint style).
std::string render_diagnostics_text(const std::vector<Diagnostic>& diagnostics, const SourceLookup& sources,
                                    const TextStyle& style);
// `{"diagnostics": [{"rule","severity","file","line","column","end_column","message","help","fix"}]}`
std::string render_diagnostics_json(const std::vector<Diagnostic>& diagnostics);
// SARIF 2.1.0 as GitHub code scanning accepts it. `uri_base`: paths are made relative to it.
// Where a rule's documentation is published: SHARDCHECK_DOCS_URL (a CMake cache variable, e.g.
// the repository's docs/rules/ on its forge) + "<id>.md" for the linter's rules, else "" (the
// SARIF omits helpUri rather than point at a page that does not exist).
std::string rule_doc_uri(std::string_view rule_id);

struct SarifRule {
  std::string id, name, short_description, full_description, help_uri;
  Severity level = Severity::error;
};
// A lint rule's or a finding code's documentation as SARIF rule metadata (name in PascalCase,
// "flattened-fsdp-config" -> "FlattenedFsdpConfig"); nullopt for an id neither catalogue has.
std::optional<SarifRule> catalogued_sarif_rule(std::string_view id);
std::string render_diagnostics_sarif(const std::vector<Diagnostic>& diagnostics, const std::vector<SarifRule>& rules,
                                     const std::string& tool_version, const std::string& uri_base);
// GitHub Actions workflow commands: `::error file=F,line=L,col=C,title=RULE::message`
std::string render_diagnostics_github(const std::vector<Diagnostic>& diagnostics);
// GitLab's Code Quality report (artifacts:reports:codequality): a JSON array of issues with
// repository-relative paths (relative to `uri_base` when given, as for SARIF).
std::string render_diagnostics_gitlab(const std::vector<Diagnostic>& diagnostics, const std::string& uri_base);

}  // namespace shardcheck
