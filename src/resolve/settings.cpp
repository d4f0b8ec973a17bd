#include "shardcheck/settings.hpp"

#include <algorithm>
#include <array>

namespace shardcheck {

const char* strategy_name(ShardingStrategy s) {
  switch (s) {
    case ShardingStrategy::full_shard:
      return "FULL_SHARD";
    case ShardingStrategy::shard_grad_op:
      return "SHARD_GRAD_OP";
    case ShardingStrategy::no_shard:
      return "NO_SHARD";
    case ShardingStrategy::hybrid_shard:
      return "HYBRID_SHARD";
    case ShardingStrategy::hybrid_shard_zero2:
      return "_HYBRID_SHARD_ZERO2";
  }
  return "FULL_SHARD";
}

std::optional<ShardingStrategy> parse_strategy(std::string_view s) {
  // accelerate accepts the enum name or its 1-based integer (utils/dataclasses.py
  // FullyShardedDataParallelPlugin.__post_init__, FSDP_SHARDING_STRATEGY).
  if (s == "FULL_SHARD" || s == "1") return ShardingStrategy::full_shard;
  if (s == "SHARD_GRAD_OP" || s == "2") return ShardingStrategy::shard_grad_op;
  if (s == "NO_SHARD" || s == "3") return ShardingStrategy::no_shard;
  if (s == "HYBRID_SHARD" || s == "4") return ShardingStrategy::hybrid_shard;
  if (s == "HYBRID_SHARD_ZERO2" || s == "_HYBRID_SHARD_ZERO2" || s == "5") return ShardingStrategy::hybrid_shard_zero2;
  return std::nullopt;
}

bool is_hybrid(ShardingStrategy s) {
  return s == ShardingStrategy::hybrid_shard || s == ShardingStrategy::hybrid_shard_zero2;
}

const char* policy_name(WrapPolicyKind k) {
  switch (k) {
    case WrapPolicyKind::transformer:
      return "TRANSFORMER_BASED_WRAP";
    case WrapPolicyKind::size:
      return "SIZE_BASED_WRAP";
    case WrapPolicyKind::none:
      return "NO_WRAP";
    case WrapPolicyKind::peft:
      return "PEFT_WRAP (peft fsdp_auto_wrap_policy)";
  }
  return "NO_WRAP";
}

const char* prefetch_name(BackwardPrefetch p) {
  switch (p) {
    case BackwardPrefetch::pre:
      return "BACKWARD_PRE";
    case BackwardPrefetch::post:
      return "BACKWARD_POST";
    case BackwardPrefetch::none:
      return "NO_PREFETCH";
  }
  return "NO_PREFETCH";
}

std::optional<BackwardPrefetch> parse_prefetch(std::string_view s) {
  std::string up;
  for (char c : s) up += static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  if (up == "BACKWARD_PRE" || up == "1") return BackwardPrefetch::pre;
  if (up == "BACKWARD_POST" || up == "2") return BackwardPrefetch::post;
  if (up == "NO_PREFETCH") return BackwardPrefetch::none;
  return std::nullopt;
}

const char* caller_name(Fsdp2Caller c) {
  switch (c) {
    case Fsdp2Caller::accelerate:
      return "accelerate";
    case Fsdp2Caller::torchtitan:
      return "torchtitan";
    case Fsdp2Caller::transformers:
      return "transformers";
  }
  return "accelerate";
}

std::optional<Fsdp2Caller> parse_caller(std::string_view s) {
  if (s == "accelerate") return Fsdp2Caller::accelerate;
  if (s == "torchtitan") return Fsdp2Caller::torchtitan;
  if (s == "transformers") return Fsdp2Caller::transformers;
  return std::nullopt;
}

int FsdpSettings::dp_shard() const {
  if (mesh_dropped_for_sp()) return std::max(1, world_size.value);
  const int others = std::max(1, dp_replicate.value) * std::max(1, cp_size.value) * std::max(1, sp_size.value) *
                     std::max(1, tp_size.value);
  return std::max(1, world_size.value / others);
}

int FsdpSettings::mesh_size(std::string_view dim) const {
  if (dim == "dp_shard") return dp_shard();
  if (mesh_dropped_for_sp()) return 1;
  if (dim == "dp_replicate") return std::max(1, dp_replicate.value);
  if (dim == "cp") return std::max(1, cp_size.value);
  if (dim == "sp") return std::max(1, sp_size.value);
  if (dim == "tp") return std::max(1, tp_size.value);
  return 1;
}

namespace {
// accelerate's mesh order (parallelism_config.py _get_mesh): the last dim varies fastest.
constexpr std::array<const char*, 5> kMeshOrder = {"dp_replicate", "dp_shard", "cp", "sp", "tp"};
}  // namespace

std::vector<MeshDim> FsdpSettings::mesh_dims() const {
  // build_device_mesh keeps only the enabled dims (size above 1), in this order (_get_mesh); with
  // DeepSpeed's sequence parallelism it builds none.
  std::vector<MeshDim> dims;
  if (mesh_dropped_for_sp()) return dims;
  for (const char* name : kMeshOrder)
    if (const int size = mesh_size(name); size > 1) dims.push_back(MeshDim{name, size});
  return dims;
}

std::vector<int> FsdpSettings::mesh_group(int rank, const std::vector<std::string>& dims) const {
  // Sizes in mesh order, the last varying fastest; dims of size 1 take no part.
  std::vector<std::pair<std::string, int>> order;
  for (const char* name : kMeshOrder) order.emplace_back(name, mesh_size(name));
  std::vector<int> coord(order.size()), stride(order.size());
  int s = 1;
  for (std::size_t i = order.size(); i-- > 0;) {
    stride[i] = s;
    coord[i] = (rank / s) % order[i].second;
    s *= order[i].second;
  }
  std::vector<int> group = {rank - [&] {
    int base = 0;
    for (std::size_t i = 0; i < order.size(); ++i)
      if (std::find(dims.begin(), dims.end(), order[i].first) != dims.end()) base += coord[i] * stride[i];
    return base;
  }()};
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (std::find(dims.begin(), dims.end(), order[i].first) == dims.end()) continue;
    std::vector<int> grown;
    for (int g : group)
      for (int k = 0; k < order[i].second; ++k) grown.push_back(g + k * stride[i]);
    group = std::move(grown);
  }
  std::sort(group.begin(), group.end());
  return group;
}

int FsdpSettings::mesh_coordinate(int rank, std::string_view dim) const {
  int stride = 1;
  for (std::size_t i = kMeshOrder.size(); i-- > 0;) {
    const int size = mesh_size(kMeshOrder[i]);
    if (dim == kMeshOrder[i]) return (rank / stride) % size;
    stride *= size;
  }
  return 0;
}

int FsdpSettings::shard_group_size() const {
  // FSDP2 shards over the "dp_shard_cp" mesh dimension, dp_shard flattened with cp (accelerate
  // parallelism_config.py `dp_shard_cp_dim_names`, `fsdp_dim_names`).
  if (fsdp_version.value == 2) return dp_shard() * mesh_size("cp");
  return is_hybrid(sharding_strategy.value) ? gpus_per_node() : world_size.value;
}

std::optional<DType> FsdpSettings::reduce_dtype() const {
  const auto p = param_dtype();
  if (p && fsdp_version.value == 2 && fsdp2_caller.value != Fsdp2Caller::accelerate) return DType::F32;
  return p;
}

const char* mixed_precision_name(MixedPrecision m) {
  switch (m) {
    case MixedPrecision::no:
      return "no";
    case MixedPrecision::bf16:
      return "bf16";
    case MixedPrecision::fp16:
      return "fp16";
    case MixedPrecision::fp32:
      return "fp32";
  }
  return "no";
}

std::optional<MixedPrecision> parse_mixed_precision(std::string_view s) {
  for (const MixedPrecision m : {MixedPrecision::no, MixedPrecision::bf16, MixedPrecision::fp16, MixedPrecision::fp32})
    if (s == mixed_precision_name(m)) return m;
  return std::nullopt;
}

std::optional<DType> FsdpSettings::param_dtype() const {
  switch (mixed_precision.value) {
    case MixedPrecision::bf16:
      return DType::BF16;
    case MixedPrecision::fp16:
      return DType::F16;
    case MixedPrecision::fp32:
      return DType::F32;
    case MixedPrecision::no:
      break;
  }
  return std::nullopt;
}

}  // namespace shardcheck
