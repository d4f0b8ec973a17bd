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

ListingFingerprint FingerprintBuilder::finish(std::span<const std::uint32_t> final_id, std::size_t shard_count) && {
  ListingFingerprint out{std::pmr::vector<ListingFingerprint::Shard>(shard_count, memory_), false};
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    if (shards_[s].count == 0) continue;
    if (s >= final_id.size() || final_id[s] >= shard_count) return out;
    ListingFingerprint::Shard& to = out.shards[final_id[s]];
    to.count += shards_[s].count;
    to.sum += shards_[s].sum;
  }
  const std::span<const std::uint64_t> all(hashes_);
  out.valid = all_distinct(std::span(&all, 1), hashes_.size(), memory_);
  return out;
}

ListingFingerprint fingerprint_listings(std::span<const ShardListing> listings, std::size_t shard_count,
                                        std::pmr::memory_resource* memory) {
  FingerprintBuilder builder(listings.size(), memory);
  for (const ShardListing& l : listings) {
    if (l.shard >= shard_count)  // a shard not among `files`: never agrees
      return ListingFingerprint{std::pmr::vector<ListingFingerprint::Shard>(shard_count, memory), false};
    builder.add(l.shard, l.hash);
  }
  std::vector<std::uint32_t> identity(shard_count);
  for (std::uint32_t s = 0; s < identity.size(); ++s) identity[s] = s;
  return std::move(builder).finish(identity, shard_count);
}

bool index_agrees_with_headers(const ListingFingerprint& listed, std::span<const SafetensorsFile* const> files,
                               std::span<const std::span<const std::uint64_t>> name_hashes) {
  if (!listed.valid || listed.shards.size() != files.size()) return false;
  for (std::size_t s = 0; s < files.size(); ++s) {
    if (!files[s]) return false;
    const auto& tensors = files[s]->tensors;
    if (listed.shards[s].count != tensors.size()) return false;
    // The held names' hashes: the header reader's when it passed them, else taken here.
    std::uint64_t sum = 0;
    if (s < name_hashes.size() && name_hashes[s].size() == tensors.size())
      for (std::uint64_t h : name_hashes[s]) sum += h;
    else
      for (const TensorInfo& t : tensors) sum += NameTable::hash64(t.name);
    if (sum != listed.shards[s].sum) return false;
  }
  return true;
}

bool index_agrees_with_headers(std::span<const ShardListing> listings, std::span<const SafetensorsFile* const> files,
                               std::span<const std::span<const std::uint64_t>> name_hashes,
                               std::pmr::memory_resource* memory) {
  return index_agrees_with_headers(fingerprint_listings(listings, files.size(), memory), files, name_hashes);
}

}  // namespace shardcheck::detail
