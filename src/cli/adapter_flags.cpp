#include "cli/adapter_flags.hpp"
#include "cli/choices.hpp"

#include <fmt/format.h>

#include "shardcheck/text.hpp"

namespace shardcheck::cli {

bool AdapterFlags::any_lora_flag() const {
  return r || alpha || dropout || !target_modules.empty() || !modules_to_save.empty() || !exclude_modules.empty() ||
         !bias.empty() || use_dora || use_rslora || lora_bias;
}

void AdapterFlags::apply_to(std::optional<LoraAdapter>& a) const {
  if (a) a->prepare_kbit = prepare_kbit;
}

void add_adapter_flags(CLI::App* cmd, AdapterFlags& f) {
  cmd->add_option("--adapter", f.adapter,
                  "A PEFT LoRA adapter (a directory with adapter_config.json, or the file): plan the PeftModel");
  cmd->add_option("--lora-r", f.r, "LoRA rank of a run with no adapter saved yet (peft default 8)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--lora-alpha", f.alpha, "LoRA alpha (peft default 8)");
  cmd->add_option("--lora-dropout", f.dropout, "LoRA dropout (peft default 0)");
  cmd->add_option("--lora-target-modules", f.target_modules,
                  "Comma-separated module names, all-linear, or a regular expression (peft's target_modules; "
                  "default: peft's for the model_type)");
  cmd->add_option("--lora-modules-to-save", f.modules_to_save, "Comma-separated modules trained in full and saved");
  cmd->add_option("--lora-exclude-modules", f.exclude_modules, "Comma-separated module names LoRA skips");
  cmd->add_option("--lora-bias", f.bias, "none, all or lora_only")->check(one_of({"none", "all", "lora_only"}));
  cmd->add_flag("--use-dora", f.use_dora, "DoRA (a magnitude vector per LoRA layer)");
  cmd->add_flag("--use-rslora", f.use_rslora, "rank-stabilised LoRA scaling (no change to the layout)");
  cmd->add_flag("--lora-bias-param", f.lora_bias, "peft's lora_bias: a bias on every lora_B");
  cmd->add_flag("--prepare-model-for-kbit-training", f.prepare_kbit,
                "peft's prepare_model_for_kbit_training before the adapter: fp16/bf16 parameters become float32");
  cmd->add_flag("--load-in-4bit", f.load_in_4bit, "QLoRA: load with BitsAndBytesConfig(load_in_4bit=True)");
  const std::vector<std::string> dtypes{"uint8", "bfloat16", "float16", "float32"};
  cmd->add_option("--bnb-4bit-quant-storage", f.quant_storage, "Params4bit storage dtype (default uint8)")
      ->check(one_of(dtypes));
  cmd->add_option("--bnb-4bit-compute-dtype", f.compute_dtype, "4-bit compute dtype (default float32)")
      ->check(one_of({"bfloat16", "float16", "float32"}));
  cmd->add_option("--bnb-4bit-quant-type", f.quant_type, "fp4 (default) or nf4")->check(one_of({"fp4", "nf4"}));
  cmd->add_flag("--bnb-4bit-use-double-quant", f.double_quant, "Quantize the quantization constants too");
}

void bnb_overrides(const AdapterFlags& f, Bnb4bitConfig& c) {
  if (!f.quant_storage.empty()) c.quant_storage = *parse_torch_dtype(f.quant_storage);
  if (!f.compute_dtype.empty()) c.compute_dtype = *parse_torch_dtype(f.compute_dtype);
  if (!f.quant_type.empty()) c.quant_type = f.quant_type;
  if (f.double_quant) c.double_quant = true;
}

std::optional<Bnb4bitConfig> bnb_from_flags(const AdapterFlags& f, std::string& error, bool file_loads_4bit) {
  if (!f.load_in_4bit) {
    const bool any = !f.quant_storage.empty() || !f.compute_dtype.empty() || !f.quant_type.empty() || f.double_quant;
    if (any && !file_loads_4bit)
      error =
          "the --bnb-4bit-* flags describe a 4-bit load: add --load-in-4bit (or give --training-args with "
          "load_in_4bit: true)";
    return std::nullopt;
  }
  Bnb4bitConfig c;
  c.source = "--load-in-4bit";
  bnb_overrides(f, c);
  return c;
}

namespace {

// A comma list, or one pattern: peft takes a list of names or one regex string; on the command line a
// value with a comma or made only of name characters is a list.
ModuleSelector selector(const std::string& text, bool allow_all_linear) {
  ModuleSelector s;
  std::string lower = text;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (allow_all_linear && lower == "all-linear") {
    s.kind = ModuleSelector::Kind::all_linear;
    return s;
  }
  const bool plain =
      text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,") == std::string::npos;
  if (plain || text.find(',') != std::string::npos) {
    s.kind = ModuleSelector::Kind::names;
    for (auto& n : python_split(text, ','))
      if (!n.empty()) s.names.push_back(n);
    return s;
  }
  s.kind = ModuleSelector::Kind::regex;
  s.regex = text;
  return s;
}

}  // namespace

std::optional<LoraAdapter> adapter_from_flags(const AdapterFlags& f, std::string& error) {
  if (!f.any_lora_flag()) return std::nullopt;
  if (!f.adapter.empty()) {
    error = "--adapter reads the LoRA settings from adapter_config.json; drop the --lora-* flags, or --adapter";
    return std::nullopt;
  }
  LoraAdapter a;
  a.source = "command line";
  a.task_type = "CAUSAL_LM";
  if (f.r) {
    a.r = *f.r;
    a.field_sources.emplace_back("r", "--lora-r");
  }
  if (f.alpha) a.lora_alpha = *f.alpha;
  if (f.dropout) {
    a.lora_dropout = *f.dropout;
    a.field_sources.emplace_back("lora_dropout", "--lora-dropout");
  }
  if (!f.target_modules.empty()) {
    a.target_modules = selector(f.target_modules, true);
    a.field_sources.emplace_back("target_modules", "--lora-target-modules");
  }
  if (!f.exclude_modules.empty()) a.exclude_modules = selector(f.exclude_modules, false);
  for (auto& n : python_split(f.modules_to_save, ','))
    if (!n.empty()) a.modules_to_save.push_back(n);
  if (!f.bias.empty()) a.bias = f.bias;
  a.use_dora = f.use_dora;
  a.use_rslora = f.use_rslora;
  a.lora_bias = f.lora_bias;
  if (a.use_dora) a.field_sources.emplace_back("use_dora", "--use-dora");
  return a;
}

}  // namespace shardcheck::cli
