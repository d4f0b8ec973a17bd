#pragma once
// Stage "report": renderers turn results into bytes. They format; they never compute a number
// (every count they print is a field of the value they are given).

#include <string>
#include <vector>

#include "shardcheck/diagnostics.hpp"
#include "shardcheck/module_tree.hpp"

namespace shardcheck {

struct TextStyle {
  bool color = false;
};

// `print(model)`-like tree with parameter counts; identical consecutive layers collapsed.
std::string render_tree_text(const ModuleTree& tree, const TextStyle& style = {});
// The `inspect --format json` contract (see README "JSON output").
std::string render_tree_json(const ModuleTree& tree, const std::vector<Diagnostic>& diagnostics);

// Diagnostics as compiler-style text: `file:line:col: severity: message [code]`, snippet, help.
std::string render_diagnostics_text(const std::vector<Diagnostic>& diagnostics, const TextStyle& style = {});
// One diagnostic as a JSON object (shared by every JSON output).
std::string diagnostic_json(const Diagnostic& d);

// 8030261248 -> "8.03B", 218112000 -> "218.1M"
std::string human_count(std::int64_t n);

}  // namespace shardcheck
