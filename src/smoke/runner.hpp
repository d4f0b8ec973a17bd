#pragma once
// One rank's smoke run over a Comm: for each selected unit fill the shard, all-gather, verify every
// element; reduce-scatter rank-dependent gradients and verify the slice; then time the sweep and the
// plan's unit sizes. Counts are summed over ranks at the end, as nccl-tests sums #wrong.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "smoke/bandwidth.hpp"
#include "smoke/comm.hpp"
#include "smoke/layout.hpp"
#include "smoke/weights.hpp"

namespace shardcheck::smoke {

struct RunOptions {
  std::vector<UnitLayout> units;    // the selected units, laid out for this world size
  WeightReader* weights = nullptr;  // --weights: real bytes instead of the pattern
  int shift_rank = -1;              // test only: this rank sends its shard one element off
  std::vector<std::int64_t> sweep;  // message sizes in bytes (empty: no sweep)
  bool time_units = true;           // also time the plan's distinct unit sizes
  int warmup = 5, iters = 20;
};

struct UnitResult {
  int index = 0;
  std::string path;
  DType dtype = DType::F32;         // all-gathered
  DType reduce_dtype = DType::F32;  // reduced
  std::int64_t numel = 0, shard_numel = 0, padded_numel = 0, pad = 0;
  std::int64_t ag_wrong_real = 0, ag_wrong_pad = 0;  // summed over ranks
  std::int64_t ag_first_wrong = -1;                  // on this rank
  bool rs_ran = false;
  bool ar_ran = false;     // the replicas' all-reduce of the slice ran
  std::string rs_skipped;  // why not, when it did not run
  std::int64_t rs_wrong_real = 0, rs_wrong_pad = 0;
  std::int64_t weight_bytes_read = 0;  // summed over ranks: the shards' real bytes
  std::string ag_path, rs_path, ar_path;
};

struct RunResult {
  std::vector<UnitResult> units;
  std::vector<BandwidthRow> bandwidth;
  std::int64_t wrong_total() const;
};

RunResult run_rank(Comm& comm, const RunOptions& opt);

}  // namespace shardcheck::smoke
