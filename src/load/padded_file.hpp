#pragma once
// A whole file in memory followed by kJsonPadding zero bytes, so that the plain JSON scan
// (load/plain_json.hpp) can read 16 bytes at a time without checking for the end at every step.
//
// Why not a std::string or vector: its buffer comes from new[] and is faulted in one page at a
// time while read() fills it. Here a small buffer is mapped with MAP_POPULATE, every page in one
// system call, and a large one in huge pages (platform/huge_pages.hpp). On the CI machine, a VM where
// each page fault costs ~10 us, reading DeepSeek-V3's 8.9 MB index took 28 ms the first way and
// 8 ms this way (medians of 5, warm page cache). When the program allows it
// (platform/mapped_reads.hpp), a large file is mapped instead, its page-cache pages shared rather than
// copied into fresh memory: ~1 ms.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string_view>

namespace shardcheck::detail {

// Zero bytes after every JSON text this loader scans: at least the 16 that one SSE2 load past the
// last byte may read; 64, so that a whole cache line past the end is always readable.
inline constexpr std::size_t kJsonPadding = 64;

class PaddedFile {
 public:
  // The file's bytes; nullopt when it is not a regular file or cannot be read in full.
  static std::optional<PaddedFile> read(const std::filesystem::path& path);

  PaddedFile(PaddedFile&& other) noexcept;
  PaddedFile& operator=(PaddedFile&& other) noexcept;
  PaddedFile(const PaddedFile&) = delete;
  PaddedFile& operator=(const PaddedFile&) = delete;
  ~PaddedFile();

  const char* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::string_view view() const { return {data_, size_}; }

 private:
  enum class Memory : unsigned char { small_copy, huge_copy, file_map };
  PaddedFile(char* data, std::size_t size, std::size_t mapped, Memory memory)
      : data_(data), size_(size), mapped_(mapped), memory_(memory) {}
  static std::optional<PaddedFile> map(int fd, std::size_t size);
  void release();
  char* data_ = nullptr;
  std::size_t size_ = 0;    // bytes of the file
  std::size_t mapped_ = 0;  // size_ + padding, as mapped
  Memory memory_ = Memory::small_copy;
};

}  // namespace shardcheck::detail
