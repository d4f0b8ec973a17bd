#pragma once
// The PEFT flags `inspect`, `plan` and `check` share: an adapter directory (--adapter), or the LoRA
// settings of a run that has none saved yet (--lora-*), as peft's LoraConfig takes them.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "shardcheck/adapter.hpp"
#include "shardcheck/quantization.hpp"

namespace shardcheck::cli {

struct AdapterFlags {
  std::string adapter;   // --adapter DIR|adapter_config.json
  std::optional<int> r;  // --lora-r
  std::optional<double> alpha, dropout;
  std::string target_modules, modules_to_save, exclude_modules, bias;
  bool use_dora = false, use_rslora = false, lora_bias = false;
  bool prepare_kbit = false;  // --prepare-model-for-kbit-training
  // QLoRA: BitsAndBytesConfig(load_in_4bit=True, ...)
  bool load_in_4bit = false, double_quant = false;
  std::string quant_storage, compute_dtype, quant_type;

  bool any_lora_flag() const;
  // What the flags add to an adapter however it was given (--prepare-model-for-kbit-training).
  void apply_to(std::optional<LoraAdapter>& a) const;
};

void add_adapter_flags(CLI::App* cmd, AdapterFlags& f);
// A LoraConfig from the --lora-* flags (nullopt when none is given); on a bad value `error` says why.
std::optional<LoraAdapter> adapter_from_flags(const AdapterFlags& f, std::string& error);
// BitsAndBytesConfig from --load-in-4bit and --bnb-4bit-* (nullopt without --load-in-4bit). Without
// it, --bnb-4bit-* flags are an error unless `file_loads_4bit` (the --training-args file says
// load_in_4bit: true): they then refine that load, through bnb_overrides.
std::optional<Bnb4bitConfig> bnb_from_flags(const AdapterFlags& f, std::string& error, bool file_loads_4bit = false);
// What the --bnb-4bit-* flags set, applied to a 4-bit config from elsewhere.
void bnb_overrides(const AdapterFlags& f, Bnb4bitConfig& c);

}  // namespace shardcheck::cli
