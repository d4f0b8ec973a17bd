#include "load/index_agreement.hpp"

#include <algorithm>
#include <vector>

#include "load/safetensors_detail.hpp"

namespace shardcheck::detail {
namespace {

// No two equal values among all of `parts`, decided by bucketing on the top bits (one counting
// pass; about one value per bucket) and comparing within buckets.
bool all_distinct(std::span<const std::span<const std::uint64_t>> parts, std::size_t count,
                  std::pmr::memory_resource* memory) {
  int bits = 4;
  while (bits < 20 && (std::size_t{1} << bits) < count) ++bits;
  const int shift = 64 - bits;
  std::pmr::vector<std::uint32_t> start((std::size_t{1} << bits) + 1, 0, memory);
  for (const auto& part : parts)
    for (std::uint64_t v : part) ++start[(v >> shift) + 1];
  for (std::size_t b = 1; b < start.size(); ++b) start[b] += start[b - 1];
  std::pmr::vector<std::uint64_t> sorted(count, memory);
  std::pmr::vector<std::uint32_t> fill(start.begin(), start.end() - 1, memory);
  for (const auto& part : parts)
    for (std::uint64_t v : part) sorted[fill[v >> shift]++] = v;
  for (std::size_t b = 0; b + 1 < start.size(); ++b) {
    const auto begin = sorted.begin() + start[b], end = sorted.begin() + start[b + 1];
    if (end - begin < 2) continue;
    std::sort(begin, end);
    if (std::adjacent_find(begin, end) != end) return false;
  }
  return true;
}

}  // namespace

bool index_agrees_with_headers(std::span<const ShardListing> listings, std::span<const SafetensorsFile* const> files,
                               std::span<const std::span<const std::uint64_t>> name_hashes,
                               std::pmr::memory_resource* memory) {
  const std::size_t shards = files.size();
  if (std::any_of(files.begin(), files.end(), [](const SafetensorsFile* f) { return f == nullptr; })) return false;

  struct Fingerprint {
    std::size_t count = 0;
    std::uint64_t sum = 0;  // wraps: a sum mod 2^64
  };
  std::pmr::vector<Fingerprint> listed(shards, memory);
  for (const ShardListing& l : listings) {
    if (l.shard >= shards) return false;
    listed[l.shard].count += 1;
    listed[l.shard].sum += l.hash;
  }

  // The held names' hashes, shard by shard: the header reader's when it passed them, else taken here.
  std::pmr::vector<std::span<const std::uint64_t>> held(shards, memory);
  std::pmr::vector<std::pmr::vector<std::uint64_t>> computed(memory);
  computed.reserve(shards);  // held[] points into its elements
  std::size_t total = 0;
  for (std::size_t s = 0; s < shards; ++s) {
    const auto& tensors = files[s]->tensors;
    if (listed[s].count != tensors.size()) return false;
    if (s < name_hashes.size() && name_hashes[s].size() == tensors.size()) {
      held[s] = name_hashes[s];
    } else {
      auto& mine = computed.emplace_back();
      mine.reserve(tensors.size());
      for (const TensorInfo& t : tensors) mine.push_back(NameTable::hash64(t.name));
      held[s] = mine;
    }
    std::uint64_t sum = 0;
    for (std::uint64_t h : held[s]) sum += h;
    if (sum != listed[s].sum) return false;
    total += tensors.size();
  }
  // Per shard the names agree; a name held by two shards would be listed twice.
  return all_distinct(held, total, memory);
}

}  // namespace shardcheck::detail
