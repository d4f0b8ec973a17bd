#pragma once
// Stage "resolve": a model's repeated blocks held once. A decoder is one block repeated (Llama-3.1-
// 405B: 126 LlamaDecoderLayers), and a LoRA adapter on every Linear turns each block into ~80
// modules: materialised, the PeftModel has ~10,600 modules and its FSDP1 plan 1,891 units, of which
// 126 copies say the same thing. A folded tree keeps the first block of each run of identical
// numbered siblings and its `Module::repeat` says how many there are; counts (ModuleTree::num_params,
// Module::total_numel of the container, ...) still count them all.
//
// The fold is exact or it does not happen: a run holds only siblings whose subtrees are identical in
// everything a later stage reads (classes, names, parameters with every field, nested repeats, and
// the caller's per-module marks, e.g. which LoRA target each module is), and nothing outside a run
// refers to a block that is dropped (a tied parameter, the input or output embedding).
// expand_repeated_blocks gives back the materialised tree, which is what the proofs compare.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shardcheck/module_tree.hpp"

namespace shardcheck {

// Folds `tree` in place; nested runs (experts inside layers) fold too. `marks`, when given, has one
// value per module of the tree as it is, and instances fold only where their modules' marks agree.
// Returns, per module of the tree as it was, its index in the folded tree (-1: folded away).
std::vector<int> fold_repeated_blocks(ModuleTree& tree, std::span<const std::uint64_t> marks = {});

// The inverse: every instance materialised, named and with paths as the model has them. `origin`,
// when given, receives for each module of the result the folded module it is an instance of.
void expand_repeated_blocks(ModuleTree& tree, std::vector<int>* origin = nullptr);

// How many instances each module stands for: the product of its own and its ancestors' repeats.
std::vector<std::int64_t> module_multiplicity(const ModuleTree& tree);

// The module that the module `path` of the materialised model is (an instance of): its index, or
// -1 when the tree has no such module. A walk down the tree by name, so it answers for folded and
// materialised trees alike.
int find_module_instance(const ModuleTree& tree, std::string_view path);

// The same for many paths in a row (the keys of a saved adapter, in their sorted order): a path that
// shares leading components with the previous one goes on from where that walk was.
class ModuleInstanceFinder {
 public:
  explicit ModuleInstanceFinder(const ModuleTree& tree) : tree_(tree) {}
  int find(std::string_view path);

 private:
  const ModuleTree& tree_;
  std::string last_;                                // the previous path
  std::vector<std::pair<std::size_t, int>> steps_;  // per component of it: where it ends, its module
};

// The name of instance k (0-based) of a repeated module: its numeric name plus k.
std::string repeat_instance_name(const Module& m, int k);

}  // namespace shardcheck
