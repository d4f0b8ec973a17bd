// Tests for index_agrees_with_headers (src/load/index_agreement.cpp), the quick "index and shard
// headers agree exactly" verdict that lets the loader skip the full cross-check. A true answer
// must be right in every case; each false case below would otherwise hide an IX007/IX010-IX012.

#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "load/index_agreement.hpp"
#include "util/name_table.hpp"

using namespace shardcheck;
using detail::ShardListing;

namespace {

// Tensors view their names (TensorInfo); these stay alive for the whole run.
std::string_view kept_name(const std::string& name) {
  static std::set<std::string, std::less<>> names;
  return *names.insert(name).first;
}

SafetensorsFile shard(const std::vector<std::string>& names) {
  static constexpr std::int64_t kShape[] = {1};
  SafetensorsFile f;
  for (const auto& n : names) f.tensors.push_back(TensorInfo{.name = kept_name(n), .shape = kShape});
  return f;
}

bool agrees(std::vector<ShardListing> listings, const std::vector<const SafetensorsFile*>& files) {
  for (ShardListing& l : listings) l.hash = util::NameTable::hash64(l.tensor);  // as the index scan does
  // Once with the names hashed here, once with the hashes a header reader would pass in.
  std::vector<std::vector<std::uint64_t>> known;
  std::vector<std::span<const std::uint64_t>> spans;
  for (const SafetensorsFile* f : files) {
    known.emplace_back();
    if (f)
      for (const auto& t : f->tensors) known.back().push_back(util::NameTable::hash64(t.name));
  }
  for (const auto& k : known) spans.emplace_back(k);
  const bool computed = detail::index_agrees_with_headers(listings, files, {}, std::pmr::get_default_resource());
  const bool given = detail::index_agrees_with_headers(listings, files, spans, std::pmr::get_default_resource());
  CHECK(computed == given);
  return computed;
}

}  // namespace

TEST_CASE("index agreement: true exactly when every shard holds what is listed for it") {
  const SafetensorsFile a = shard({"x.weight", "y.weight"}), b = shard({"z.weight"});
  const std::vector<const SafetensorsFile*> files{&a, &b};

  // Listing order need not follow header order.
  CHECK(agrees({{"z.weight", 1}, {"y.weight", 0}, {"x.weight", 0}}, files));

  // A tensor not listed at all (the full check reports IX012).
  CHECK_FALSE(agrees({{"x.weight", 0}, {"z.weight", 1}}, files));
  // A listing no shard holds (IX010).
  CHECK_FALSE(agrees({{"x.weight", 0}, {"y.weight", 0}, {"z.weight", 1}, {"w.weight", 1}}, files));
  // Listed for the wrong shard (IX010 and IX012), with the counts per shard still right.
  CHECK_FALSE(agrees({{"x.weight", 0}, {"z.weight", 0}, {"y.weight", 1}}, files));
  // The same tensor listed twice for its shard, another left out (IX007 and IX012).
  CHECK_FALSE(agrees({{"x.weight", 0}, {"x.weight", 0}, {"z.weight", 1}}, files));
  // A shard the loader could not read.
  CHECK_FALSE(agrees({{"x.weight", 0}, {"y.weight", 0}, {"z.weight", 1}}, {&a, nullptr}));
  // A listing naming a shard outside the list.
  CHECK_FALSE(agrees({{"x.weight", 0}, {"y.weight", 0}, {"z.weight", 2}}, files));
}

TEST_CASE("index agreement: a tensor held by two shards and listed for both is caught") {
  // Per shard everything matches; only the global check sees that "x.weight" is in two shards,
  // i.e. listed twice in weight_map (IX007) and stored twice (IX011).
  const SafetensorsFile a = shard({"x.weight", "y.weight"}), b = shard({"x.weight"});
  CHECK_FALSE(agrees({{"x.weight", 0}, {"y.weight", 0}, {"x.weight", 1}}, {&a, &b}));
}

TEST_CASE("index agreement: many shards over both threads") {
  // 100 shards of 50 tensors each (above the 4096 tensors from which a second thread helps),
  // listed in reverse order; then two listings swapped between shards.
  std::vector<SafetensorsFile> shards;
  std::vector<ShardListing> listings;
  std::vector<std::string> names;
  for (int s = 0; s < 100; ++s) {
    std::vector<std::string> in_shard;
    for (int t = 0; t < 50; ++t) in_shard.push_back("model.layers." + std::to_string(s) + ".t" + std::to_string(t));
    shards.push_back(shard(in_shard));
  }
  for (int s = 99; s >= 0; --s)
    for (const auto& t : shards[s].tensors) listings.push_back({t.name, static_cast<std::uint32_t>(s)});
  std::vector<const SafetensorsFile*> files;
  for (const auto& f : shards) files.push_back(&f);
  CHECK(agrees(listings, files));
  std::swap(listings[0].shard, listings[60].shard);  // two tensors listed in each other's shard
  CHECK_FALSE(agrees(listings, files));
}

TEST_CASE("index agreement: the scan's fingerprint, with shards numbered as the scan meets them") {
  // A weight_map can meet its shards out of their sorted order: here the scan numbered shard
  // "model-00002" 0 and "model-00001" 1, and finish() maps them to the final (sorted) ids 1 and 0.
  const SafetensorsFile first = shard({"a.weight", "c.weight"}), second = shard({"b.weight"});
  const std::vector<const SafetensorsFile*> files = {&first, &second};
  auto h = [](const char* name) { return util::NameTable::hash64(name); };
  std::pmr::monotonic_buffer_resource memory;
  auto fingerprint = [&](std::vector<std::uint32_t> final_id, std::uint64_t c_hash) {
    detail::FingerprintBuilder builder(3, &memory);
    builder.add(1, h("a.weight"));  // in model-00001: scan id 1
    builder.add(0, h("b.weight"));  // in model-00002: scan id 0
    builder.add(1, c_hash);
    return std::move(builder).finish(final_id, files.size());
  };
  const std::vector<std::span<const std::uint64_t>> none;
  CHECK(detail::index_agrees_with_headers(fingerprint({1, 0}, h("c.weight")), files, none));
  CHECK_FALSE(detail::index_agrees_with_headers(fingerprint({0, 1}, h("c.weight")), files, none));  // unmapped
  CHECK_FALSE(detail::index_agrees_with_headers(fingerprint({1, 0}, h("d.weight")), files, none));  // other name
  CHECK_FALSE(detail::index_agrees_with_headers(fingerprint({1, 0}, h("a.weight")), files, none));  // a twice
  CHECK_FALSE(detail::index_agrees_with_headers(fingerprint({1}, h("c.weight")), files, none));     // id 1 unmapped
  CHECK_FALSE(detail::index_agrees_with_headers(fingerprint({1, 5}, h("c.weight")), files, none));  // beyond files
}
