// Tests for load_checkpoint (src/load/checkpoint_index.cpp): which files a model directory's
// checkpoint consists of, and the index checks IX001-IX016. Model directories are built in a
// scratch directory per test.

#include <doctest/doctest.h>

#include <unistd.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "shardcheck/checkpoint.hpp"
#include "diag_query.hpp"

using namespace shardcheck;
namespace fs = std::filesystem;

namespace {

struct Tensor {
  std::string name;
  std::string dtype;
  std::vector<std::uint64_t> shape;
  std::uint64_t bytes() const {
    std::uint64_t n = 1;
    for (auto d : shape) n *= d;
    const std::uint64_t bits = dtype == "F32" ? 32 : dtype == "BF16" ? 16 : 8;
    return n * bits / 8;
  }
};

// A valid safetensors image: contiguous tensors in the given order, header space-padded to 8.
std::string shard_bytes(const std::vector<Tensor>& tensors) {
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  std::uint64_t offset = 0;
  for (const Tensor& t : tensors) {
    std::string shape;
    for (std::size_t i = 0; i < t.shape.size(); ++i) shape += (i ? "," : "") + std::to_string(t.shape[i]);
    header += ",\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[" + shape + "],\"data_offsets\":[" +
              std::to_string(offset) + "," + std::to_string(offset + t.bytes()) + "]}";
    offset += t.bytes();
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + std::string(offset, '\0');
}

struct ModelDir {
  fs::path path;
  ModelDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("shardcheck-ix-" + std::to_string(::getpid()) + "-" + std::to_string(counter++)) / "snapshots" /
           "model";  // two levels deep, so "../../x" stays inside the scratch dir
    fs::remove_all(root());
    fs::create_directories(path);
  }
  ~ModelDir() {
    std::error_code ec;
    fs::remove_all(root(), ec);
  }
  fs::path root() const { return path.parent_path().parent_path(); }
  void write(const std::string& name, const std::string& bytes) const {
    fs::create_directories((path / name).parent_path());
    std::ofstream(path / name, std::ios::binary) << bytes;
  }
  void shard(const std::string& name, const std::vector<Tensor>& tensors) const { write(name, shard_bytes(tensors)); }
};

const Tensor A{"a.weight", "F32", {2, 2}};  // 16 bytes
const Tensor B{"b.weight", "BF16", {4}};    // 8 bytes
const Tensor C{"c.weight", "F32", {4}};     // 16 bytes
const std::string S1 = "model-00001-of-00002.safetensors";
const std::string S2 = "model-00002-of-00002.safetensors";

std::string index_json(const std::vector<std::pair<std::string, std::string>>& weight_map,
                       std::string metadata = "{\"total_size\": 40}") {
  std::string map;
  for (const auto& [tensor, shard] : weight_map)
    map += (map.empty() ? "\n    \"" : ",\n    \"") + tensor + "\": \"" + shard + "\"";
  return "{\n  \"metadata\": " + metadata + ",\n  \"weight_map\": {" + map + "\n  }\n}\n";
}

// The standard two-shard model: a, b in S1; c in S2; 40 data bytes in all.
void write_two_shards(const ModelDir& m) {
  m.shard(S1, {A, B});
  m.shard(S2, {C});
}
const std::vector<std::pair<std::string, std::string>> kGoodMap = {
    {"a.weight", S1}, {"b.weight", S1}, {"c.weight", S2}};

struct Loaded {
  std::optional<CheckpointMeta> meta;
  DiagnosticSink sink;
  std::size_t count(std::string_view code) const { return test::count_code(sink, code); }
  const Diagnostic* first(std::string_view code) const { return test::first_code(sink, code); }
  std::string all() const { return test::dump(sink); }
};

Loaded load(const fs::path& dir) {
  Loaded l;
  l.meta = load_checkpoint(dir, l.sink);
  return l;
}

}  // namespace

TEST_CASE("checkpoint index: a sharded checkpoint loads every shard, in name order") {
  ModelDir m;
  write_two_shards(m);
  m.write("model.safetensors.index.json", index_json({{"c.weight", S2}, {"a.weight", S1}, {"b.weight", S1}}));
  auto l = load(m.path);
  REQUIRE(l.meta);
  CHECK_MESSAGE(l.sink.items().empty(), l.all());
  CHECK(l.meta->sharded);
  CHECK(l.meta->index_total_size == 40u);
  REQUIRE(l.meta->files.size() == 2);
  CHECK(l.meta->files[0].path == S1);
  CHECK(l.meta->files[1].path == S2);
  std::uint64_t header_bytes = 0;
  for (std::size_t f = 0; f < l.meta->files.size(); ++f) {
    header_bytes += 8 + l.meta->files[f].header_len;
    for (const TensorInfo& t : l.meta->files[f].tensors) CHECK(t.file == f);
  }
  CHECK(l.meta->header_bytes_read == header_bytes);
  CHECK(l.meta->files[0].tensors.at(1).name == "b.weight");
  CHECK(l.meta->files[0].tensors.at(1).dtype == DType::BF16);
}

TEST_CASE("checkpoint index: model.safetensors alone, loose files, config-only directories") {
  SUBCASE("single file") {
    ModelDir m;
    m.shard("model.safetensors", {A, B, C});
    auto l = load(m.path);
    REQUIRE(l.meta);
    CHECK(l.sink.items().empty());
    CHECK_FALSE(l.meta->sharded);
    REQUIRE(l.meta->files.size() == 1);
    CHECK(l.meta->files[0].tensors.size() == 3);
    CHECK(l.meta->header_bytes_read == 8 + l.meta->files[0].header_len);
  }
  SUBCASE("one loose file under another name") {
    ModelDir m;
    m.shard("consolidated.safetensors", {A});
    auto l = load(m.path);
    REQUIRE(l.meta);
    CHECK(l.sink.items().empty());
    CHECK(l.meta->files.at(0).path == "consolidated.safetensors");
  }
  SUBCASE("config only") {
    ModelDir m;
    m.write("config.json", "{}");
    auto l = load(m.path);
    CHECK_FALSE(l.meta);
    CHECK(l.sink.items().empty());
  }
  SUBCASE("a broken model.safetensors still yields a checkpoint, with no files") {
    ModelDir m;
    m.write("model.safetensors", "xx");
    auto l = load(m.path);
    REQUIRE(l.meta);
    CHECK(l.meta->files.empty());
    CHECK(l.count("ST001") == 1);
  }
}

TEST_CASE("checkpoint index: IX001 missing directory, or a file instead of one") {
  ModelDir m;
  auto missing = load(m.path / "nope");
  CHECK_FALSE(missing.meta);
  REQUIRE(missing.count("IX001") == 1);
  CHECK(missing.sink.first_error_exit_code() == ExitCode::io);
  m.write("file", "x");
  auto file = load(m.path / "file");
  REQUIRE(file.count("IX001") == 1);
  CHECK(file.first("IX001")->message.find("not a directory") != std::string::npos);
}

TEST_CASE("checkpoint index: IX002 unreadable index is an io error; shards are still checked") {
  ModelDir m;
  write_two_shards(m);
  fs::create_directory(m.path / "model.safetensors.index.json");
  auto l = load(m.path);
  REQUIRE(l.meta);
  CHECK(l.count("IX002") == 1);
  CHECK(l.sink.first_error_exit_code() == ExitCode::io);
  CHECK(l.meta->files.size() == 2);
}

TEST_CASE("checkpoint index: IX003/IX004/IX005 unusable index falls back to the directory's shards") {
  for (auto [text, code] :
       {std::pair{"{\"weight_map\": ", "IX003"}, std::pair{"\xff{}", "IX003"}, std::pair{"[1]", "IX004"},
        std::pair{"{}", "IX005"}, std::pair{"{\"weight_map\": []}", "IX005"}}) {
    ModelDir m;
    write_two_shards(m);
    m.write("model.safetensors.index.json", text);
    auto l = load(m.path);
    INFO(text);
    REQUIRE(l.meta);
    CHECK(l.count(code) == 1);
    CHECK(l.sink.items().size() == 1);
    CHECK(l.sink.first_error_exit_code() == ExitCode::bad_index);
    CHECK(l.meta->files.size() == 2);
  }
}

TEST_CASE("checkpoint index: IX006 weight_map values must be shard names") {
  ModelDir m;
  write_two_shards(m);
  m.write("model.safetensors.index.json", "{\"weight_map\": {\"a.weight\": \"" + S1 + "\", \"b.weight\": \"" + S1 +
                                              "\", \"c.weight\": \"" + S2 + "\", \"x\": null, \"y\": \"\"}}");
  auto l = load(m.path);
  CHECK_MESSAGE(l.count("IX006") == 2, l.all());
  CHECK(l.sink.items().size() == 2);
}

TEST_CASE("checkpoint index: IX007 a tensor listed twice, with the key's line and column") {
  ModelDir m;
  write_two_shards(m);
  m.write("model.safetensors.index.json",
          index_json({{"a.weight", S1}, {"b.weight", S1}, {"c.weight", S2}, {"a.weight", S2}}));
  auto l = load(m.path);
  REQUIRE_MESSAGE(l.count("IX007") == 1, l.all());
  const Diagnostic& d = *l.first("IX007");
  CHECK(d.location.file == (m.path / "model.safetensors.index.json").string());
  CHECK(d.location.line == 4);  // the first occurrence of the key
  CHECK(d.location.column == 5);
  CHECK(l.sink.items().size() == 1);  // the first listing (S1) is right
}

TEST_CASE("checkpoint index: IX008 shard paths may not leave the model directory") {
  ModelDir m;
  write_two_shards(m);
  m.shard("../outside.safetensors", {C});
  for (std::string shard : {"../outside.safetensors", "/etc/passwd", "sub/../../outside.safetensors"}) {
    m.write("model.safetensors.index.json", index_json({{"a.weight", S1}, {"b.weight", S1}, {"c.weight", shard}}));
    auto l = load(m.path);
    INFO(shard);
    REQUIRE(l.meta);
    CHECK_MESSAGE(l.count("IX008") == 1, l.all());
    CHECK(l.meta->files.size() == 1);  // the escaping shard is never opened
    CHECK(l.count("IX012") == 0);
  }
  // A subdirectory inside the model directory is fine.
  m.shard("sub/c.safetensors", {C});
  m.write("model.safetensors.index.json",
          index_json({{"a.weight", S1}, {"b.weight", S1}, {"c.weight", "sub/c.safetensors"}}));
  auto ok = load(m.path);
  CHECK_MESSAGE(ok.sink.items().size() == 1, ok.all());  // only: S2 is a stray shard file now
  CHECK(ok.count("IX015") == 1);
}

TEST_CASE("checkpoint index: symlinks are followed wherever they lead (Hugging Face cache layout)") {
  // snapshots/<rev>/<shard> -> ../../blobs/<sha256>: every shard lives outside the directory.
  ModelDir m;
  m.write("../../blobs/aaa", shard_bytes({A, B}));
  m.write("../../blobs/bbb", shard_bytes({C}));
  fs::create_symlink("../../blobs/aaa", m.path / S1);
  fs::create_symlink("../../blobs/bbb", m.path / S2);
  m.write("model.safetensors.index.json", index_json(kGoodMap));
  auto l = load(m.path);
  REQUIRE(l.meta);
  CHECK_MESSAGE(l.sink.items().empty(), l.all());
  CHECK(l.meta->files.size() == 2);
}

TEST_CASE("checkpoint index: IX009 a shard named by the index is missing") {
  ModelDir m;
  m.shard(S1, {A, B});
  m.write("model.safetensors.index.json", index_json(kGoodMap));
  auto l = load(m.path);
  REQUIRE(l.count("IX009") == 1);
  CHECK(l.first("IX009")->message.find(S2) != std::string::npos);
  CHECK(l.sink.items().size() == 1);  // no total_size complaint: it cannot be checked
  CHECK(l.meta->files.size() == 1);
}

TEST_CASE("checkpoint index: IX010/IX011/IX012 tensors against the shards") {
  SUBCASE("listed in the wrong shard") {
    ModelDir m;
    write_two_shards(m);
    m.write("model.safetensors.index.json", index_json({{"a.weight", S1}, {"b.weight", S2}, {"c.weight", S2}}));
    auto l = load(m.path);
    REQUIRE_MESSAGE(l.count("IX010") == 1, l.all());
    const Diagnostic& d = *l.first("IX010");
    CHECK(d.message.find("'b.weight' is listed in shard '" + S2) != std::string::npos);
    CHECK(d.message.find("it is in '" + S1 + "'") != std::string::npos);
    CHECK(d.location.line == 5);
    CHECK(l.sink.items().size() == 1);
  }
  SUBCASE("in no shard at all") {
    ModelDir m;
    write_two_shards(m);
    m.write("model.safetensors.index.json",
            index_json({{"a.weight", S1}, {"b.weight", S1}, {"c.weight", S2}, {"d.weight", S2}}));
    auto l = load(m.path);
    REQUIRE(l.count("IX010") == 1);
    CHECK(l.first("IX010")->message.find("no shard holds it") != std::string::npos);
  }
  SUBCASE("in two shards") {
    ModelDir m;
    m.shard(S1, {A, B});
    m.shard(S2, {C, A});
    m.write("model.safetensors.index.json", index_json(kGoodMap, "{\"total_size\": 56}"));
    auto l = load(m.path);
    CHECK_MESSAGE(l.count("IX011") == 1, l.all());
    CHECK(l.sink.items().size() == 1);
  }
  SUBCASE("not listed") {
    ModelDir m;
    write_two_shards(m);
    m.write("model.safetensors.index.json", index_json({{"a.weight", S1}, {"c.weight", S2}}));
    auto l = load(m.path);
    REQUIRE(l.count("IX012") == 1);
    CHECK(l.first("IX012")->message.find("'b.weight'") != std::string::npos);
    CHECK(l.sink.items().size() == 1);
  }
}

TEST_CASE("checkpoint index: IX013/IX014 metadata.total_size") {
  auto run = [](const std::string& metadata) {
    ModelDir m;
    write_two_shards(m);
    m.write("model.safetensors.index.json", index_json(kGoodMap, metadata));
    return load(m.path);
  };
  CHECK(run("{\"total_size\": 40}").sink.items().empty());
  CHECK(run("{\"total_size\": 40.0}").sink.items().empty());  // some writers emit a float
  CHECK(run("{}").sink.items().empty());
  CHECK(run("null").sink.items().empty());
  CHECK(run("{\"total_size\": -40}").count("IX013") == 1);
  CHECK(run("{\"total_size\": 40.5}").count("IX013") == 1);
  CHECK(run("[40]").count("IX013") == 1);
  auto l = run("{\"total_size\": 48}");
  REQUIRE(l.count("IX014") == 1);
  CHECK(l.first("IX014")->message.find("total_size is 48 but the shards' headers describe 40") != std::string::npos);
  CHECK(l.first("IX014")->location.line == 2);
  CHECK(l.meta->index_total_size == 48u);
}

TEST_CASE("checkpoint index: IX015 shard-named files the index omits are a warning") {
  ModelDir m;
  write_two_shards(m);
  m.shard("model-00003-of-00003.safetensors", {C});
  m.shard("consolidated.safetensors", {A});  // another naming scheme: not a stray shard
  m.write("model.safetensors.index.json", index_json(kGoodMap));
  auto l = load(m.path);
  REQUIRE_MESSAGE(l.count("IX015") == 1, l.all());
  CHECK(l.sink.items().size() == 1);
  CHECK(l.first("IX015")->severity == Severity::warning);
  CHECK(l.sink.first_error_exit_code() == ExitCode::ok);
  CHECK(l.meta->files.size() == 2);
}

TEST_CASE("checkpoint index: IX016 several safetensors files and no index") {
  ModelDir m;
  write_two_shards(m);
  auto l = load(m.path);
  REQUIRE(l.meta);
  REQUIRE(l.count("IX016") == 1);
  CHECK(l.sink.first_error_exit_code() == ExitCode::bad_index);
  CHECK(l.meta->files.size() == 2);  // still loaded, so other checks can run
  CHECK_FALSE(l.meta->sharded);
}

TEST_CASE("checkpoint index: problems in several shards are all reported, in shard order") {
  ModelDir m;
  std::vector<std::pair<std::string, std::string>> map;
  for (int i = 1; i <= 12; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05d-of-00012.safetensors", i);
    const std::string tensor = "t" + std::to_string(i);
    std::string bytes = shard_bytes({{tensor, "F32", {4}}});
    if (i % 3 == 0) bytes.resize(bytes.size() - 4);  // every third shard cut short
    m.write(name, bytes);
    map.emplace_back(tensor, name);
  }
  m.write("model.safetensors.index.json", index_json(map, "{}"));
  auto l = load(m.path);
  REQUIRE(l.meta);
  REQUIRE_MESSAGE(l.count("ST020") == 4, l.all());
  CHECK(l.sink.items().size() == 4);
  std::vector<std::string> files;
  for (const auto& d : l.sink.items()) files.push_back(d.location.file);
  CHECK(std::is_sorted(files.begin(), files.end()));
  CHECK(files[0] == (m.path / "model-00003-of-00012.safetensors").string());
  CHECK(l.meta->files.size() == 12);
}

TEST_CASE("checkpoint index: files the index does not name are neither checked nor returned") {
  ModelDir m;
  write_two_shards(m);
  m.write("junk.safetensors", "not a safetensors file at all");  // read early, then dropped
  m.write("model.safetensors.index.json", index_json(kGoodMap));
  auto l = load(m.path);
  REQUIRE(l.meta);
  CHECK_MESSAGE(l.sink.items().empty(), l.all());
  CHECK(l.meta->files.size() == 2);
}

TEST_CASE("checkpoint index: a shard reached through a symlink inside the directory is read") {
  ModelDir m;
  m.shard(S1, {A, B});
  m.shard("blobs/c.bin.safetensors", {C});
  fs::create_symlink("blobs/c.bin.safetensors", m.path / S2);  // the Hugging Face cache layout
  m.write("model.safetensors.index.json", index_json(kGoodMap));
  auto l = load(m.path);
  REQUIRE(l.meta);
  CHECK_MESSAGE(l.sink.items().empty(), l.all());
  REQUIRE(l.meta->files.size() == 2);
  CHECK(l.meta->files[1].path == S2);
  SUBCASE("and is checked too when the index is unusable") {
    m.write("model.safetensors.index.json", "{");
    auto broken = load(m.path);
    CHECK(broken.count("IX003") == 1);
    CHECK(broken.meta->files.size() == 2);
  }
}
