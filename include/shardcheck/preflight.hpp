#pragma once
// The whole one-way pipeline behind `plan` and `check`: load (model, accelerate config, environment)
// -> resolve (module tree, effective settings, wrap classes) -> check (lint rules) -> simulate
// (shard plan, memory, communication). Renderers take the result; nothing here formats output.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "shardcheck/config_doc.hpp"
#include "shardcheck/lint.hpp"
#include "shardcheck/memory.hpp"
#include "shardcheck/module_tree.hpp"
#include "shardcheck/peft_model.hpp"
#include "shardcheck/settings.hpp"
#include "shardcheck/shard_plan.hpp"
#include "shardcheck/stack_versions.hpp"
#include "shardcheck/training_args.hpp"

namespace shardcheck {

struct PreflightRequest {
  std::string rules_dir;
  std::string model;  // directory or config.json
  // --module-tree: a dump of the live model (shardcheck/module_tree_file.hpp) read instead of `model`
  // through config.json and the registry; "" for none.
  std::string module_tree;
  bool config_only = false;
  ResolveOptions resolve;
  std::optional<std::string> accelerate_config;  // path of the accelerate YAML
  std::vector<EnvVar> env;                       // FSDP_*/ACCELERATE_* of the caller's shell (or --env-file)
  bool lint = false;                             // run the linter on the config (check); plan only reads it
  FsdpSettings defaults;                         // starting point; its versions are replaced by `versions`
  VersionRequest versions;                       // torch/transformers/accelerate: flags and the Python environment
  std::function<void(FsdpSettings&)> overrides;  // command-line flags, applied last
  // --bnb-4bit-* flags over the training-arguments file's 4-bit load (TRL ModelConfig load_in_4bit:
  // true), when the command line has no --load-in-4bit of its own: flags win, field by field.
  std::function<void(Bnb4bitConfig&)> bnb_4bit_overrides;
  MemoryOptions memory;
  std::optional<double> bus_bandwidth;         // bytes/s (nccl-tests busbw) for communication time
  std::optional<double> inter_node_bandwidth;  // bytes/s across machines (groups that span them)
  // A PEFT LoRA adapter: a directory or adapter_config.json (--adapter), or one described by flags
  // (--lora-*) when there is no file; the plan is then of the PeftModel.
  std::string adapter_path;
  std::optional<LoraAdapter> adapter;
  bool prepare_kbit = false;  // peft's prepare_model_for_kbit_training before the adapter
  // The run's training-arguments file (--training-args): its TRL ModelConfig fields give the LoRA and
  // 4-bit settings and the load dtype when no flag does (trl_model_config.hpp).
  std::optional<TrainingArgs> training_args;
  // The caller reads a folded tree and plan (shardcheck/repeated_blocks.hpp): a LoRA model's repeated
  // blocks are then built and planned once, where that is exact (FSDP1; otherwise, or where the plan
  // says it is not exact, the tree is materialised as usual). The text plan reads them; the JSON
  // plan, SARIF and smoke name every unit and do not.
  bool fold_repeats = false;
};

struct PreflightResult {
  DiagnosticSink sink;
  std::optional<ConfigDoc> config_doc;  // for snippets in text output
  std::string planned_config_note;      // "planned with the fixes applied" when the file was broken
  std::optional<ModuleTree> tree;
  FsdpSettings settings;
  std::optional<ShardPlan> plan;
  std::optional<LoraAdapter> adapter;  // the LoRA adapter as read (flags, training args or files)
  MemoryEstimate memory;
  CommVolume comm;
};

PreflightResult run_preflight(const PreflightRequest& req);

}  // namespace shardcheck
