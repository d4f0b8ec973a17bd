#pragma once
// Load and resolve in one call: a model's inputs (shardcheck/model_source.hpp) and its module tree
// (shardcheck/module_tree.hpp), with the registry loaded and the tree expanded from config.json
// while the checkpoint's headers are still being read. The one way inspect, plan and check get a
// tree; diagnostics come out in the order of the stages (load, registry, tree).

#include <functional>
#include <optional>
#include <string>

#include "shardcheck/diagnostics.hpp"
#include "shardcheck/model_source.hpp"
#include "shardcheck/module_tree.hpp"

namespace shardcheck {

struct LoadedTree {
  std::optional<ModelInputs> inputs;
  bool inputs_ok = false;          // loaded, and loading reported no error
  std::optional<ModuleTree> tree;  // built only when inputs_ok: a broken checkpoint is reported
                                   // in full, but nothing is built on it
};

// `alongside`, when given, runs on the checkpoint's reading thread once the headers are read
// (ModelLoad::begin's `then`) and has run when this returns, unless the model could not be found or
// its config.json read: the caller can tell by a flag the work sets. It must not throw.
LoadedTree load_module_tree(const std::string& model, bool config_only, const std::string& rules_dir,
                            const ResolveOptions& options, DiagnosticSink& sink, std::function<void()> alongside = {});

}  // namespace shardcheck
