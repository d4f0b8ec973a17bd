// Tests for detail::PaddedFile (src/load/padded_file.cpp): the index reader's whole-file buffer,
// which simdjson parses in place, so the bytes must be exact and followed by zeroed padding.

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <simdjson.h>

#include "load/padded_file.hpp"

using shardcheck::detail::PaddedFile;
namespace fs = std::filesystem;

namespace {

fs::path scratch_dir() {
  const fs::path dir = fs::temp_directory_path() / ("shardcheck_padded_file_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

fs::path write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

bool padding_is_zero(const PaddedFile& f) {
  for (std::size_t i = 0; i < simdjson::SIMDJSON_PADDING; ++i)
    if (f.data()[f.size() + i] != '\0') return false;
  return true;
}

}  // namespace

TEST_CASE("padded file: the exact bytes of a file, then SIMDJSON_PADDING zero bytes") {
  const fs::path dir = scratch_dir();
  // Not a multiple of the page size, with a NUL and bytes >= 0x80 inside.
  std::string bytes = "{\"weight_map\": {}}";
  bytes += std::string(5000, 'x');
  bytes += '\0';
  bytes += "\xff\xfe tail";
  auto f = PaddedFile::read(write_file(dir / "index.json", bytes));
  REQUIRE(f);
  CHECK(f->size() == bytes.size());
  CHECK(f->view() == bytes);
  CHECK(padding_is_zero(*f));

  SUBCASE("it parses in place") {
    auto small = PaddedFile::read(write_file(dir / "small.json", "{\"a\": [1, 2, 3]}"));
    REQUIRE(small);
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    REQUIRE_FALSE(parser.parse(small->data(), small->size(), false).get(root));
    CHECK(root["a"].get_array().size() == 3);
  }

  SUBCASE("moving hands the buffer over") {
    PaddedFile moved = std::move(*f);
    CHECK(moved.view() == bytes);
    CHECK(f->data() == nullptr);
    CHECK(f->size() == 0);
  }
  fs::remove_all(dir);
}

TEST_CASE("padded file: an empty file is zero bytes of text and the padding") {
  const fs::path dir = scratch_dir();
  auto f = PaddedFile::read(write_file(dir / "empty.json", ""));
  REQUIRE(f);
  CHECK(f->size() == 0);
  CHECK(padding_is_zero(*f));
  fs::remove_all(dir);
}

TEST_CASE("padded file: missing files and directories are not read") {
  const fs::path dir = scratch_dir();
  CHECK_FALSE(PaddedFile::read(dir / "absent.json"));
  CHECK_FALSE(PaddedFile::read(dir));
  fs::remove_all(dir);
}
