#pragma once
// --weights: the real parameter bytes behind a unit's layout, read from the checkpoint's
// safetensors files with positioned reads (header offsets from the core loader), so a rank reads
// exactly the byte ranges of its own shard and nothing else.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "shardcheck/checkpoint.hpp"
#include "smoke/layout.hpp"
#include "smoke/pattern.hpp"

namespace shardcheck::smoke {

class WeightReader {
 public:
  // `aliases`: tied parameter -> the tensor that stores it (checkpoints keep one copy).
  // `base_prefix`: the base model's attribute ("transformer"): a base-model checkpoint (gpt2's)
  // stores "h.0.attn..." for "transformer.h.0.attn..." (modeling_utils.py strips/adds it on load).
  // `renames`: (on disk, in the model) substring pairs transformers applies when loading
  // (the registry's checkpoint.renames that hold for the target version, e.g. embed_out. -> lm_head.).
  WeightReader(CheckpointMeta meta, std::map<std::string, std::string> aliases, std::string base_prefix = "",
               std::vector<std::pair<std::string, std::string>> renames = {});
  ~WeightReader();
  WeightReader(const WeightReader&) = delete;
  WeightReader& operator=(const WeightReader&) = delete;

  // Binds the unit's parameters to checkpoint tensors; error text when one is missing or its dtype
  // or size differs from the plan.
  bool bind(const UnitLayout& u, std::string& error);
  // Reads elements of the bound unit; throws std::runtime_error naming the file on a short read.
  RealBytes source();
  std::int64_t bytes_read() const { return bytes_read_; }

 private:
  struct Bound {
    int fd = -1;
    std::string file;
    std::uint64_t data_start = 0;  // absolute file offset of the tensor's first byte
  };
  int open_file(std::uint32_t index);

  CheckpointMeta meta_;
  std::map<std::string, std::string> aliases_;
  std::string base_prefix_;
  std::vector<std::pair<std::string, std::string>> renames_;
  std::map<std::uint32_t, int> fds_;
  std::vector<Bound> bound_;
  int width_ = 0;
  std::int64_t bytes_read_ = 0;
};

}  // namespace shardcheck::smoke
