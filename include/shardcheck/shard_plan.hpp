#pragma once
// Stage "simulate": what FSDP will do with a module tree — which modules become units (FSDP1) or
// fully_shard groups (FSDP2), which parameters each owns in which order, and how many elements of
// each every rank holds. Pure functions of (ModuleTree, FsdpSettings); version differences are
// explicit branches that cite the upstream file.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shardcheck/diagnostics.hpp"
#include "shardcheck/module_tree.hpp"
#include "shardcheck/settings.hpp"
#include "shardcheck/tensor_parallel.hpp"

namespace shardcheck {

// One slot of an FSDP1 FlatParameter: a parameter or alignment/world-size padding.
struct FlatSlot {
  std::string fqn;          // "" for padding
  std::int64_t offset = 0;  // in the unsharded flat parameter
  std::int64_t numel = 0;
  bool padding = false;
  bool requires_grad = false;  // this parameter trains (padding never does)
  bool gets_grad = false;      // ... and a training step reaches it (ParamInfo::unreached)
};

// An FSDP2 parameter sharded on dim 0 (torch.chunk semantics).
struct ParamShard {
  std::string fqn;
  std::vector<std::int64_t> shape;
  std::int64_t rows_per_rank = 0;  // pad0 = ceil(dim0 / W): every rank's padded row count
  std::int64_t row_numel = 0;      // numel / dim0
  DType dtype = DType::F32;        // a group may mix frozen low-precision and trainable fp32 parameters
  bool requires_grad = true;
  bool gets_grad = true;  // requires_grad and reached by the step's forward
};

struct ShardUnit {
  std::string path;  // "" for the root
  std::string cls;
  int module = -1;                   // index into ModuleTree::modules
  std::vector<std::string> modules;  // FSDP2: every module of a fully_shard([a, b]) group
  std::vector<std::string> params;   // real parameters, flat (FSDP1) or group (FSDP2) order
  std::vector<std::int64_t> param_numels;
  std::vector<FlatSlot> layout;        // FSDP1: the FlatParameter with its padding
  std::vector<ParamShard> shards;      // FSDP2: per-parameter dim-0 sharding
  std::int64_t numel = 0;              // real elements (no padding)
  std::int64_t padded_numel = 0;       // unsharded buffer = all-gather output (W * shard_numel)
  std::int64_t shard_numel = 0;        // elements every rank stores (padding included)
  std::vector<std::int64_t> rank_pad;  // padding elements on each rank of the shard group
  DType dtype = DType::F32;            // the original (master) dtype
  DType compute_dtype = DType::F32;    // what the all-gather carries: param_dtype, else dtype
  DType reduce_dtype = DType::F32;     // what the reduce-scatter sums: reduce_dtype, else compute_dtype
  bool requires_grad = true;
  bool gets_grad = true;                      // some parameter gets a gradient in a step (torch allocates one)
  std::optional<bool> reshard_after_forward;  // FSDP2 group setting after torch's defaults
  std::vector<std::string> duplicated;        // tied parameters flattened again although another unit holds them
  // In the plan of a folded tree (shardcheck/repeated_blocks.hpp): how many identical units this one
  // stands for, one per instance of its module; its path and names are the first instance's.
  std::int64_t instances = 1;
  // Where its path names a repeated module, outermost first: the numeric component at byte `at` (of
  // `len` bytes) is `first` in the first instance and counts on over `count` instances. Instance k
  // of the unit numbers them like digits, the innermost fastest (unit_instance_path).
  struct RepeatIndex {
    std::size_t at = 0, len = 0;
    std::int64_t first = 0, count = 1;
  };
  std::vector<RepeatIndex> repeats;
};

// The path of instance k (0 .. instances-1) of a unit of a folded plan: what the materialised plan
// calls that unit.
std::string unit_instance_path(const ShardUnit& u, std::int64_t k);
void append_unit_instance_path(std::string& out, const ShardUnit& u, std::int64_t k);

// One unit of the materialised plan, in a folded plan: which unit and which of its instances.
struct UnitInstance {
  int unit = 0;
  std::int64_t instance = 0;
};

// A parameter of an ignored module: whole on every rank, in no unit, reduced by no FSDP collective.
struct IgnoredParam {
  std::string fqn;
  std::int64_t numel = 0;
  DType dtype = DType::F32;
  bool requires_grad = true;
};

struct ShardPlan {
  int fsdp_version = 1;
  Version torch_version;
  int world_size = 1;
  int shard_group = 1;                                       // W: ranks a unit is sharded over
  int replicate_group = 1;                                   // R: HSDP replicas
  ShardingStrategy strategy = ShardingStrategy::full_shard;  // after the world-size-1 clamp
  std::vector<ShardUnit> units;                              // pre-order of the module tree (root first)
  // A plan of a folded tree: its units stand for several each (ShardUnit::instances), and this lists
  // the materialised plan's units in their order, the order FSDP runs them in (memory replays it).
  // Empty when the plan is not folded: then `units` is that order.
  std::vector<UnitInstance> sequence;
  std::size_t unit_count() const { return sequence.empty() ? units.size() : sequence.size(); }
  // Calls f(unit, instance) for every unit of the materialised plan, in its order.
  template <class F>
  void for_each_in_order(F&& f) const {
    if (sequence.empty())
      for (const ShardUnit& u : units) f(u, std::int64_t{0});
    else
      for (const UnitInstance& ui : sequence) f(units[static_cast<std::size_t>(ui.unit)], ui.instance);
  }
  std::vector<IgnoredParam> ignored;  // fsdp_ignored_modules' parameters
  // Tensor parallelism (FSDP2 with tp_size > 1): the layout every TP rank loads, and which TP rank's
  // local tensors this plan shards (the one with the largest per-rank memory). Absent without TP.
  std::optional<TensorParallelLayout> tensor_parallel;
  int tp_rank = 0;
  // Every TP rank's units (`units` are tp_rank's): TP ranks whose pieces have the same shapes share one set
  // (tp_unit_sets), so tp_unit_set[t] is TP rank t's index into it. `smoke --plan` verifies each TP rank's.
  std::vector<std::vector<ShardUnit>> tp_unit_sets;
  std::vector<int> tp_unit_set;
  std::vector<MeshDim> mesh;  // FSDP2's device mesh, dims above 1 (FsdpSettings::mesh_dims)
  // Rank 0's groups on that mesh: who it shards with (dp_shard_cp) and, with TP, splits tensors with.
  std::vector<int> shard_peers, tp_peers;
  // Whether a group crosses machines (accelerate launch puts gpus_per_node consecutive ranks on each
  // machine): its collectives then run at the inter-node bandwidth.
  bool shard_spans_nodes = false, replicate_spans_nodes = false, tp_spans_nodes = false;
};

// FSDP1: torch/distributed/fsdp/wrap.py `_recursive_wrap` + flat_param.py, per torch version.
ShardPlan plan_fsdp1(const ModuleTree& tree, const FsdpSettings& s, DiagnosticSink& sink);
// FSDP2: `fully_shard` groups as accelerate's fsdp2_prepare_model calls them.
ShardPlan plan_fsdp2(const ModuleTree& tree, const FsdpSettings& s, DiagnosticSink& sink);
// Whether a plan of a folded tree is exact as it is: every unit holds parameters of one instance of
// its module only (a unit above a run, such as a root that keeps the decoder layers, would flatten
// every instance), and the policy decides alike for every instance (a size policy counts a subtree's
// elements, which a fold holds once). True for a tree that is not folded. Where false, the tree is
// expanded and planned again.
bool folded_plan_exact(const ModuleTree& tree, const FsdpSettings& s, const ShardPlan& plan);
// What a finished plan tells about the job (empty units, a root unit that keeps most, a PEFT model's
// failures that depend on its units, ...) is the check stage's: src/check/.

// torch.chunk of n items (elements of a FlatParameter, dim-0 rows of an FSDP2 parameter) into w
// pieces, the one formula every stage uses: each piece holds ceil(n / w) ...
constexpr std::int64_t chunk_size(std::int64_t n, int w) { return w > 0 ? (n + w - 1) / w : n; }
// ... and piece r holds clamp(n - r * chunk, 0, chunk) real items (the last ones may hold fewer, or none).
constexpr std::int64_t chunk_real(std::int64_t n, std::int64_t chunk, int r) {
  const std::int64_t left = n - static_cast<std::int64_t>(r) * chunk;
  return left < 0 ? 0 : left < chunk ? left : chunk;
}

// torch.chunk sharding of n elements over w ranks (flat_param.py FlatParamHandle._get_shard):
// shard = ceil(n / w); rank r holds clamp(n - r*shard, 0, shard) real elements, the rest padding.
struct ChunkSplit {
  std::int64_t shard = 0;
  std::vector<std::int64_t> pad;  // per rank
  std::int64_t real(int r) const { return shard - pad[static_cast<std::size_t>(r)]; }
};
ChunkSplit chunk_split(std::int64_t n, int w);

}  // namespace shardcheck
