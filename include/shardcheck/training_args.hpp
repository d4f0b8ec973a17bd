#pragma once
// Stage "load": the workload a job's training arguments fix, from the YAML (or JSON) file a
// transformers Trainer / TRL run is configured with (TRL's `--config`, alignment-handbook recipes):
// only values the file states; nothing is assumed for a key it leaves out.

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "shardcheck/settings.hpp"

namespace shardcheck {

struct TrainingArgs {
  std::string path;
  std::optional<Setting<std::int64_t>> micro_batch;       // per_device_train_batch_size
  std::optional<Setting<std::int64_t>> seq_len;           // max_length, else max_seq_length (older TRL SFT)
  std::optional<Setting<bool>> gradient_checkpointing;    // TrainingArguments.gradient_checkpointing
  std::optional<Setting<std::string>> mixed_precision;    // "bf16" / "fp16" from bf16: true / fp16: true
  std::optional<Setting<std::string>> load_dtype;         // torch_dtype / dtype (TRL ModelConfig)
};

// The values with their "FILE:LINE" sources, or a message "FILE:LINE:COL: expected ..., found ...".
std::variant<TrainingArgs, std::string> load_training_args(const std::string& path);

}  // namespace shardcheck
