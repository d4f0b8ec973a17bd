#pragma once
// nccl-tests conventions (NVIDIA/nccl-tests src/all_gather.cu, src/reduce_scatter.cu,
// src/all_reduce.cu, doc/PERFORMANCE.md): for all-gather and reduce-scatter size = count per rank x
// element size x ranks (the gathered output / the reduce-scatter input) and busbw = algbw x (n-1)/n;
// for all-reduce size = count x element size and busbw = algbw x 2(n-1)/n; algbw = size / time,
// GB = 1e9 bytes. Sweep sizes from -b to -e multiplied by -f, suffixes K/M/G as powers of 1024.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "smoke/comm.hpp"

namespace shardcheck::smoke {

double algbw_gbps(std::int64_t bytes, double seconds);
double busbw_gbps(double algbw, int ranks);  // all-gather, reduce-scatter
double busbw_gbps(Collective c, double algbw, int ranks);
// "32M", "1G", "512K", "4096" -> bytes (nccl-tests `parsesize`).
std::optional<std::int64_t> parse_nccl_size(const std::string& text);
// min, min*f, min*f^2, ... <= max; error text on nonsense (min > max, f < 2 with min < max).
std::vector<std::int64_t> sweep_sizes(std::int64_t min, std::int64_t max, int factor, std::string& error);
// Elements each rank contributes for a total size; 0 when the size is below one element per rank.
std::int64_t count_per_rank(std::int64_t size_bytes, int ranks, int element_bytes);

struct BandwidthRow {
  Collective collective = Collective::all_gather;
  std::string source;      // "sweep" or the unit's path
  std::int64_t size = 0;   // bytes, nccl-tests "size"
  std::int64_t count = 0;  // elements per rank (all-reduce: in the buffer)
  int ranks = 1;           // the group the collective ran in
  DType type = DType::F32;
  double seconds = 0;           // mean per op, averaged over ranks (nccl-tests -a 1)
  double algbw = 0, busbw = 0;  // GB/s
  std::int64_t wrong = 0;       // elements wrong summed over ranks (checked once per size)
};

double average_busbw(const std::vector<BandwidthRow>& rows);
const char* collective_name(Collective c);

}  // namespace shardcheck::smoke
