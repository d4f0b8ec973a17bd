// Tests for detail::PaddedFile (src/load/padded_file.cpp): the index reader's whole-file buffer,
// which the plain JSON scan reads in place 16 bytes at a time, so the bytes must be exact and
// followed by zeroed padding,
// whether it was copied or (when the program allows it) mapped.

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

#include <filesystem>
#include <fstream>
#include <string>

#include "load/padded_file.hpp"
#include "load/plain_json.hpp"
#include "platform/mapped_reads.hpp"

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
  for (std::size_t i = 0; i < shardcheck::detail::kJsonPadding; ++i)
    if (f.data()[f.size() + i] != '\0') return false;
  return true;
}

}  // namespace

TEST_CASE("padded file: the exact bytes of a file, then kJsonPadding zero bytes") {
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

  SUBCASE("the plain scan reads it in place") {
    auto small = PaddedFile::read(write_file(dir / "small.json", "{\"a\": \"b\"}"));
    REQUIRE(small);
    shardcheck::detail::PlainJson in(small->data(), small->data() + small->size());
    std::string_view key, value;
    REQUIRE(in.eat('{'));
    REQUIRE(in.string(key));
    REQUIRE(in.eat(':'));
    REQUIRE(in.string(value));
    CHECK(key == "a");
    CHECK(value == "b");
    CHECK(in.eat('}'));
    CHECK(in.at_end());
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

// --- Mapped reads (platform/mapped_reads.hpp) -------------------------------------------------------

namespace {

// The /proc/self/maps line of the mapping that holds `p`, or "" when none does.
std::string mapping_of(const void* p) {
  std::ifstream maps("/proc/self/maps");
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  for (std::string line; std::getline(maps, line);) {
    std::uintptr_t begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &begin, &end) == 2 && begin <= at && at < end) return line;
  }
  return "";
}

std::string bytes_of_size(std::size_t n) {
  std::string s(n, 'a');
  for (std::size_t i = 0; i < n; i += 997) s[i] = static_cast<char>('0' + i % 10);
  return s;
}

}  // namespace

TEST_CASE("padded file: a large file is mapped once the program allows it, where the padding fits its last page") {
  const fs::path dir = scratch_dir();
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t base = std::size_t{1} << 20;  // PaddedFile maps from 1 MiB on
  REQUIRE(shardcheck::platform::allow_mapped_reads());
  REQUIRE(shardcheck::platform::mapped_reads_allowed());
  struct Case {
    std::size_t size;
    bool mapped;
  };
  for (const Case c : {Case{base + 100, true},         // room for 64 bytes of padding after the tail
                       Case{base + page - 64, true},   // exactly enough
                       Case{base + page - 63, false},  // one byte short: copied
                       Case{base + page, false},       // ends on a page boundary: copied
                       Case{base - 100, false}}) {     // small: always copied
    CAPTURE(c.size);
    const std::string bytes = bytes_of_size(c.size);
    const fs::path path = write_file(dir / ("f" + std::to_string(c.size)), bytes);
    auto f = PaddedFile::read(path);
    REQUIRE(f);
    CHECK(f->view() == bytes);
    CHECK(padding_is_zero(*f));
    const std::string line = mapping_of(f->data());
    CHECK((line.find(path.filename().string()) != std::string::npos) == c.mapped);
  }
  fs::remove_all(dir);
}

#if defined(__SANITIZE_ADDRESS__)
#define SHARDCHECK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SHARDCHECK_ASAN 1
#endif
#endif

#if !defined(SHARDCHECK_ASAN)  // ASan keeps SIGBUS for itself
TEST_CASE("padded file: a mapped file truncated while it is read ends the process with exit 3 and a message") {
  const fs::path dir = scratch_dir();
  const std::string bytes = bytes_of_size((std::size_t{2} << 20) + 100);
  const fs::path path = write_file(dir / "index.json", bytes);
  int err[2];
  REQUIRE(::pipe(err) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::dup2(err[1], STDERR_FILENO);
    shardcheck::platform::allow_mapped_reads();
    auto f = PaddedFile::read(path);
    if (!f) ::_exit(100);
    fs::resize_file(path, 0);                           // another process truncates the file
    volatile char c = f->data()[std::size_t{1} << 20];  // SIGBUS: the page is gone
    (void)c;
    ::_exit(101);  // not reached
  }
  ::close(err[1]);
  std::string message;
  char buf[512];
  for (ssize_t n; (n = ::read(err[0], buf, sizeof buf)) > 0;) message.append(buf, static_cast<std::size_t>(n));
  ::close(err[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);
  CHECK(message.find("an input file shrank while it was being read") != std::string::npos);
  fs::remove_all(dir);
}
#endif
