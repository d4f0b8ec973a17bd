// Recognising an accelerate config and a Trainer/TRL recipe from their top-level keys.
#include "shardcheck/file_kind.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace shardcheck {
namespace {

// Fields of ClusterConfig (accelerate commands/config/config_args.py, v0.20.0..v1.14.0) that are no
// field of transformers' TrainingArguments (training_args.py, v4.40..v5) nor of TRL's configs. Left out
// on purpose: use_cpu and debug (TrainingArguments has both), fp16 (both files) and fsdp_config
// (TrainingArguments.fsdp_config, the dict or file of `--fsdp full_shard ...`, is a recipe key too).
constexpr std::array<std::string_view, 21> kAccelerateOnly = {"compute_environment",
                                                              "distributed_type",
                                                              "deepspeed_config",
                                                              "megatron_lm_config",
                                                              "num_processes",
                                                              "num_machines",
                                                              "machine_rank",
                                                              "main_training_function",
                                                              "main_process_ip",
                                                              "main_process_port",
                                                              "rdzv_backend",
                                                              "same_network",
                                                              "downcast_bf16",
                                                              "tpu_env",
                                                              "tpu_use_cluster",
                                                              "tpu_use_sudo",
                                                              "dynamo_config",
                                                              "parallelism_config",
                                                              "fp8_config",
                                                              "enable_cpu_affinity",
                                                              "gpu_ids"};

// Fields of transformers' TrainingArguments (training_args.py) and of TRL's ScriptArguments /
// ModelConfig / SFTConfig / DPOConfig (trl/scripts/utils.py, trl/trainer/model_config.py,
// sft_config.py, dpo_config.py), the ones recipes write most, none of them an accelerate config key.
constexpr std::array<std::string_view, 40> kTrainingOnly = {"output_dir",
                                                            "per_device_train_batch_size",
                                                            "per_device_eval_batch_size",
                                                            "learning_rate",
                                                            "num_train_epochs",
                                                            "max_steps",
                                                            "gradient_accumulation_steps",
                                                            "warmup_ratio",
                                                            "warmup_steps",
                                                            "lr_scheduler_type",
                                                            "logging_steps",
                                                            "save_steps",
                                                            "save_strategy",
                                                            "eval_strategy",
                                                            "evaluation_strategy",
                                                            "weight_decay",
                                                            "report_to",
                                                            "push_to_hub",
                                                            "hub_model_id",
                                                            "optim",
                                                            "gradient_checkpointing",
                                                            "bf16",
                                                            "tf32",
                                                            "seed",
                                                            "model_name_or_path",
                                                            "dataset_name",
                                                            "dataset_text_field",
                                                            "max_seq_length",
                                                            "max_length",
                                                            "packing",
                                                            "torch_dtype",
                                                            "attn_implementation",
                                                            "use_peft",
                                                            "lora_r",
                                                            "lora_alpha",
                                                            "lora_target_modules",
                                                            "load_in_4bit",
                                                            "beta",
                                                            "run_name",
                                                            "logging_dir"};

template <std::size_t N>
bool in(const std::array<std::string_view, N>& set, std::string_view key) {
  return std::find(set.begin(), set.end(), key) != set.end();
}

}  // namespace

FileKindEvidence file_kind_evidence(const std::vector<std::string>& top_level_keys) {
  FileKindEvidence e;
  for (const auto& k : top_level_keys) {
    if (in(kAccelerateOnly, k)) e.accelerate.push_back(k);
    if (in(kTrainingOnly, k)) e.training.push_back(k);
  }
  return e;
}

// One kind's keys must outnumber the other's by far: real recipes carry a stray accelerate key or two
// (open-r1's GRPO demo has `num_processes: 7` among 35 TRL keys; a recipe named fsdp_config.yaml ends with
// num_processes and mixed_precision), and a file with keys of both kinds in like numbers is neither.
constexpr std::size_t kOutnumber = 3;

bool looks_like_training_args(const FileKindEvidence& e) {
  return e.training.size() >= 2 && e.training.size() > kOutnumber * e.accelerate.size();
}

bool looks_like_accelerate_config(const FileKindEvidence& e) {
  return e.accelerate.size() >= 2 && e.accelerate.size() > kOutnumber * e.training.size();
}

std::string evidence_list(const std::vector<std::string>& keys) {
  constexpr std::size_t kShown = 4;
  std::string out;
  for (std::size_t i = 0; i < keys.size() && i < kShown; ++i) out += (i ? ", " : "") + keys[i];
  if (keys.size() > kShown) out += fmt::format(" and {} more", keys.size() - kShown);
  return out;
}

}  // namespace shardcheck
