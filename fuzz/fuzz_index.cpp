// libFuzzer harness for the plain one-pass reader of model.safetensors.index.json
// (src/load/index_scan.hpp), differential against the full parser (src/load/json_tree.hpp) that
// the loader falls back to.
//
// Whenever the plain scan accepts a text, the text must be valid UTF-8 (the scan checks it on the
// way) and the full parser must accept it too and read the same thing: the same weight_map
// entries in the same order (each value a non-empty string), and the same metadata.total_size as
// a 64-bit integer, or none. Beyond that, no crash, no hang, no read out of bounds (ASan/UBSan).
// Seeds: the fixtures' index files.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "load/index_scan.hpp"
#include "load/json_tree.hpp"
#include "load/padded_file.hpp"
#include "util/utf8.hpp"

namespace {

using shardcheck::detail::JsonValue;

[[noreturn]] void invariant_broken() { __builtin_trap(); }

using Listings = std::vector<std::pair<std::string_view, std::string_view>>;

// What the loader's full-parser path reads from the same text, when it is usable there.
void check_against_tree(std::string_view text, const Listings& listed, std::optional<std::uint64_t> total_size) {
  if (shardcheck::util::first_invalid_utf8(text)) invariant_broken();
  auto parsed = shardcheck::detail::parse_json_tree(text);
  const auto* root = std::get_if<JsonValue>(&parsed);
  if (!root || root->type != JsonValue::Type::object) invariant_broken();
  const JsonValue* map = root->find("weight_map");
  if (!map || map->type != JsonValue::Type::object || map->members.size() != listed.size()) invariant_broken();
  for (std::size_t i = 0; i < listed.size(); ++i) {
    const auto& kv = map->members[i];
    if (kv.value.type != JsonValue::Type::string || kv.value.text.empty()) invariant_broken();
    if (kv.key != listed[i].first || kv.value.text != listed[i].second) invariant_broken();
  }
  std::optional<std::uint64_t> tree_total;
  const JsonValue* metadata = root->find("metadata");
  if (metadata && metadata->type == JsonValue::Type::object)
    if (const JsonValue* value = metadata->find("total_size")) {
      tree_total = value->as_uint64();
      if (!tree_total) invariant_broken();
    }
  if (tree_total != total_size) invariant_broken();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The scan reads in 16-byte steps and needs readable padding after the text, as the loader's
  // buffers have.
  std::string padded(reinterpret_cast<const char*>(data), size);
  padded.append(shardcheck::detail::kJsonPadding, '\0');
  const std::string_view text(padded.data(), size);
  Listings listed;
  std::optional<std::uint64_t> total_size;
  const bool plain =
      shardcheck::detail::scan_plain_index(text, total_size, [&](std::string_view t, std::string_view s) {
        listed.emplace_back(t, s);
        return true;
      });
  if (plain) check_against_tree(text, listed, total_size);
  return 0;
}
