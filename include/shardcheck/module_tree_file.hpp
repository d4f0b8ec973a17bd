#pragma once
// `--module-tree tree.json`: a model's module tree read from a dump of the live object (written by
// `python3 -m shardcheck dump` or shardcheck.dump_model, python/shardcheck/) instead of from
// config.json and the registry. The schema is docs/module-tree.md. The tree it gives is the one the
// registry path builds (shardcheck/module_tree.hpp), so wrap classes, the plan, the checks and the
// reports work on it unchanged.
//
// A file that cannot be read is ExitCode::io (TREE001); one that is not JSON, breaks the schema or
// contradicts itself is ExitCode::bad_module_tree (TREE002-TREE005), with its line and column and
// what was expected against what was found.

#include <optional>
#include <string>
#include <string_view>

#include "shardcheck/diagnostics.hpp"
#include "shardcheck/module_tree.hpp"

namespace shardcheck {

// The format_version this build reads and the Python helper writes.
inline constexpr int kModuleTreeFormatVersion = 1;

// From the file at `path` (at most 512 MiB).
std::optional<ModuleTree> load_module_tree_file(const std::string& path, const ResolveOptions& options,
                                                DiagnosticSink& sink);

// From the file's text; `path` names it in diagnostics.
std::optional<ModuleTree> parse_module_tree_file(std::string_view text, const std::string& path,
                                                 const ResolveOptions& options, DiagnosticSink& sink);

}  // namespace shardcheck
