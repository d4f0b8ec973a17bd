#pragma once
// Stage "simulate": tensor parallelism as transformers applies it while loading a model with
// from_pretrained(tp_plan="auto", device_mesh=mesh["tp"]) (transformers 5.12.1,
// integrations/tensor_parallel.py). Each parameter the model's tp_plan names is cut into torch.chunk
// pieces along its style's dimension and TP rank t keeps piece t as a plain local tensor; FSDP2 then
// shards those local tensors over the data-parallel ranks (docs/tensor-parallel.md).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcheck/diagnostics.hpp"
#include "shardcheck/module_tree.hpp"
#include "shardcheck/settings.hpp"

namespace shardcheck {

// A parameter name with its layer numbers replaced by `*` (transformers
// replace_layer_number_by_wildcard: a run of digits between two dots, or after the last dot).
std::string tp_generic_name(std::string_view fqn);

// The plan entry a parameter follows (transformers _get_parameter_tp_plan, is_weight=True): its own
// generic name, else its module's; nullptr: the parameter is replicated on every TP rank.
const ModuleTree::TpEntry* tp_entry_for(const ModuleTree& tree, std::string_view fqn);

// The plan entry whose hooks a module gets (transformers distribute_model: _get_parameter_tp_plan with
// is_weight=False, the module's own generic name only); nullptr: none.
const ModuleTree::TpEntry* tp_module_entry(const ModuleTree& tree, std::string_view module_path);

struct TpPlacement {
  std::string fqn;
  std::string style;
  std::optional<int> dim;                         // the split dimension; nullopt: whole on every TP rank
  std::vector<std::vector<std::int64_t>> shapes;  // per TP rank, the local shape
  // A packed style's blocks along `dim` (gate and up of a gate_up_proj: 2), each cut on its own; 1 otherwise.
  int blocks = 1;
};

struct TensorParallelLayout {
  int tp_size = 1;
  std::vector<TpPlacement> params;  // every parameter of the tree, tree order
  std::size_t split = 0;            // how many of them the plan cuts (a `dim`)
};

// The layout of every parameter over s.tp_size ranks. A split transformers refuses at load (a packed
// dimension that is not a whole number of blocks, experts that do not divide) is reported (PLAN022).
TensorParallelLayout tensor_parallel_layout(const ModuleTree& tree, const FsdpSettings& s, DiagnosticSink& sink);

// The module tree TP rank `rank` holds: every parameter at its local shape (tied aliases follow
// their target), counts recomputed.
ModuleTree tp_local_tree(const ModuleTree& tree, const TensorParallelLayout& layout, int rank);

}  // namespace shardcheck
