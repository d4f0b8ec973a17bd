#pragma once
// The flags `plan` and `check` share: every FSDP setting can be given on the command line, where it
// overrides the accelerate config file and the environment.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "cli/adapter_flags.hpp"
#include "cli/commands.hpp"
#include "shardcheck/preflight.hpp"

namespace shardcheck::cli {

struct PlanFlags {
  std::string model, config, env_file, format = "text";
  std::string module_tree;  // --module-tree FILE: the model from a dump (docs/module-tree.md)
  bool no_env = false, config_only = false, no_tree = false, dequantize = false;
  std::string transformers_version, torch_version, accelerate_version, attn_implementation;
  std::string peft_version, bitsandbytes_version, trl_version;
  std::string python_env;
  std::string load_dtype;  // --load-dtype: from_pretrained(dtype=...)
  std::string gpu;  // --gpu NAME: a preset of rules/gpus.yaml  // --python-env: the job's virtualenv / conda prefix /
                    // site-packages
  std::optional<int> world_size, num_machines, fsdp_version;
  std::string strategy, policy, wrap_cls, frozen, mixed_precision, gpu_memory;
  std::optional<std::int64_t> min_num_params;
  std::optional<bool> use_orig_params, reshard_after_forward, offload_params, activation_checkpointing;
  std::optional<std::int64_t> seq_len, micro_batch;
  std::string bus_bandwidth, inter_node_bandwidth, fsdp2_caller, backward_prefetch, ignored_modules;
  std::optional<int> dp_replicate;
  std::optional<int> tp_size;
  std::optional<bool> expert_parallel;
  std::optional<int> cp_size;
  std::optional<int> sp_size;
  std::optional<std::string> cp_comm_strategy;
  AdapterFlags adapter;
  std::string caller;         // --caller trainer|accelerate: who prepares a PEFT model
  std::string training_args;  // --training-args FILE: the Trainer / TRL config of the run
  std::string optim;          // --optim NAME: rules/optimizers.yaml
  std::string trainer;        // --trainer sft|dpo: the TRL trainer whose step runs
  std::optional<std::int64_t> gradient_accumulation;
  bool liger = false;  // --liger: fused linear cross-entropy (no logits)
};

void add_plan_flags(CLI::App* cmd, PlanFlags& f);
// Builds the pipeline request; on a bad flag value returns nullopt with the message in `error`.
std::optional<PreflightRequest> make_request(const PlanFlags& f, const CliContext& ctx, std::string& error);

}  // namespace shardcheck::cli
