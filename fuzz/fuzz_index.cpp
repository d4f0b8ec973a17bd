// libFuzzer harness for the plain one-pass reader of model.safetensors.index.json
// (src/load/index_scan.hpp), differential against simdjson's DOM, which the loader falls back to.
//
// Whenever the plain scan accepts a text, the DOM must accept it too and read the same thing: the
// same weight_map entries in the same order (each value a non-empty string), and the same
// metadata.total_size as a 64-bit integer, or none. Beyond that, no crash, no hang, no read out of
// bounds (ASan/UBSan). Seeds: the fixtures' index files.

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "load/index_scan.hpp"

namespace {

[[noreturn]] void invariant_broken() { __builtin_trap(); }

using Listings = std::vector<std::pair<std::string_view, std::string_view>>;

// What the loader's DOM path reads from the same text, when it is usable there.
void check_against_dom(std::string_view text, const Listings& listed, std::optional<std::uint64_t> total_size) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(text.data(), text.size()).get(root)) invariant_broken();
  simdjson::dom::object top, map;
  if (root.get_object().get(top) || top["weight_map"].get_object().get(map)) invariant_broken();
  std::size_t i = 0;
  for (simdjson::dom::key_value_pair kv : map) {
    std::string_view shard;
    if (i >= listed.size() || kv.value.get_string().get(shard) || shard.empty()) invariant_broken();
    if (kv.key != listed[i].first || shard != listed[i].second) invariant_broken();
    ++i;
  }
  if (i != listed.size()) invariant_broken();
  std::optional<std::uint64_t> dom_total;
  simdjson::dom::object metadata;
  if (!top["metadata"].get_object().get(metadata)) {
    simdjson::dom::element value;
    if (!metadata["total_size"].get(value)) {
      std::uint64_t bytes;
      if (value.get_uint64().get(bytes)) invariant_broken();
      dom_total = bytes;
    }
  }
  if (dom_total != total_size) invariant_broken();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The scan reads in 16-byte steps and needs readable padding after the text, as the loader's
  // buffers have (simdjson's 64 bytes).
  std::string padded(reinterpret_cast<const char*>(data), size);
  padded.append(simdjson::SIMDJSON_PADDING, '\0');
  const std::string_view text(padded.data(), size);
  Listings listed;
  std::optional<std::uint64_t> total_size;
  const bool plain = shardcheck::detail::scan_plain_index(text, total_size, [&](std::string_view t, std::string_view s) {
    listed.emplace_back(t, s);
    return true;
  });
  if (plain && simdjson::validate_utf8(text)) check_against_dom(text, listed, total_size);
  return 0;
}
