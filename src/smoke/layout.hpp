#pragma once
// Where every element of a unit's all-gather buffer comes from: for each rank, its shard as a list
// of segments of real parameter elements or padding, in the coordinates of the padded unsharded
// buffer that the all-gather fills (FSDP1 FlatParameter / FSDP2 flat all-gather output).
// Pure arithmetic over the ShardPlan; no torch.

#include <cstdint>
#include <string>
#include <vector>

#include "shardcheck/dtype.hpp"
#include "shardcheck/shard_plan.hpp"

namespace shardcheck::smoke {

struct Segment {
  std::int64_t offset = 0;  // in the padded unsharded (all-gather output) buffer
  std::int64_t numel = 0;
  int param = -1;                 // index into UnitLayout::params; -1 = padding
  std::int64_t param_offset = 0;  // first element inside that parameter (row-major)
};

struct UnitLayout {
  int index = 0;  // position in ShardPlan::units
  std::string path;
  DType dtype = DType::F32;         // what the all-gather carries (the plan's compute dtype)
  DType reduce_dtype = DType::F32;  // what the gradient reduction sums
  int world = 1;                    // S: the shard group the unit is sharded over
  int replicas = 1;                 // R: shard groups whose gradients are all-reduced (HSDP, NO_SHARD)
  int tp_rank = 0;                  // the TP rank whose pieces the unit holds (its pattern differs per TP rank)
  int fsdp_version = 1;
  bool requires_grad = true;
  std::int64_t numel = 0;         // real elements
  std::int64_t shard_numel = 0;   // S: every rank's shard, padding included
  std::int64_t padded_numel = 0;  // W * S
  std::vector<std::string> params;
  std::vector<std::int64_t> param_numels;
  std::vector<std::vector<Segment>> ranks;  // ranks[r] covers [r*S, (r+1)*S) without gaps

  std::int64_t pad_elements() const { return padded_numel - real_elements(); }
  std::int64_t real_elements() const;
};

// FSDP1: the FlatParameter's slots (alignment / world-size padding included) chunked into W equal
// shards, the last ones right-padded (torch/distributed/fsdp/flat_param.py `_get_shard`, all
// versions). FSDP2: each rank's all-gather input is the concatenation of every parameter's padded
// dim-0 chunk (torch/distributed/_composable/fsdp/_fsdp_param_group.py `foreach_all_gather`, 2.4+),
// so rank r's block sits at r * sum(pad0_i * rest_i). Returns an error text on an inconsistent unit.
UnitLayout unit_layout(const ShardUnit& u, int index, int fsdp_version, int world, std::string& error);

// Bytes per element; 0 for sub-byte packed kinds (F4, F6_*), which no collective carries alone.
int element_bytes(DType d);

// The units a run covers: all of them, or the K largest (by padded bytes) plus `sample` others
// spread evenly over the rest, in plan order. Units without parameters are never selected.
std::vector<int> select_units(const std::vector<std::int64_t>& padded_bytes, int largest, int sample);

}  // namespace shardcheck::smoke
