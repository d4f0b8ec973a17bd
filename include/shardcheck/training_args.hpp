#pragma once
// Stage "load": the workload a job's training arguments fix, from the YAML (or JSON) file a
// transformers Trainer / TRL run is configured with (TRL's `--config`, alignment-handbook recipes):
// only values the file states; nothing is assumed for a key it leaves out.

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "shardcheck/settings.hpp"

namespace shardcheck {

struct TrainingArgs {
  std::string path;
  std::optional<Setting<std::int64_t>> micro_batch;        // per_device_train_batch_size
  std::optional<Setting<std::int64_t>> seq_len;            // max_length, else max_seq_length (older TRL SFT)
  std::optional<Setting<bool>> gradient_checkpointing;     // TrainingArguments.gradient_checkpointing
  std::optional<Setting<MixedPrecision>> mixed_precision;  // bf16 / fp16 from bf16: true / fp16: true
  std::optional<Setting<std::string>> load_dtype;          // torch_dtype / dtype (TRL ModelConfig)

  // The recipe's memory-relevant choices (docs/step-peak.md).
  std::optional<Setting<std::string>> optim;                   // TrainingArguments.optim
  std::optional<Setting<bool>> liger;                          // use_liger_kernel (TRL < 0.20: use_liger)
  std::optional<Setting<std::int64_t>> gradient_accumulation;  // gradient_accumulation_steps
  std::optional<Setting<bool>> precompute_ref_log_probs;       // TRL DPOConfig: no reference forward in the step
  // Keys the file sets that change a step's memory and that the estimate does not model, with their
  // sources ("FILE:LINE"), so that a verdict never ignores them silently.
  std::vector<std::pair<std::string, std::string>> unmodelled;

  // TRL's ModelConfig (trl/trainer/model_config.py), which `trl sft --config FILE` reads from the same
  // file: the LoRA and 4-bit settings TRL turns into peft's LoraConfig and transformers'
  // BitsAndBytesConfig (trl/trainer/utils.py get_peft_config, get_quantization_config). As written;
  // TRL's defaults and conversions are applied in stage "resolve" (trl_model_config.hpp).
  struct Trl {
    bool model_config = false;  // the file names any ModelConfig field (model_name_or_path, use_peft, ...)
    std::optional<Setting<bool>> use_peft, use_rslora, use_dora, load_in_4bit, load_in_8bit, use_bnb_nested_quant;
    std::optional<Setting<std::int64_t>> lora_r;
    std::optional<Setting<double>> lora_alpha, lora_dropout;
    // A list (list_given) or one string; TRL turns a one-element list into its string.
    struct Names {
      std::vector<std::string> items;
      bool list_given = false;
      std::string source;
    };
    std::optional<Names> lora_target_modules, lora_target_parameters, lora_modules_to_save;
    std::optional<Setting<std::string>> bnb_4bit_quant_type, bnb_4bit_quant_storage;
  } trl;
};

// The values with their "FILE:LINE" sources, or a message "FILE:LINE:COL: expected ..., found ...".
std::variant<TrainingArgs, std::string> load_training_args(const std::string& path);
// The same from the file's text; `path` names it in messages.
std::variant<TrainingArgs, std::string> parse_training_args(const std::string& text, const std::string& path);

}  // namespace shardcheck
