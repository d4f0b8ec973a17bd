#pragma once
// --weights: the real parameter bytes behind a unit's layout, read from the checkpoint's
// safetensors files with positioned reads (header offsets from the core loader), so a rank reads
// exactly the byte ranges of its own shard and nothing else.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
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
  // `fused`: parameter -> the globs of ParamInfo::fused_from (5.x fused MoE experts), read as the
  // concatenation transformers builds while loading.
  WeightReader(CheckpointMeta meta, std::map<std::string, std::string> aliases, std::string base_prefix = "",
               std::vector<std::pair<std::string, std::string>> renames = {},
               std::map<std::string, std::vector<std::string>> fused = {});
  ~WeightReader();
  WeightReader(const WeightReader&) = delete;
  WeightReader& operator=(const WeightReader&) = delete;

  // A PEFT adapter's saved tensors (adapter_model.safetensors, as `adapter`), and for each PeftModel
  // parameter they hold, its key there (peft_model.hpp parameter_of_saved_key, inverted).
  void add_adapter(CheckpointMeta adapter, std::map<std::string, std::string> keys);

  // Binds the unit's parameters to checkpoint tensors; error text when one is missing or its dtype
  // or size differs from the plan.
  bool bind(const UnitLayout& u, std::string& error);
  // Reads elements of the bound unit; throws std::runtime_error naming the file on a short read.
  RealBytes source();
  std::int64_t bytes_read() const { return bytes_read_; }

 private:
  // One checkpoint tensor's bytes, `numel` elements from absolute file offset `data_start`.
  struct Piece {
    int fd = -1;
    std::string file;
    std::uint64_t data_start = 0;
    std::int64_t numel = 0;
  };
  // A parameter: one piece, or the pieces of a fused parameter in element order.
  using Bound = std::vector<Piece>;
  int open_file(const CheckpointMeta& meta, std::uint32_t index);
  // The stored tensor and the checkpoint (the model's or the adapter's) that holds it.
  std::pair<const CheckpointMeta*, const TensorInfo*> find_stored(const std::string& param) const;
  bool bind_fused(const UnitLayout& u, std::size_t i, const std::vector<std::string>& globs, Bound& out,
                  std::string& error);
  Piece piece_of(const CheckpointMeta& meta, const TensorInfo& t);

  CheckpointMeta meta_;
  std::map<std::string, std::string> aliases_;
  std::string base_prefix_;
  std::vector<std::pair<std::string, std::string>> renames_;
  std::map<std::string, std::vector<std::string>> fused_;
  std::optional<CheckpointMeta> adapter_;
  std::map<std::string, std::string> adapter_keys_;
  std::map<std::string, int> fds_;  // by path
  std::vector<Bound> bound_;
  int width_ = 0;
  std::int64_t bytes_read_ = 0;
};

}  // namespace shardcheck::smoke
