#pragma once
// Bytes of the buffers one unit (FSDP1) or group (FSDP2) allocates in a step: the one home of these
// counts for the memory estimate and the step replay (not public API).

#include <cstdint>

#include "shardcheck/shard_plan.hpp"

namespace shardcheck::unit_bytes {

inline std::uint64_t of(std::int64_t numel, DType d) {
  return static_cast<std::uint64_t>(numel) * static_cast<std::uint64_t>(dtype_bits(d)) / 8;
}

inline bool is_root(const ShardUnit& u) { return u.module == 0; }

// Unsharded bytes of a unit while it computes (the all-gather output, padding included).
inline std::uint64_t unsharded(const ShardPlan& plan, const ShardUnit& u) {
  if (u.params.empty()) return 0;
  if (plan.fsdp_version == 1 && plan.strategy == ShardingStrategy::no_shard)
    return u.compute_dtype != u.dtype ? of(u.numel, u.compute_dtype) : 0;  // the low-precision copy only
  return of(u.padded_numel, u.compute_dtype);
}

// Gradient temporaries of one unit in its post-backward: unsharded gradient in the compute dtype, its
// cast to the reduce dtype, the padded reduce-scatter input, the reduce-scatter output (FSDP1
// _runtime_utils.py _reduce_grad; FSDP2 _fsdp_collectives.py foreach_reduce, torch 2.14.1).
inline std::uint64_t grad_temps(const ShardPlan& plan, const ShardUnit& u) {
  if (!u.gets_grad || u.params.empty()) return 0;
  if (plan.fsdp_version == 2) {
    // Per parameter that trains: its unsharded gradient (real rows), then one flat reduce-scatter input
    // of every padded piece and its output, in the reduce dtype (foreach_reduce_scatter_copy_in).
    std::uint64_t unsharded_grads = 0, rs_in = 0, rs_out = 0;
    const int w = plan.shard_group;
    for (const auto& ps : u.shards) {
      if (!ps.gets_grad) continue;
      const std::int64_t rows = ps.shape.empty() ? 1 : ps.shape.front();
      unsharded_grads += of(rows * ps.row_numel, u.compute_dtype);
      rs_in += of(ps.rows_per_rank * w * ps.row_numel, u.reduce_dtype);
      rs_out += of(ps.rows_per_rank * ps.row_numel, u.reduce_dtype);
    }
    return unsharded_grads + (w > 1 ? rs_in + rs_out : 0);
  }
  std::uint64_t t = of(u.numel, u.compute_dtype);
  if (u.reduce_dtype != u.compute_dtype) t += of(u.numel, u.reduce_dtype);
  if (plan.strategy != ShardingStrategy::no_shard) {
    if (u.padded_numel != u.numel) t += of(u.padded_numel, u.reduce_dtype);
    t += of(u.shard_numel, u.reduce_dtype);
  }
  return t;
}

// The unsharded gradient alone (what no_sync keeps between micro-batches).
inline std::uint64_t unsharded_grad(const ShardPlan& plan, const ShardUnit& u) {
  if (!u.gets_grad || u.params.empty()) return 0;
  if (plan.fsdp_version == 2) {
    std::uint64_t g = 0;
    for (const auto& ps : u.shards)
      if (ps.gets_grad) g += of((ps.shape.empty() ? 1 : ps.shape.front()) * ps.row_numel, u.compute_dtype);
    return g;
  }
  return of(u.numel, u.compute_dtype);
}

// The sharded gradient a unit keeps on one rank after its reduce-scatter (until zero_grad).
inline std::uint64_t sharded_grad(const ShardPlan& plan, const ShardUnit& u) {
  if (!u.gets_grad || u.params.empty()) return 0;
  if (plan.fsdp_version == 2) {
    std::uint64_t g = 0;
    for (const auto& ps : u.shards)
      if (ps.gets_grad) g += of(ps.rows_per_rank * ps.row_numel, ps.dtype);
    return g;
  }
  return of(u.shard_numel, u.dtype);
}

}  // namespace shardcheck::unit_bytes
