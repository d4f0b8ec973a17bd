#pragma once
// Internals shared by src/load/safetensors.cpp and src/load/checkpoint_index.cpp. Not part of the
// public API: callers outside src/load use include/shardcheck/checkpoint.hpp.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <memory_resource>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "shardcheck/checkpoint.hpp"
#include "util/name_table.hpp"

namespace shardcheck::detail {

// The 8-byte little-endian header length that opens every safetensors file (tensor.rs N_LEN).
inline constexpr std::uint64_t kLengthPrefixBytes = 8;

// A tensor or file name as it appears in a one-line message: in single quotes, control bytes
// escaped (a name may contain anything JSON can encode), very long names cut.
std::string shown(std::string_view name);

// One dtype name of the format ("BF16", "F8_E4M3", ...); nullopt for an unknown name.
std::optional<DType> dtype_from_name(std::string_view text);

// A tensor entry's [begin, end) data offsets, relative to the data region.
struct DataRange {
  std::uint64_t begin = 0, end = 0;
};

// What could be read from one `"name": {...}` entry. Dims live in a buffer shared by all entries
// of a header so that an entry costs no allocation of its own.
struct Entry {
  std::string_view name;  // unescaped; owned by the full parser's tree, or the header text itself
  std::optional<DType> dtype;
  bool shape_ok = false;
  std::uint32_t dims_begin = 0, dims_count = 0;
  std::optional<DataRange> range;  // well-formed and begin <= end
  bool size_ok = false;            // numel x bits computed without overflow; shape fits int64
  bool duplicate = false;
  std::uint64_t name_hash = 0;  // NameTable::hash64(name), set by the duplicate check
};

// Reads a header in the plain form nearly every writer produces (load/plain_json.hpp): tensor
// entries with exactly dtype, shape, data_offsets, names without escapes, integers only, an
// optional __metadata__ of plain strings. Appends entries and dims, fills metadata. False when the
// text is not in that form; the caller then discards what was appended and uses the full parser.
// `text` must be followed by 16 readable bytes.
bool scan_plain_header(std::string_view text, std::vector<Entry>& entries, std::vector<std::uint64_t>& dims,
                       std::map<std::string, std::string>& metadata);

// Reads safetensors headers one after another, reusing its JSON parser and scratch buffers, so
// a thread loading many shards allocates them once instead of per file (the per-file malloc and
// free of a 100 kB header buffer alone made glibc consolidate its heap every time).
class HeaderReader {
 public:
  HeaderReader();
  ~HeaderReader();
  HeaderReader(const HeaderReader&) = delete;
  HeaderReader& operator=(const HeaderReader&) = delete;

  // read_safetensors_file, with this reader's buffers.
  std::optional<SafetensorsFile> read_file(const std::filesystem::path& path, const std::string& label,
                                           DiagnosticSink& sink);
  // parse_safetensors_header, with this reader's buffers.
  std::optional<SafetensorsFile> parse(std::string_view header_json, std::uint64_t header_len, std::uint64_t file_size,
                                       const std::string& label, DiagnosticSink& sink);

  // Off: every header goes through the full parser, never the plain one-pass scan. For tests and
  // fuzz/fuzz_safetensors.cpp, which check that both paths read every input alike.
  void set_plain_scan(bool on);

  // NameTable::hash64 of each tensor name of the last file read, in its `tensors` order (empty
  // when it was rejected). They live in the same arena as the file's tensors, so they must not
  // outlive that file. The loader reuses them to compare the index with the headers.
  std::pmr::vector<std::uint64_t> take_name_hashes();

  struct Scratch;  // defined in safetensors.cpp

 private:
  std::unique_ptr<Scratch> scratch_;
};

using util::NameTable;

// Finds where a JSON object key sits in the raw text, for diagnostics only. The full parser keeps no
// source positions, so on the first error we scan the text once and remember the offset of every
// key at one nesting depth. Keys are matched in their raw (escaped) spelling, so a name written
// with escapes is simply not found and the diagnostic goes without a position.
class KeyLocator {
 public:
  // depth 1 = keys of the top-level object (tensor names in a safetensors header);
  // depth 2 = keys of objects nested one level down (tensor names in an index's weight_map).
  KeyLocator(std::string_view json, int depth) : json_(json), depth_(depth) {}
  std::optional<std::size_t> find(std::string_view key);
  // 1-based line and column of a byte offset, for text files such as the index.
  std::pair<int, int> line_column(std::size_t offset);

 private:
  void scan();
  std::string_view json_;
  int depth_;
  bool scanned_ = false;
  std::unordered_map<std::string_view, std::size_t> first_offset_;
  std::vector<std::size_t> line_starts_;
};

}  // namespace shardcheck::detail
