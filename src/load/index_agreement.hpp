#pragma once
// The common case of the index cross-check, decided cheaply: do the index and the shard headers
// agree exactly? Used by checkpoint_index.cpp before it runs the full check, which names every
// disagreement (IX007, IX010-IX012) but costs two lookups per tensor in a table of all names.
//
// Why: for DeepSeek-V3 those 184k lookups into a 92k-name table were a third of `inspect`'s CPU
// time, nearly all of it waiting on memory. Checked shard by shard, each table holds one shard's
// ~560 names and stays in cache; the one global fact left (no name in two shards) is settled
// with 64-bit hashes, bucketed by their top bits.

#include <cstdint>
#include <memory_resource>
#include <span>
#include <string_view>

#include "shardcheck/checkpoint.hpp"

namespace shardcheck::detail {

struct ShardListing {
  std::string_view tensor;  // a weight_map key
  std::uint32_t shard;      // which shard the index names for it (an index into `files` below)
  // util::NameTable::hash(tensor), taken while the index is scanned and the name is in cache;
  // the agreement check would otherwise read all 9 MB of DeepSeek-V3's index text again.
  std::uint32_t hash = 0;
};

// True only when, for every shard s, the tensors listed for s are exactly the tensors files[s]
// holds, and no tensor name is listed twice or held by two shards: then the full cross-check can
// find nothing. False when a shard was not read (nullptr), when anything disagrees, or (about
// once in 2^64 pairs of names) when two names share a 64-bit hash; the caller then runs the full
// check, so the answer is never wrong, at worst slow. Uses up to two threads.
// `name_hashes[s]`, when not empty, holds util::NameTable::hash64 of each of files[s]'s tensor
// names, as the header reader computed them for its duplicate check.
bool index_agrees_with_headers(std::span<const ShardListing> listings, std::span<const SafetensorsFile* const> files,
                               std::span<const std::span<const std::uint64_t>> name_hashes,
                               std::pmr::memory_resource* memory);

}  // namespace shardcheck::detail
