#pragma once
// Stage "resolve": the module tree peft's get_peft_model builds around a transformers model for a
// LoRA adapter (peft 0.20: tuners/tuners_utils.py BaseTuner.inject_adapter, tuners/lora/layer.py,
// utils/other.py ModulesToSaveWrapper), so that FSDP is simulated on the model the job really wraps:
// paths under `base_model.model.`, each targeted layer holding its `base_layer` and the adapters,
// modules_to_save as a frozen original beside a trainable copy, and which parameters train.

#include <cstdint>
#include <map>
#include <optional>
#include <functional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "shardcheck/adapter.hpp"
#include "shardcheck/diagnostics.hpp"
#include "shardcheck/module_tree.hpp"
#include "shardcheck/stack_versions.hpp"

namespace shardcheck {

// rules/peft.yaml: peft's defaults that depend on the model (utils/constants.py
// TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING: the target_modules a LoraConfig without any
// gets for a model_type).
struct PeftRules {
  std::map<std::string, ModuleSelector> default_targets;
  // transformers 5 MoE model_type -> (4.x module name, 5.x parameter peft targets instead), in peft's
  // order (utils/transformers_weight_conversion.py _convert_peft_config_moe).
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> moe_mapping;
  // Expert classes whose 3-D parameters are [experts, in, out].
  std::vector<std::string> transposed_expert_classes;
  // FSDP + QLoRA: package -> {">=" or ">", version} (peft's guide).
  std::map<std::string, std::pair<std::string, Version>> fsdp_qlora_requires;
  static std::optional<PeftRules> load(const std::string& rules_dir, DiagnosticSink& sink);
};

// Rewrites `tree` into the PeftModel, with `tree.peft` saying what was built. Returns false
// (findings in `sink`) where peft itself would raise (no module matched, an unsupported module type)
// or where shardcheck cannot lay the adapter out (DoRA on an embedding). target_parameters (given, or
// peft's conversion of transformers 5 MoE targets) become nested ParamWrapper layers.
// `fold_repeats`: the result may be a folded tree (shardcheck/repeated_blocks.hpp), for a caller whose
// later stages read one.
// With the adapter's saved weights (adapter_model.safetensors' header), they are checked against the
// result too (check_saved_adapter_weights).
bool apply_lora_adapter(ModuleTree& tree, const LoraAdapter& adapter, const PeftRules& rules, DiagnosticSink& sink,
                        bool fold_repeats = false);
// apply_lora_adapter without the check of the saved weights, for a caller that runs it itself.
bool build_peft_model(ModuleTree& tree, const LoraAdapter& adapter, const PeftRules& rules, DiagnosticSink& sink,
                      bool fold_repeats = false);
// The saved weights against the PeftModel `tree` (as built from `adapter`): false with torch's
// size-mismatch error (PEFT008) where a saved matrix does not fit its parameter; a warning (PEFT009)
// for saved tensors with no place. True without saved weights. Reads `tree` only.
bool check_saved_adapter_weights(const ModuleTree& tree, const LoraAdapter& adapter, DiagnosticSink& sink);
// FSDP + QLoRA with a release below peft's guide is a release check: src/check/qlora_releases.cpp.

// The PeftModel parameter a key of adapter_model.safetensors loads into (peft saves without the adapter
// name `name`); `saved_modules`: the paths of the ModulesToSaveWrapper modules.
std::string parameter_of_saved_key(const std::string& key, const std::string& name,
                                   const std::set<std::string>& saved_modules);
// The same with a test for a ModulesToSaveWrapper path (a folded tree answers it by walking down),
// written into `out` (one buffer for a file's keys).
void parameter_of_saved_key(std::string& out, std::string_view key, std::string_view name,
                            const std::function<bool(std::string_view)>& is_saved_module);

// Each frozen base parameter's PeftModel name -> its name in the transformers model (and so in the
// checkpoint): "base_model.model.model.layers.0.self_attn.q_proj.base_layer.weight" ->
// "model.layers.0.self_attn.q_proj.weight". peft only inserts components: `base_model.model.` above
// the model, `base_layer` under a LoRA layer or ParamWrapper, `original_module` under a
// ModulesToSaveWrapper; the adapters and the trainable copies under `modules_to_save` have no base
// name. Empty for a tree without an adapter.
std::unordered_map<std::string, std::string> peft_base_names(const ModuleTree& tree);

// The same with rules/peft.yaml read from `rules_dir`: what inspect, plan and check call.
bool attach_lora_adapter(ModuleTree& tree, const LoraAdapter& adapter, const std::string& rules_dir,
                         DiagnosticSink& sink);

}  // namespace shardcheck
