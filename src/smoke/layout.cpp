#include "smoke/layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace shardcheck::smoke {

std::int64_t UnitLayout::real_elements() const {
  std::int64_t n = 0;
  for (const auto& segs : ranks)
    for (const auto& s : segs)
      if (s.param >= 0) n += s.numel;
  return n;
}

int element_bytes(DType d) {
  const int bits = dtype_bits(d);
  return bits % 8 == 0 ? bits / 8 : 0;
}

namespace {

// FSDP1: the flat parameter is the slot list; rank r owns [r*S, (r+1)*S) of it and everything past
// the last slot is the zero right-padding F.pad adds to the last shards.
bool fsdp1_segments(const ShardUnit& u, UnitLayout& out, std::string& error) {
  std::vector<Segment> flat;
  std::int64_t cursor = 0;
  for (const auto& slot : u.layout) {
    if (slot.offset != cursor) {
      error = fmt::format("unit '{}': slot '{}' starts at {} but the previous slot ended at {}", u.path, slot.fqn,
                          slot.offset, cursor);
      return false;
    }
    Segment s{slot.offset, slot.numel, -1, 0};
    if (!slot.padding) {
      auto it = std::find(out.params.begin(), out.params.end(), slot.fqn);
      if (it == out.params.end()) {
        error = fmt::format("unit '{}': layout slot '{}' is not one of the unit's parameters", u.path, slot.fqn);
        return false;
      }
      s.param = static_cast<int>(it - out.params.begin());
    }
    flat.push_back(s);
    cursor += slot.numel;
  }
  if (cursor > out.padded_numel) {
    error = fmt::format("unit '{}': the layout holds {} elements, more than padded_numel {}", u.path, cursor,
                        out.padded_numel);
    return false;
  }
  if (cursor < out.padded_numel) flat.push_back(Segment{cursor, out.padded_numel - cursor, -1, 0});
  const std::int64_t S = out.shard_numel;
  for (int r = 0; r < out.world; ++r) {
    const std::int64_t lo = r * S, hi = lo + S;
    for (const auto& s : flat) {
      const std::int64_t a = std::max(lo, s.offset), b = std::min(hi, s.offset + s.numel);
      if (a >= b) continue;
      out.ranks[r].push_back(Segment{a, b - a, s.param, s.param < 0 ? 0 : s.param_offset + (a - s.offset)});
    }
  }
  return true;
}

// FSDP2: per parameter, pad0 = ceil(d0 / W) rows on every rank; rank r holds rows
// [r*pad0, min(d0, (r+1)*pad0)) and zero rows up to pad0 (_fsdp_param.py `_chunk_with_empty`).
bool fsdp2_segments(const ShardUnit& u, UnitLayout& out, std::string& error) {
  std::int64_t per_rank = 0;
  for (const auto& ps : u.shards) {
    per_rank += ps.rows_per_rank * ps.row_numel;  // each term < 2^42 (plan_reader.cpp's bounds)
    if (per_rank > out.shard_numel) break;        // so the sum cannot overflow either
  }
  if (per_rank != out.shard_numel) {
    error = fmt::format("unit '{}': parameter chunks add up to {} elements per rank, shard_numel is {}", u.path,
                        per_rank, out.shard_numel);
    return false;
  }
  for (int r = 0; r < out.world; ++r) {
    std::int64_t offset = r * out.shard_numel;
    for (std::size_t i = 0; i < u.shards.size(); ++i) {
      const auto& ps = u.shards[i];
      const std::int64_t numel = out.param_numels[i];
      if (ps.row_numel <= 0 || numel % ps.row_numel != 0) {
        error = fmt::format("unit '{}': parameter '{}' has {} elements, not a multiple of its row size {}", u.path,
                            ps.fqn, numel, ps.row_numel);
        return false;
      }
      const std::int64_t d0 = numel / ps.row_numel;
      const std::int64_t rows = std::clamp(d0 - r * ps.rows_per_rank, std::int64_t{0}, ps.rows_per_rank);
      if (rows > 0)
        out.ranks[r].push_back(
            Segment{offset, rows * ps.row_numel, static_cast<int>(i), r * ps.rows_per_rank * ps.row_numel});
      const std::int64_t pad = (ps.rows_per_rank - rows) * ps.row_numel;
      if (pad > 0) out.ranks[r].push_back(Segment{offset + rows * ps.row_numel, pad, -1, 0});
      offset += ps.rows_per_rank * ps.row_numel;
    }
  }
  return true;
}

}  // namespace

UnitLayout unit_layout(const ShardUnit& u, int index, int fsdp_version, int world, std::string& error) {
  UnitLayout out;
  out.index = index;
  out.path = u.path;
  out.dtype = u.compute_dtype;
  out.reduce_dtype = u.reduce_dtype;
  out.world = world;
  out.fsdp_version = fsdp_version;
  out.requires_grad = u.requires_grad;
  out.numel = u.numel;
  out.shard_numel = u.shard_numel;
  out.padded_numel = u.padded_numel;
  out.ranks.resize(world);
  if (fsdp_version == 2) {
    for (const auto& ps : u.shards) out.params.push_back(ps.fqn);
    out.param_numels = u.param_numels;
    if (out.param_numels.size() != out.params.size()) {
      error = fmt::format("unit '{}': {} parameter shards but {} parameter sizes", u.path, out.params.size(),
                          out.param_numels.size());
      return out;
    }
  } else {
    out.params = u.params;
    out.param_numels = u.param_numels;
  }
  if (out.padded_numel != static_cast<std::int64_t>(world) * out.shard_numel) {
    error = fmt::format("unit '{}': padded_numel {} is not world size {} x shard_numel {}", u.path, out.padded_numel,
                        world, out.shard_numel);
    return out;
  }
  const bool ok = fsdp_version == 2 ? fsdp2_segments(u, out, error) : fsdp1_segments(u, out, error);
  if (ok && out.real_elements() != out.numel) {
    error = fmt::format("unit '{}': the layout places {} real elements, the unit has {}", u.path, out.real_elements(),
                        out.numel);
  }
  return out;
}

std::vector<int> select_units(const std::vector<std::int64_t>& padded_bytes, int largest, int sample) {
  std::vector<int> candidates;
  for (int i = 0; i < static_cast<int>(padded_bytes.size()); ++i)
    if (padded_bytes[i] > 0) candidates.push_back(i);
  if (largest < 0 || largest + sample >= static_cast<int>(candidates.size())) return candidates;
  std::vector<int> by_size = candidates;
  // Ties go to the earlier unit so every rank (and every run) picks the same set.
  std::stable_sort(by_size.begin(), by_size.end(), [&](int a, int b) { return padded_bytes[a] > padded_bytes[b]; });
  std::vector<int> chosen(by_size.begin(), by_size.begin() + largest);
  std::vector<int> rest(by_size.begin() + largest, by_size.end());
  std::sort(rest.begin(), rest.end());
  // Evenly spaced picks over the remaining units in plan order: deterministic, covers the range.
  for (int k = 0; k < sample && !rest.empty(); ++k)
    chosen.push_back(rest[static_cast<std::size_t>(k) * rest.size() / static_cast<std::size_t>(sample)]);
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  return chosen;
}

}  // namespace shardcheck::smoke
