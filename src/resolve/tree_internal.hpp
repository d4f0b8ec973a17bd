#pragma once
// Pieces shared by the module-tree builder's files (not part of the public API).

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "resolve/scope.hpp"
#include "shardcheck/module_tree.hpp"

namespace shardcheck {

// A failure while expanding the registry for one config.json. `rules_bug`: the registry itself is
// inconsistent (an undeclared class); otherwise the config's values cannot produce a layout.
struct ExpandError : std::runtime_error {
  explicit ExpandError(const std::string& what, bool rules_bug = false, std::string missing_name = {})
      : std::runtime_error(what), rules_bug(rules_bug), missing_name(std::move(missing_name)) {}
  bool rules_bug;
  std::string missing_name;  // a name no scope defines (a config.json field, when it is not a class argument)
};

// (module index, param index) -> checkpoint globs fused into that parameter (MoE experts in 5.x).
using FusedSources = std::map<std::pair<int, int>, std::vector<std::string>>;

std::optional<ModuleTree> expand_arch_tree(const ModelConfig& config, const ArchSpec& arch, const Registry& reg,
                                           const ResolveOptions& options, const std::string& root_cls,
                                           DType default_dtype, Frame& globals, FusedSources& fused,
                                           DiagnosticSink& sink);

// Matches checkpoint tensors to the tree's parameters: shapes and dtypes checked, missing and
// unexpected tensors reported, dtypes taken from the checkpoint.
void match_checkpoint(ModuleTree& tree, const ArchSpec& arch, const CheckpointMeta& ckpt, const FusedSources& fused,
                      const Frame& globals, DiagnosticSink& sink);

ParamInfo* find_param(ModuleTree& tree, const std::string& full_name);
void finalize_counts(ModuleTree& tree);

}  // namespace shardcheck
