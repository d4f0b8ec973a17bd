// TRL's ModelConfig turned into what TRL's scripts build from it. Sources (huggingface/trl):
// trl/trainer/model_config.py (fields, defaults, __post_init__), trl/trainer/utils.py get_peft_config
// and get_quantization_config, trl/scripts/utils.py TrlParser.set_defaults_with_config (a YAML value
// becomes the argparse default as written: a string stays a string, a list a list), trl/scripts/sft.py
// (dtype=model_args.dtype), trl/trainer/sft_trainer.py (the bfloat16 cast of a quantized PeftModel's
// trainable parameters). Read from the source at 1.10.0.dev0 (f2cd577) and the tags named below, not run.
#include "shardcheck/trl_model_config.hpp"

#include <fmt/format.h>

#include "shardcheck/finding_codes.hpp"

#include <algorithm>

namespace shardcheck {
namespace {

// ModelConfig.dtype defaults to "float32" from trl 0.27.0 (#4778); before, None left transformers'
// default ("auto" in transformers 5).
constexpr Version kDtypeFloat32Since{0, 27, 0};
// SFTTrainer casts every trainable parameter of a quantized model to bfloat16 after get_peft_model
// from trl 0.26.0 (#4577, "Clean up model preparation"); before, trl's prepare_peft_model decided.
constexpr Version kQuantizedBf16Since{0, 26, 0};

// At the training-arguments field's source; severity and exit code are the catalogue's.
Diagnostic at(const char* code, const std::string& source, const std::string& file, std::string message,
              std::string help) {
  SourceLocation where = source.empty() ? in_file(file) : setting_location(source, file, nullptr);
  return finding(code, std::move(where), std::move(message), std::move(help));
}

std::string release(const std::optional<Setting<Version>>& trl) {
  return trl ? fmt::format("trl {} ({})", trl->value.str(), trl->source) : "the current trl (its version is unknown)";
}

// get_peft_config: LoraConfig(task_type, r, target_modules, target_parameters, lora_alpha,
// lora_dropout, bias="none", use_rslora, use_dora, modules_to_save) with ModelConfig's defaults.
std::optional<LoraAdapter> lora_of(const TrainingArgs& args, DiagnosticSink& sink) {
  const auto& t = args.trl;
  LoraAdapter a;
  a.source = args.path;
  a.task_type = "CAUSAL_LM";  // lora_task_type's default
  a.r = static_cast<int>(t.lora_r ? t.lora_r->value : 16);
  a.lora_alpha = t.lora_alpha ? t.lora_alpha->value : 32;
  a.lora_dropout = t.lora_dropout ? t.lora_dropout->value : 0.05;
  a.bias = "none";
  a.use_rslora = t.use_rslora && t.use_rslora->value;
  a.use_dora = t.use_dora && t.use_dora->value;
  if (t.lora_r) a.field_sources.emplace_back("r", t.lora_r->source);
  if (t.lora_dropout) a.field_sources.emplace_back("lora_dropout", t.lora_dropout->source);
  if (t.use_dora) a.field_sources.emplace_back("use_dora", t.use_dora->source);
  if (const auto& n = t.lora_target_modules) {
    a.field_sources.emplace_back("target_modules", n->source);
    // __post_init__: a one-element list becomes its string, and peft reads a string as one regular
    // expression re.fullmatch-ed against whole module names.
    if (n->items.size() == 1) {
      std::string lower = n->items[0];
      std::ranges::transform(lower, lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (lower == "all-linear") {
        a.target_modules.kind = ModuleSelector::Kind::all_linear;
      } else {
        a.target_modules.kind = ModuleSelector::Kind::regex;
        a.target_modules.regex = n->items[0];
        const bool plain_name = n->items[0].find_first_of(".*+?[](){}|\\^$") == std::string::npos;
        if (n->list_given && plain_name)
          sink.report(at("TRL002", n->source, args.path,
                         fmt::format("lora_target_modules [{0}] has one name: TRL's ModelConfig turns it into the "
                                     "string '{0}', which peft matches as a regular expression against whole module "
                                     "paths (re.fullmatch), so only a top-level module named {0} matches",
                                     n->items[0]),
                         fmt::format("list two or more names, or write the pattern '.*\\.{}'", n->items[0])));
      }
    } else {
      a.target_modules.kind = ModuleSelector::Kind::names;
      a.target_modules.names = n->items;
    }
  }
  if (const auto& n = t.lora_target_parameters) {
    a.target_parameters = n->items;
    a.field_sources.emplace_back("target_parameters", n->source);
  }
  if (const auto& n = t.lora_modules_to_save) {
    if (!n->list_given) {
      // TrlParser keeps the YAML string as the default of a list[str] field; peft's _set_trainable then
      // iterates it one character at a time (key.endswith("l"), key.endswith("m"), ...).
      sink.report(at("TRL003", n->source, args.path,
                     fmt::format("lora_modules_to_save is the string '{}', not a list: TRL passes it to peft as it "
                                 "is, and peft's _set_trainable matches every module whose name ends with any one of "
                                 "its characters",
                                 n->items[0]),
                     fmt::format("write it as a list: lora_modules_to_save: [{}]", n->items[0])));
      return std::nullopt;
    }
    a.modules_to_save = n->items;
    a.field_sources.emplace_back("modules_to_save", n->source);
  }
  return a;
}

}  // namespace

TrlRun resolve_trl_run(const TrainingArgs& args, const std::optional<Setting<Version>>& trl,
                       const std::string& file_load_dtype, DiagnosticSink& sink) {
  TrlRun run;
  const auto& t = args.trl;
  if (!t.model_config) return run;
  std::string dtype = file_load_dtype;
  if (dtype.empty() && (!trl || trl->value >= kDtypeFloat32Since)) {
    run.load_dtype = Setting<std::string>{"float32", fmt::format("{}: TRL ModelConfig's default dtype", args.path)};
    dtype = "float32";
    sink.report(at("TRL001", "", args.path,
                   fmt::format("the file names no dtype: TRL's ModelConfig loads the model in float32 ({}; the "
                               "default since trl 0.27.0)",
                               release(trl)),
                   "add dtype: bfloat16 (or auto) to the file to load in the checkpoint's precision"));
  }
  if (t.load_in_8bit && t.load_in_8bit->value && !(t.load_in_4bit && t.load_in_4bit->value)) {
    sink.report(at("PEFT006", t.load_in_8bit->source, args.path,
                   "load_in_8bit: bitsandbytes' 8-bit Int8Params are not laid out by shardcheck yet",
                   "plan the 4-bit run (load_in_4bit) or the unquantized one"));
    return run;
  }
  if (t.load_in_4bit && t.load_in_4bit->value) {
    Bnb4bitConfig c;
    c.source = t.load_in_4bit->source;
    // bnb_4bit_compute_dtype=model_args.dtype; None (older trl) is BitsAndBytesConfig's float32.
    if (const auto d = parse_torch_dtype(dtype.empty() || dtype == "auto" ? "float32" : dtype)) c.compute_dtype = *d;
    if (t.bnb_4bit_quant_type)
      c.quant_type = t.bnb_4bit_quant_type->value;
    else
      c.quant_type = "nf4";  // ModelConfig's default (BitsAndBytesConfig's own is fp4)
    c.double_quant = t.use_bnb_nested_quant && t.use_bnb_nested_quant->value;
    if (t.bnb_4bit_quant_storage) c.quant_storage = *parse_torch_dtype(t.bnb_4bit_quant_storage->value);
    run.bnb_4bit = c;
  }
  if (!(t.use_peft && t.use_peft->value)) return run;  // get_peft_config returns None
  run.adapter = lora_of(args, sink);
  if (run.adapter && run.bnb_4bit) {
    if (!trl || trl->value >= kQuantizedBf16Since) {
      run.adapter->trainable_dtype = DType::BF16;
      run.adapter->trainable_dtype_source =
          fmt::format("TRL SFTTrainer casts a quantized model's trainable parameters to bfloat16 ({})", release(trl));
    } else {
      sink.report(at("TRL004", t.load_in_4bit->source, args.path,
                     fmt::format("{} prepares a 4-bit PeftModel with its own prepare_peft_model (kbit preparation or "
                                 "autocast_adapter_dtype=False, by where the weights are at that point), which "
                                 "shardcheck does not follow: the adapters are planned in peft's float32",
                                 release(trl)),
                     "check the adapters' dtype on one rank before a long run, or use trl >= 0.26"));
    }
  }
  return run;
}

}  // namespace shardcheck
