#pragma once
// --weights: the real parameter bytes behind a unit's layout, read from the checkpoint's
// safetensors files with positioned reads (header offsets from the core loader), so a rank reads
// exactly the byte ranges of its own shard and nothing else.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shardcheck/checkpoint.hpp"
#include "shardcheck/tensor_parallel.hpp"
#include "smoke/layout.hpp"
#include "smoke/pattern.hpp"

namespace shardcheck::smoke {

// Tensor parallelism: the piece of a checkpoint tensor a parameter holds on this TP rank
// (transformers 5.12.1 get_tensor_shard: torch.chunk pieces along one dimension; a packed style cuts
// each of its blocks alike, e.g. gate and up of a fused gate_up_proj).
struct TpPiece {
  std::vector<std::int64_t> full_shape;  // the checkpoint tensor's
  int dim = 0;                           // the split dimension
  std::int64_t blocks = 1;               // packed blocks along it
  std::int64_t start = 0;                // this rank's first index within each block
  std::int64_t length = 0;               // its length within each block
};

// This TP rank's piece of every parameter the layout cuts, by name.
std::map<std::string, TpPiece> tp_pieces(const TensorParallelLayout& layout, int tp_rank);

// Calls read(full_offset, numel, dst_offset) for the runs of the full (checkpoint) tensor that hold
// elements [local_offset, local_offset + numel) of the TP-local tensor, in local order.
void for_tp_runs(const TpPiece& piece, std::int64_t local_offset, std::int64_t numel,
                 const std::function<void(std::int64_t, std::int64_t, std::int64_t)>& read);

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

  // Under tensor parallelism: parameter -> the piece of its checkpoint tensor this rank holds.
  void set_tp_pieces(std::map<std::string, TpPiece> pieces) { tp_pieces_ = std::move(pieces); }

  // Binds the unit's parameters to checkpoint tensors; error text when one is missing or its dtype
  // or size differs from the plan (the whole tensor's size for a TP piece).
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
  bool bind_fused(const UnitLayout& u, std::size_t i, const std::vector<std::string>& globs, std::int64_t expected,
                  Bound& out, std::string& error);
  // Reads elements [offset, offset + numel) of bound parameter `param`'s stored tensor.
  void read_stored(int param, std::int64_t offset, std::int64_t numel, std::byte* dst);
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
  std::map<std::string, TpPiece> tp_pieces_;
  std::vector<const TpPiece*> bound_tp_;  // per bound parameter: its TP piece, or nullptr
  int width_ = 0;
  std::int64_t bytes_read_ = 0;
};

}  // namespace shardcheck::smoke
