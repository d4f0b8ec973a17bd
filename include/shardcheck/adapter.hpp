#pragma once
// Stage "load": a PEFT LoRA adapter's settings, from adapter_config.json (what peft's
// save_pretrained writes, tuners/lora/config.py LoraConfig, peft 0.20) or from command-line flags for
// a run that has no adapter saved yet. Only what decides the module tree and what trains is kept;
// peft's defaults apply to every field left out.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shardcheck/checkpoint.hpp"
#include "shardcheck/diagnostics.hpp"
#include "shardcheck/dtype.hpp"

namespace shardcheck {

// target_modules / exclude_modules: a list matches a module name exactly or as a "."-suffix; a
// string is a regular expression re.fullmatch-ed against the name; "all-linear" (target_modules
// only, any case) is every Linear/Conv1D but the output embedding (tuners/tuners_utils.py
// check_target_module_exists, _maybe_include_all_linear_layers).
struct ModuleSelector {
  enum class Kind { unset, names, regex, all_linear };
  Kind kind = Kind::unset;
  std::vector<std::string> names;
  std::string regex;
};

struct LoraAdapter {
  std::string source;            // adapter_config.json path, or "command line"
  std::string name = "default";  // the adapter name in module paths (lora_A.<name>)
  std::string peft_type = "LORA";
  std::string task_type;   // "CAUSAL_LM" gives PeftModelForCausalLM; "" a plain PeftModel
  std::string base_model;  // base_model_name_or_path, as peft saved it
  int r = 8;
  double lora_alpha = 8;
  double lora_dropout = 0;
  ModuleSelector target_modules;
  ModuleSelector exclude_modules;
  std::vector<std::string> modules_to_save;
  std::vector<std::string> target_parameters;  // ParamWrapper targets (MoE experts): not modelled
  std::string bias = "none";                   // none | all | lora_only
  bool use_dora = false;
  bool use_rslora = false;
  bool lora_bias = false;
  bool fan_in_fan_out = false;
  // peft's prepare_model_for_kbit_training(model) before get_peft_model (not in adapter_config.json):
  // every fp16/bf16 parameter but Params4bit becomes float32 (utils/other.py).
  bool prepare_kbit = false;
  // A cast of every trainable parameter after get_peft_model (TRL's SFTTrainer does it to bfloat16 for
  // a quantized model, trl >= 0.26), with where that rule comes from.
  std::optional<DType> trainable_dtype;
  std::string trainable_dtype_source;
  // Per-module rank and alpha: the first key (a regex) for which re.match(r"(.*\.)?(KEY)$", name)
  // succeeds (utils/other.py get_pattern_key), in the file's order.
  std::vector<std::pair<std::string, int>> rank_pattern;
  std::vector<std::pair<std::string, double>> alpha_pattern;
  std::optional<std::vector<int>> layers_to_transform;
  std::vector<std::string> layers_pattern;
  // Where each field was read ("adapter_config.json:LINE" or "--lora-r"), for findings.
  std::vector<std::pair<std::string, std::string>> field_sources;
  // The saved weights beside adapter_config.json (adapter_model.safetensors: header only), when
  // present: PeftModel.from_pretrained loads them into the PeftModel.
  std::optional<SafetensorsFile> weights;

  std::string source_of(const std::string& field) const;
};

// Reads DIR/adapter_config.json or the file itself. Problems go to `sink` with
// ExitCode::bad_adapter: invalid JSON, a field of the wrong type or out of range, a PEFT method other
// than LoRA.
std::optional<LoraAdapter> load_adapter_config(const std::string& path, DiagnosticSink& sink);
std::optional<LoraAdapter> parse_adapter_config(std::string_view text, const std::string& label, DiagnosticSink& sink);

// A model argument that is a PEFT adapter directory (adapter_config.json and no config.json, as a
// Trainer checkpoint of a LoRA run is): the model becomes its base_model_name_or_path and the
// directory the adapter, as PeftModel.from_pretrained / AutoPeftModelForCausalLM would load them,
// with a note (PEFT010) saying so. Returns false (and leaves both alone) otherwise; an adapter without
// a base model is an error (PEFT002) and leaves `model` unchanged.
bool split_adapter_model(std::string& model, std::string& adapter_path, DiagnosticSink& sink);

}  // namespace shardcheck
