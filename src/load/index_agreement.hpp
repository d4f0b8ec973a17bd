#pragma once
// The common case of the index cross-check, decided cheaply: do the index and the shard headers
// agree exactly? Used by checkpoint_index.cpp before it runs the full check, which names every
// disagreement (IX007, IX010-IX012) but costs two lookups per tensor in a table of all names.
//
// Why: for DeepSeek-V3 (92k tensors in 163 shards) the exact check, even shard by shard in
// tables that stay in cache, was ~4 ms of CPU at the end of the load, on its critical path. Here
// each shard is compared by its count of names and the sum of their 64-bit hashes, both taken
// while the names were in cache anyway (the index scan, the header's duplicate check), and the
// one global fact left (no name in two shards) is settled with the same hashes, bucketed by
// their top bits: linear, a few hundred microseconds.

#include <cstdint>
#include <memory_resource>
#include <span>
#include <string_view>
#include <vector>

#include "shardcheck/checkpoint.hpp"

namespace shardcheck::detail {

struct ShardListing {
  std::string_view tensor;  // a weight_map key
  std::uint32_t shard;      // which shard the index names for it (an index into `files` below)
  // util::NameTable::hash64(tensor), taken while the index is scanned and the name is in cache;
  // the agreement check would otherwise read all 9 MB of DeepSeek-V3's index text again.
  std::uint64_t hash = 0;
};

// What the index alone contributes to the verdict below: each shard's count of listed names and
// the sum of their hashes, and whether all listed hashes are distinct. Computed as soon as the
// index is scanned, while the shard headers are still being read, so that the end of the load
// only compares per-shard sums.
struct ListingFingerprint {
  struct Shard {
    std::size_t count = 0;
    std::uint64_t sum = 0;  // wraps: a sum mod 2^64
  };
  std::pmr::vector<Shard> shards;
  bool valid = false;  // every listing names a shard below `shard_count` and all hashes differ
};
ListingFingerprint fingerprint_listings(std::span<const ShardListing> listings, std::size_t shard_count,
                                        std::pmr::memory_resource* memory);

// The same, taken during the index scan itself, listing by listing, so that the scan need not keep
// the listings at all (92k rows of DeepSeek-V3, written and read again, were a fifth of the scan).
// Shard ids are the scan's own (any numbering below 2^32); finish() maps them to the final ones.
class FingerprintBuilder {
 public:
  FingerprintBuilder(std::size_t expected_listings, std::pmr::memory_resource* memory)
      : shards_(memory), hashes_(memory), memory_(memory) {
    hashes_.reserve(expected_listings);
  }
  void add(std::uint32_t shard, std::uint64_t hash) {
    if (shard >= shards_.size()) shards_.resize(std::size_t{shard} + 1);
    shards_[shard].count += 1;
    shards_[shard].sum += hash;
    hashes_.push_back(hash);
  }
  // `final_id[s]`: the id among `shard_count` shards (an index into the agreement's `files`) of
  // the scan's shard s. Not valid when an id has no final id, or two listed hashes are equal.
  ListingFingerprint finish(std::span<const std::uint32_t> final_id, std::size_t shard_count) &&;

 private:
  std::pmr::vector<ListingFingerprint::Shard> shards_;
  std::pmr::vector<std::uint64_t> hashes_;
  std::pmr::memory_resource* memory_;
};

// True when, for every shard s, the tensors listed for s are the tensors files[s] holds, and no
// tensor name is listed twice or held by two shards: then the full cross-check would find
// nothing. Each shard's listed and held names are compared as multisets by count and by the sum
// (mod 2^64) of their 64-bit hashes, so a true answer is wrong only if two different sets of
// names of one shard have equal sums, about once in 2^64 for names not built to collide; every
// disagreement a real checkpoint has (a name missing, extra, repeated or in the wrong shard)
// changes the sum. No name is held by two shards once the listed names are distinct and every
// shard's sums agree (a name held twice is missing from one shard's listing, so that shard's sum
// differs). False when a shard was not read (nullptr) or anything disagrees, and (about once in
// 2^64 pairs of names) when two names share a hash: the caller then runs the full check, which is
// exact. `name_hashes[s]`, when not empty, holds util::NameTable::hash64 of each of files[s]'s
// tensor names, as the header reader computed them for its duplicate check.
bool index_agrees_with_headers(const ListingFingerprint& listed, std::span<const SafetensorsFile* const> files,
                               std::span<const std::span<const std::uint64_t>> name_hashes);

// Both steps at once.
bool index_agrees_with_headers(std::span<const ShardListing> listings, std::span<const SafetensorsFile* const> files,
                               std::span<const std::span<const std::uint64_t>> name_hashes,
                               std::pmr::memory_resource* memory);

}  // namespace shardcheck::detail
