#include "load/index_agreement.hpp"

#include <algorithm>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "load/safetensors_detail.hpp"

namespace shardcheck::detail {
namespace {

// Shards [first, last): does each hold exactly the names listed for it? Fills hashes[] with the
// 64-bit hash of every tensor name of those shards, at offsets given by `tensor_base`.
bool shards_agree(std::span<const ShardListing> listed, std::span<const std::size_t> listed_begin,
                  std::span<const SafetensorsFile* const> files, std::span<const std::span<const std::uint64_t>> known,
                  std::span<const std::size_t> tensor_base, std::size_t first, std::size_t last,
                  std::span<std::uint64_t> hashes) {
  NameTable table;
  std::vector<std::uint8_t> hit;
  for (std::size_t s = first; s < last; ++s) {
    const auto& tensors = files[s]->tensors;
    auto name_of = [&tensors](std::uint32_t t) { return std::string_view(tensors[t].name); };
    table.reset(tensors.size());
    const bool have = s < known.size() && known[s].size() == tensors.size();
    for (std::uint32_t t = 0; t < tensors.size(); ++t) {
      const std::uint64_t h = have ? known[s][t] : NameTable::hash64(tensors[t].name);
      hashes[tensor_base[s] + t] = h;
      if (!table.try_emplace_hashed(tensors[t].name, NameTable::fold(h), t, name_of).second)
        return false;  // never: headers drop repeats
    }
    hit.assign(tensors.size(), 0);
    for (std::size_t l = listed_begin[s]; l < listed_begin[s + 1]; ++l) {
      const auto t = table.find_hashed(listed[l].tensor, listed[l].hash, name_of);
      if (!t || hit[*t]) return false;  // not in this shard, or listed twice for it
      hit[*t] = 1;
    }
    // As many listings as tensors, each a different tensor: every tensor is listed.
  }
  return true;
}

// No two equal values, decided by bucketing on the top bits (one counting pass; about one value
// per bucket) and comparing within buckets.
bool all_distinct(std::span<const std::uint64_t> values, std::pmr::memory_resource* memory) {
  int bits = 4;
  while (bits < 20 && (std::size_t{1} << bits) < values.size()) ++bits;
  const int shift = 64 - bits;
  std::pmr::vector<std::uint32_t> start((std::size_t{1} << bits) + 1, 0, memory);
  for (std::uint64_t v : values) ++start[(v >> shift) + 1];
  for (std::size_t b = 1; b < start.size(); ++b) start[b] += start[b - 1];
  std::pmr::vector<std::uint64_t> sorted(values.size(), memory);
  std::pmr::vector<std::uint32_t> fill(start.begin(), start.end() - 1, memory);
  for (std::uint64_t v : values) sorted[fill[v >> shift]++] = v;
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

  // Listings grouped by shard (a counting sort, document order kept within a shard); a shard
  // whose count differs from its tensor count disagrees already.
  std::pmr::vector<std::size_t> listed_begin(shards + 1, 0, memory);
  for (const ShardListing& l : listings) {
    if (l.shard >= shards) return false;
    ++listed_begin[l.shard + 1];
  }
  std::pmr::vector<std::size_t> tensor_base(shards + 1, 0, memory);
  for (std::size_t s = 0; s < shards; ++s) {
    if (listed_begin[s + 1] != files[s]->tensors.size()) return false;
    listed_begin[s + 1] += listed_begin[s];
    tensor_base[s + 1] = tensor_base[s] + files[s]->tensors.size();
  }
  std::pmr::vector<ShardListing> listed(listings.size(), memory);
  {
    std::pmr::vector<std::size_t> fill(listed_begin.begin(), listed_begin.end() - 1, memory);
    for (const ShardListing& l : listings) listed[fill[l.shard]++] = l;
  }

  // Shards split by tensor count over two threads.
  std::pmr::vector<std::uint64_t> hashes(tensor_base[shards], memory);
  std::size_t split = 0;
  while (split < shards && tensor_base[split] * 2 < tensor_base[shards]) ++split;
  bool second_ok = true;
  std::optional<std::jthread> helper;
  // A second thread pays off only for a large checkpoint (thread start ~0.1 ms).
  if (tensor_base[shards] >= 4096 && std::thread::hardware_concurrency() > 1 && split > 0 && split < shards) {
    try {
      helper.emplace([&] { second_ok = shards_agree(listed, listed_begin, files, name_hashes, tensor_base, split, shards, hashes); });
    } catch (const std::system_error&) {
    }
  }
  const bool first_ok =
      shards_agree(listed, listed_begin, files, name_hashes, tensor_base, 0, helper ? split : shards, hashes);
  if (helper) helper.reset();  // joins
  if (!first_ok || !second_ok) return false;
  // Per shard the names agree; a name held by two shards would be listed twice. 
  return all_distinct(hashes, memory);
}

}  // namespace shardcheck::detail
