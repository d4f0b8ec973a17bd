#pragma once
// The fast path of the index reader: model.safetensors.index.json in the plain form writers
// produce (transformers' save_pretrained, huggingface_hub's split_torch_state_dict_into_shards):
//   {"metadata": {"total_size": N, ...}, "weight_map": {"tensor": "shard file", ...}}
// with strings free of escapes, metadata values that are plain strings, integers or literals.
// Anything else, valid or not, goes to the full parser in checkpoint_index.cpp, which accepts or
// reports it (load/plain_json.hpp).

#include <cstdint>
#include <optional>
#include <string_view>

#include "load/plain_json.hpp"

namespace shardcheck::detail {

// Calls on_listing(tensor, shard) for each weight_map entry in document order; a false return
// abandons the scan. Sets total_size from metadata.total_size when present. False when the text
// is not plain (or was abandoned): the caller then discards what it collected.
template <class OnListing>
bool scan_plain_index(std::string_view text, std::optional<std::uint64_t>& total_size, OnListing&& on_listing) {
  PlainJson in(text.data(), text.data() + text.size());
  total_size.reset();
  bool seen_metadata = false, seen_weight_map = false;
  auto scalar = [&in] {
    std::string_view s;
    std::uint64_t n;
    return in.string(s) || in.uint(n) || in.literal();
  };
  if (!in.eat('{')) return false;
  do {
    std::string_view key;
    if (!in.string(key) || !in.eat(':')) return false;
    if (key == "weight_map") {
      if (seen_weight_map || !in.eat('{')) return false;
      seen_weight_map = true;
      if (in.eat('}')) continue;
      do {
        std::string_view tensor, shard;
        if (!in.string(tensor) || !in.eat(':') || !in.string(shard) || shard.empty()) return false;
        if (!on_listing(tensor, shard)) return false;
      } while (in.eat(','));
      if (!in.eat('}')) return false;
    } else if (key == "metadata") {
      if (seen_metadata || !in.eat('{')) return false;
      seen_metadata = true;
      if (in.eat('}')) continue;
      do {
        std::string_view field;
        if (!in.string(field) || !in.eat(':')) return false;
        if (field == "total_size") {
          std::uint64_t bytes;
          if (total_size || !in.uint(bytes)) return false;
          total_size = bytes;
        } else if (!scalar()) {
          return false;
        }
      } while (in.eat(','));
      if (!in.eat('}')) return false;
    } else if (!scalar()) {
      return false;
    }
  } while (in.eat(','));
  return in.eat('}') && in.at_end() && seen_weight_map;
}

}  // namespace shardcheck::detail
