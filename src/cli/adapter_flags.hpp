#pragma once
// The PEFT flags `inspect`, `plan` and `check` share: an adapter directory (--adapter), or the LoRA
// settings of a run that has none saved yet (--lora-*), as peft's LoraConfig takes them.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "shardcheck/adapter.hpp"

namespace shardcheck::cli {

struct AdapterFlags {
  std::string adapter;             // --adapter DIR|adapter_config.json
  std::optional<int> r;            // --lora-r
  std::optional<double> alpha, dropout;
  std::string target_modules, modules_to_save, exclude_modules, bias;
  bool use_dora = false, use_rslora = false, lora_bias = false;

  bool any_lora_flag() const;
};

void add_adapter_flags(CLI::App* cmd, AdapterFlags& f);
// A LoraConfig from the --lora-* flags (nullopt when none is given); on a bad value `error` says why.
std::optional<LoraAdapter> adapter_from_flags(const AdapterFlags& f, std::string& error);

}  // namespace shardcheck::cli
