#pragma once
// Stage "load": a checkpoint's metadata read from safetensors headers only (never tensor data),
// validated as the safetensors crate does (safetensors/src/tensor.rs `read_metadata`/`validate`).

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <memory_resource>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shardcheck/diagnostics.hpp"
#include "shardcheck/dtype.hpp"

namespace shardcheck {

// The format's cap on the JSON header (safetensors/src/tensor.rs MAX_HEADER_SIZE).
inline constexpr std::uint64_t kMaxSafetensorsHeader = 100'000'000;

// One tensor of a header. Its name and shape are views: the loader copies each file's names and
// dimensions into two blocks of the arena that the SafetensorsFile's `storage` owns (one huge-page
// arena per reading thread), so that 92k tensors (DeepSeek-V3) cost no allocation each and their
// descriptions stay at 56 bytes, one cache line, for the passes that walk them all. A TensorInfo
// built by hand views memory its builder keeps alive.
struct TensorInfo {
  std::string_view name;
  std::span<const std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;  // data_offsets, relative to the data region
  std::uint32_t file = 0;            // index into CheckpointMeta::files
  DType dtype = DType::F32;
  std::int64_t numel() const;  // 1 for a 0-rank scalar
};

struct SafetensorsFile {
  // Owns the memory `tensors` and their names and shapes live in; declared first so that it is
  // destroyed last.
  std::shared_ptr<std::pmr::memory_resource> storage;
  std::string path;              // as given / relative to the model directory
  std::uint64_t header_len = 0;  // N from the first 8 bytes
  std::uint64_t file_size = 0;
  std::map<std::string, std::string> metadata;  // __metadata__
  std::pmr::vector<TensorInfo> tensors;         // in header order
  // The largest data_offsets end among `tensors`: the bytes of the data region they describe
  // (kept by the reader, so that callers need not walk 92k tensors again to learn it).
  std::uint64_t data_end = 0;
};

struct CheckpointMeta {
  std::filesystem::path dir;
  bool sharded = false;  // came from model.safetensors.index.json
  std::optional<std::uint64_t> index_total_size;
  std::vector<SafetensorsFile> files;
  std::uint64_t header_bytes_read = 0;  // 8 + N summed over files
};

// Sees each safetensors file of a load as soon as its header is read and validated, on the thread
// that read it, while the file's tensor table is still in that thread's cache: the next stage
// (resolve: naming each tensor's place in the module tree) does its per-tensor work there instead
// of walking 92k cold descriptions after the load. Called from several threads at once, at most
// once per file. A file keeps the address of its `tensors` when it moves into
// CheckpointMeta::files, and no other file of the load gets that address, so the address (with the
// count) identifies it afterwards; the observer keeps nothing else of the file past the call. A
// file seen may still be dropped (a file beside an index that does not name it), and files read
// before the observer was set are not seen.
class FileObserver {
 public:
  virtual ~FileObserver() = default;
  virtual void file_read(const SafetensorsFile& file) noexcept = 0;
};

// Parses one header held in memory. `file_size` is the full file size (for coverage checks);
// `label` names the file in diagnostics. Reports every problem it can find to `sink`.
std::optional<SafetensorsFile> parse_safetensors_header(std::string_view header_json, std::uint64_t header_len,
                                                        std::uint64_t file_size, const std::string& label,
                                                        DiagnosticSink& sink);

// Reads the 8-byte length and the header of one file (and nothing after it).
std::optional<SafetensorsFile> read_safetensors_file(const std::filesystem::path& path, const std::string& label,
                                                     DiagnosticSink& sink);

// Loads a model directory: model.safetensors, or model.safetensors.index.json with its shards.
// Returns nullopt when the directory holds no safetensors at all (config-only directory).
std::optional<CheckpointMeta> load_checkpoint(const std::filesystem::path& dir, DiagnosticSink& sink);

}  // namespace shardcheck
