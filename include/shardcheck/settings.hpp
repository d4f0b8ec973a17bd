#pragma once
// Stage "resolve": the effective FSDP settings, each value with where it came from (accelerate
// config file, environment variable, command line or default), so the output can say why.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcheck/dtype.hpp"
#include "shardcheck/version.hpp"

namespace shardcheck {

// torch.distributed.fsdp.ShardingStrategy (values as in torch/distributed/fsdp/api.py).
enum class ShardingStrategy {
  full_shard = 1,
  shard_grad_op = 2,
  no_shard = 3,
  hybrid_shard = 4,
  hybrid_shard_zero2 = 5
};
const char* strategy_name(ShardingStrategy s);                       // "FULL_SHARD" ...
std::optional<ShardingStrategy> parse_strategy(std::string_view s);  // names or "1".."5"
bool is_hybrid(ShardingStrategy s);

// `peft`: peft's fsdp_auto_wrap_policy (utils/other.py), which transformers' Trainer installs for a
// PEFT model under FSDP1 (integrations/fsdp.py update_fsdp_plugin_peft): a leaf module with a
// trainable `weight`, or an instance of the transformer layer classes.
enum class WrapPolicyKind { transformer, size, none, peft };
const char* policy_name(WrapPolicyKind k);

// torch.distributed.fsdp.BackwardPrefetch (FSDP1); `none` is accelerate's NO_PREFETCH (None).
enum class BackwardPrefetch { pre = 1, post = 2, none = 0 };
const char* prefetch_name(BackwardPrefetch p);
std::optional<BackwardPrefetch> parse_prefetch(std::string_view s);  // names (any case) or "1"/"2"

// Who calls fully_shard (FSDP2), each with its own grouping and defaults: accelerate's
// fsdp2_prepare_model, torchtitan's apply_fsdp, or transformers' native plan (`_fsdp_plan`).
enum class Fsdp2Caller { accelerate, torchtitan, transformers };
const char* caller_name(Fsdp2Caller c);
std::optional<Fsdp2Caller> parse_caller(std::string_view s);

// One dimension of the device mesh accelerate's ParallelismConfig.build_device_mesh makes
// (parallelism_config.py, 1.14.0).
struct MeshDim {
  const char* name;
  int size;
};

// accelerate's mixed_precision as FSDP uses it (utils/dataclasses.py set_mixed_precision): the dtype
// parameters are all-gathered and computed in. `fp32` is set only internally: transformers' Trainer
// gives a QLoRA model with float32 bnb_4bit_quant_storage MixedPrecision(param_dtype=float32)
// (integrations/fsdp.py update_fsdp_plugin_peft).
enum class MixedPrecision { no, bf16, fp16, fp32 };
const char* mixed_precision_name(MixedPrecision m);                       // "no", "bf16", "fp16", "fp32"
std::optional<MixedPrecision> parse_mixed_precision(std::string_view s);  // exactly those names

template <class T>
struct Setting {
  T value{};
  std::string source = "default";  // "default", "FILE:LINE", "env NAME", "--flag"
};

struct FsdpSettings {
  Setting<int> world_size{8};
  Setting<int> num_machines{1};
  Setting<int> fsdp_version{1};
  Setting<ShardingStrategy> sharding_strategy{ShardingStrategy::full_shard};
  Setting<WrapPolicyKind> policy{WrapPolicyKind::transformer};
  Setting<std::vector<std::string>> wrap_classes;  // empty: the model's _no_split_modules
  Setting<std::int64_t> min_num_params{100'000'000};
  Setting<bool> use_orig_params{false};
  Setting<MixedPrecision> mixed_precision{MixedPrecision::no};
  Setting<bool> offload_params{false};
  Setting<std::optional<bool>> reshard_after_forward;  // FSDP2; nullopt = torch's default
  Setting<bool> activation_checkpointing{false};
  // torch's FSDP default; accelerate passes None unless fsdp_backward_prefetch is set.
  Setting<BackwardPrefetch> backward_prefetch{BackwardPrefetch::pre};
  Setting<Fsdp2Caller> fsdp2_caller{Fsdp2Caller::accelerate};
  // The job runs under transformers' Trainer (TRL's trainers subclass it) rather than a plain
  // accelerate loop: with a PEFT model under FSDP1 the Trainer replaces the wrap policy (`peft`).
  Setting<bool> trainer{false};
  // accelerate's ParallelismConfig (v1.10+, FSDP2 only): HSDP replicas, tensor, context and sequence
  // parallelism; dp_shard is what is left of world_size (dp_shard()).
  Setting<int> dp_replicate{1};
  Setting<int> tp_size{1};
  Setting<int> cp_size{1};  // context parallelism: FSDP2 shards over dp_shard x cp (dp_shard_cp)
  Setting<int> sp_size{1};  // sequence parallelism: its own mesh dim, outside FSDP's
  // How ring attention passes keys and values between CP ranks (accelerate TorchContextParallelConfig
  // cp_comm_strategy, given to torch's set_rotate_method): "allgather" (default) or "alltoall".
  Setting<std::string> cp_comm_strategy{"allgather"};
  // from_pretrained(..., distributed_config=DistributedConfig(enable_expert_parallel=True)): the TP
  // ranks split the model's expert-parallel plan instead of its TP plan (whole experts per rank).
  Setting<bool> expert_parallel{false};
  // plan --frozen: a regex searched in parameter FQNs, tied aliases included; a Parameter any of
  // whose names it finds is frozen (requires_grad_(False) acts on the object every name shares).
  Setting<std::string> frozen;
  // accelerate's fsdp_ignored_modules (v1.10+): a regex fullmatched against module names; the
  // matched subtrees' parameters stay whole on every rank, outside every unit.
  Setting<std::string> ignored_modules;
  // The release set (library defaults; the pipeline resolves them from flags, the job's Python
  // environment or rules/versions.yaml, shardcheck/stack_versions.hpp).
  Setting<Version> torch_version{Version{2, 9, 0}};
  Setting<Version> accelerate_version{Version{1, 14, 0}};
  Setting<Version> transformers_version{Version{5, 12, 1}};

  int gpus_per_node() const { return world_size.value / std::max(1, num_machines.value); }
  // sp_size above 1 is DeepSpeed's sequence parallelism (ALST/Ulysses, the only sp_backend accelerate
  // accepts), and from accelerate 1.13.0 on it builds no device mesh at all then (parallelism_config.py
  // build_device_mesh returns None): FSDP2 gets mesh=None and shards over every process, and no
  // dp_replicate, cp or tp group exists. 1.12.x keeps sp as a mesh dim outside FSDP's.
  bool mesh_dropped_for_sp() const { return sp_size.value > 1 && accelerate_version.value >= Version{1, 13, 0}; }
  // A mesh dim's size as the job builds it ("dp_replicate", "dp_shard", "cp", "sp", "tp"): 1 for a dim
  // the mesh does not have.
  int mesh_size(std::string_view dim) const;
  // Context-parallel ranks that split each sequence: cp_size under FSDP2 with a mesh, else 1.
  int context_parallel() const { return fsdp_version.value == 2 ? mesh_size("cp") : 1; }
  // dp_shard_size: the processes left after the replicas and the cp, sp and tp groups.
  int dp_shard() const;
  // The mesh's dims of size above 1 in accelerate's order dp_replicate, dp_shard, cp, sp, tp.
  std::vector<MeshDim> mesh_dims() const;
  // The global ranks that share `rank`'s group over the named dims (a flattened group such as
  // dp_shard_cp is {"dp_shard", "cp"}): the tp index varies fastest (build_device_mesh's row-major mesh).
  std::vector<int> mesh_group(int rank, const std::vector<std::string>& dims) const;
  // `rank`'s index along one mesh dim (0 for a dim the mesh does not have).
  int mesh_coordinate(int rank, std::string_view dim) const;
  // The size of the group a flat parameter is sharded over: the node for hybrid strategies.
  int shard_group_size() const;
  // param_dtype under accelerate's mixed precision, or nullopt (no mixed precision).
  std::optional<DType> param_dtype() const;
  // reduce_dtype: accelerate reduces in param_dtype; torchtitan and transformers' native FSDP2
  // default to MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32).
  std::optional<DType> reduce_dtype() const;
};

}  // namespace shardcheck
