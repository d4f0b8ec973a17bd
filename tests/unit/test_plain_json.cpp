// Tests for the plain one-pass readers (src/load/plain_json.hpp, index_scan.hpp, header_scan.cpp):
// what they accept must be read exactly as the full parser would, and everything else must be
// handed back (false) for the full parser to judge. fuzz/fuzz_index.cpp and fuzz_safetensors.cpp
// compare the two paths on random inputs; these are the cases worth naming.

#include <doctest/doctest.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "load/index_scan.hpp"
#include "load/safetensors_detail.hpp"

using namespace shardcheck;

namespace {

// The text followed by the 16+ readable bytes the readers require.
struct Padded {
  explicit Padded(std::string t) : text(std::move(t)) { buffer = text + std::string(64, '\0'); }
  std::string_view view() const { return {buffer.data(), text.size()}; }
  std::string text, buffer;
};

struct IndexRead {
  bool plain = false;
  std::vector<std::pair<std::string, std::string>> listings;
  std::optional<std::uint64_t> total_size;
};

IndexRead scan_index(const std::string& text) {
  Padded p(text);
  IndexRead r;
  r.plain = detail::scan_plain_index(p.view(), r.total_size, [&r](std::string_view t, std::string_view s) {
    r.listings.emplace_back(t, s);
    return true;
  });
  return r;
}

}  // namespace

TEST_CASE("plain index: a typical index is read in one pass") {
  const auto r = scan_index(
      "{\n  \"metadata\": {\"total_size\": 688574839360, \"format\": \"pt\"},\n"
      "  \"weight_map\": {\n    \"lm_head.weight\": \"model-00002-of-00002.safetensors\",\n"
      "    \"model.embed_tokens.weight\": \"model-00001-of-00002.safetensors\"\n  }\n}\n");
  REQUIRE(r.plain);
  CHECK(r.total_size == 688574839360u);
  REQUIRE(r.listings.size() == 2);
  CHECK(r.listings[0] == std::pair<std::string, std::string>{"lm_head.weight", "model-00002-of-00002.safetensors"});
  CHECK(r.listings[1].first == "model.embed_tokens.weight");
}

TEST_CASE("plain index: anything outside the plain form goes to the full parser") {
  // An escape in a name (the DOM unescapes it; the plain reader does not try).
  CHECK_FALSE(scan_index(R"({"weight_map": {"a\u002eb": "x.safetensors"}})").plain);
  // total_size written as a float (some writers do; the DOM path accepts integral values).
  CHECK_FALSE(scan_index(R"({"metadata": {"total_size": 1.6e10}, "weight_map": {"a": "x"}})").plain);
  // A leading zero is not JSON at all.
  CHECK_FALSE(scan_index(R"({"metadata": {"total_size": 012}, "weight_map": {"a": "x"}})").plain);
  // An empty shard name (IX006), a repeated weight_map, a missing weight_map.
  CHECK_FALSE(scan_index(R"({"weight_map": {"a": ""}})").plain);
  CHECK_FALSE(scan_index(R"({"weight_map": {}, "weight_map": {"a": "x"}})").plain);
  CHECK_FALSE(scan_index(R"({"metadata": {}})").plain);
  // Trailing garbage, a trailing comma, nested metadata.
  CHECK_FALSE(scan_index(R"({"weight_map": {"a": "x"}} x)").plain);
  CHECK_FALSE(scan_index(R"({"weight_map": {"a": "x",}})").plain);
  CHECK_FALSE(scan_index(R"({"metadata": {"extra": {"k": 1}}, "weight_map": {"a": "x"}})").plain);
}

TEST_CASE("plain index: a reading that fails leaves the cursor where it was") {
  // An unterminated string whose text starts with digits: had the failed string reading moved
  // the cursor, the number reading tried next would have accepted `12` and then the closing brace.
  CHECK_FALSE(scan_index(R"({"weight_map": {"a": "b"}, "x": "12})").plain);
  // A number that is not an integer must not be read as its integer part followed by the rest.
  CHECK_FALSE(scan_index(R"({"weight_map": {"a": "b"}, "x": 12.5})").plain);
}

TEST_CASE("plain header: entries, dims and metadata; the rest goes to the full parser") {
  std::vector<detail::Entry> entries;
  std::vector<std::uint64_t> dims;
  std::map<std::string, std::string> metadata;
  std::optional<Padded> header;  // the entries' names view into it, so it outlives each scan
  auto scan = [&](const std::string& text) {
    entries.clear();
    dims.clear();
    metadata.clear();
    header.emplace(text);
    return detail::scan_plain_header(header->view(), entries, dims, metadata);
  };
  REQUIRE(scan(R"({"__metadata__":{"format":"pt"},"b":{"dtype":"BF16","shape":[3,5],"data_offsets":[0,30]},)"
               R"("a":{"data_offsets":[30,30],"shape":[],"dtype":"F8_E4M3"}}   )"));
  CHECK(metadata.at("format") == "pt");
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].name == "b");
  CHECK(entries[0].dtype == DType::BF16);
  CHECK(entries[0].dims_count == 2);
  CHECK(dims[entries[0].dims_begin + 1] == 5);
  CHECK(entries[1].range->begin == 30);
  CHECK(entries[1].dims_count == 0);  // a scalar

  // The byte-exact form the crate writes is read without key lookups; a near miss is read by the
  // general path from where the entry began, with nothing of the failed attempt left behind.
  REQUIRE(scan(
      R"({"a":{"dtype":"BF16","shape":[3,5],"data_offsets":[0,30] },)"
      R"("b":{"dtype":"F32","shape":[ 2 ,1],"data_offsets":[30,38]},"c":{"dtype":"I8","shape":[],"data_offsets":[38,39]}})"));
  REQUIRE(entries.size() == 3);
  CHECK(dims == std::vector<std::uint64_t>{3, 5, 2, 1});
  CHECK(entries[1].dims_begin == 2);
  CHECK(entries[1].dtype == DType::F32);
  CHECK(entries[2].dims_count == 0);
  CHECK(entries[2].range->end == 39);

  CHECK_FALSE(scan(R"({"a":{"dtype":"BF16","shape":[1],"data_offsets":[0,2],"extra":1}})"));       // unknown key
  CHECK_FALSE(scan(R"({"a":{"dtype":"BF16","shape":[1],"dtype":"BF16","data_offsets":[0,2]}})"));  // repeated key
  CHECK_FALSE(scan(R"({"a":{"dtype":"BF16","shape":[1]}})"));                                      // missing key
  CHECK_FALSE(scan(R"({"a":{"dtype":"bf16","shape":[1],"data_offsets":[0,2]}})"));                 // unknown dtype
  CHECK_FALSE(scan(R"({"a":{"dtype":"BF16","shape":[-1],"data_offsets":[0,2]}})"));                // negative dim
  CHECK_FALSE(scan(R"({"a":{"dtype":"BF16","shape":[1],"data_offsets":[2,0]}})"));                 // reversed
  CHECK_FALSE(scan(R"({"a":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]},"__metadata__":null})"));
  CHECK_FALSE(scan("{\"a\tb\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[0,2]}}"));  // raw control byte
}

TEST_CASE("dtype names: the header reader's lookup agrees with parse_dtype on every name and near miss") {
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto d = static_cast<DType>(i);
    const std::string name(dtype_name(d));
    INFO(name);
    CHECK(detail::dtype_from_name(name) == d);
    // The same length with one byte changed, a byte more, a byte less, lower case: not a dtype
    // unless parse_dtype says it is one.
    std::vector<std::string> misses = {name + "X", name.substr(0, name.size() - 1), "x" + name};
    for (std::size_t k = 0; k < name.size(); ++k) {
      std::string changed = name;
      changed[k] = static_cast<char>(changed[k] ^ 0x20);
      misses.push_back(changed);
    }
    for (const std::string& m : misses) {
      INFO(m);
      CHECK(detail::dtype_from_name(m) == parse_dtype(m));
    }
  }
  CHECK_FALSE(detail::dtype_from_name(""));
  CHECK_FALSE(detail::dtype_from_name("F8_E4M3FNUZ_"));
  CHECK_FALSE(detail::dtype_from_name(std::string_view("BF16\0", 5)));
}

TEST_CASE("plain json: integers up to 2^64 - 1, and nothing the full parser reads differently") {
  auto read = [](const std::string& text) -> std::optional<std::uint64_t> {
    Padded p(text);
    detail::PlainJson in(p.view().data(), p.view().data() + p.view().size());
    std::uint64_t v = 0;
    if (!in.uint(v)) return std::nullopt;
    return v;
  };
  CHECK(read("0") == 0u);
  CHECK(read("7") == 7u);
  CHECK(read("1234567890123456789") == 1234567890123456789u);    // 19 digits
  CHECK(read("9999999999999999999") == 9999999999999999999u);    // the largest 19 digits
  CHECK(read("10000000000000000000") == 10000000000000000000u);  // 20 digits
  CHECK(read("18446744073709551615") == 18446744073709551615u);  // 2^64 - 1
  CHECK_FALSE(read("18446744073709551616"));                     // 2^64
  CHECK_FALSE(read("99999999999999999999"));
  CHECK_FALSE(read("184467440737095516150"));  // 21 digits
  CHECK_FALSE(read("00"));
  CHECK_FALSE(read("01"));
  CHECK_FALSE(read("-1"));
  CHECK_FALSE(read("1.0"));
  CHECK_FALSE(read("1e3"));
  CHECK_FALSE(read(""));
  CHECK(read("  42") == 42u);
}
