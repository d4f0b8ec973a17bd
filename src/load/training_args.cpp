// Training arguments as transformers' TrainingArguments and TRL's configs name them (transformers
// training_args.py: per_device_train_batch_size, gradient_checkpointing, bf16, fp16 — both at once is
// refused there too; TRL SFTConfig/DPOConfig max_length, older SFTConfig max_seq_length; TRL
// ModelConfig torch_dtype, renamed dtype). transformers 5.12.1 TrainingArguments.__post_init__ starts
// from ACCELERATE_MIXED_PRECISION (what accelerate launch exports from its config) and replaces it
// with "fp16" or "bf16" when either is true; the Trainer builds its Accelerator with that
// (trainer.py). A false value leaves the config's, so only true values are taken. Read from the
// source, not run. TRL's ModelConfig fields (use_peft, lora_*, load_in_4bit, bnb_4bit_*) are read as
// written, each with its line.
#include "shardcheck/training_args.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "shardcheck/config_doc.hpp"
#include "shardcheck/file_kind.hpp"
#include "util/bounded_read.hpp"

#include <algorithm>
#include <fstream>
#include <optional>
#include <vector>
#include <string>

namespace shardcheck {
namespace {

struct Bad {
  std::string message;
};

std::string where(const std::string& path, const YAML::Node& n) {
  return fmt::format("{}:{}", path, n.Mark().line + 1);
}

std::string found(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  return n.IsSequence() ? "a list" : n.IsMap() ? "a mapping" : "null";
}

std::int64_t positive(const std::string& path, const std::string& key, const YAML::Node& n) {
  std::int64_t v = 0;
  if (!n.IsScalar() || !YAML::convert<std::int64_t>::decode(n, v) || v < 1 || v > (std::int64_t{1} << 24))
    throw Bad{fmt::format("{}:{}:{}: expected a positive integer for {}, found {}", path, n.Mark().line + 1,
                          n.Mark().column + 1, key, found(n))};
  return v;
}

bool boolean(const std::string& path, const std::string& key, const YAML::Node& n) {
  bool v = false;
  if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v))
    throw Bad{fmt::format("{}:{}:{}: expected true or false for {}, found {}", path, n.Mark().line + 1,
                          n.Mark().column + 1, key, found(n))};
  return v;
}

double number(const std::string& path, const std::string& key, const YAML::Node& n) {
  double v = 0;
  if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || !(v >= 0) || v > 1e9)
    throw Bad{fmt::format("{}:{}:{}: expected a non-negative number for {}, found {}", path, n.Mark().line + 1,
                          n.Mark().column + 1, key, found(n))};
  return v;
}

std::string one_of(const std::string& path, const std::string& key, const YAML::Node& n,
                   std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (n.IsScalar() && n.Scalar() == a) return a;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  throw Bad{fmt::format("{}:{}:{}: expected one of {} for {}, found {}", path, n.Mark().line + 1, n.Mark().column + 1,
                        list, key, found(n))};
}

// str | list[str], as TRL's ModelConfig types lora_target_modules and its siblings.
TrainingArgs::Trl::Names names(const std::string& path, const std::string& key, const YAML::Node& n) {
  TrainingArgs::Trl::Names out;
  out.source = where(path, n);
  auto text = [&](const YAML::Node& item) {
    if (!item.IsScalar() || item.Scalar().empty())
      throw Bad{fmt::format("{}:{}:{}: expected a module name or a list of names for {}, found {}", path,
                            item.Mark().line + 1, item.Mark().column + 1, key, found(item))};
    return item.Scalar();
  };
  if (n.IsSequence()) {
    out.list_given = true;
    for (const auto& item : n) out.items.push_back(text(item));
  } else {
    out.items.push_back(text(n));
  }
  return out;
}

// The ModelConfig fields of TRL (trl/trainer/model_config.py, trl 0.27 - 1.x) besides dtype. A
// LLaMA-Factory file (`llamafactory-cli train FILE`: FinetuningArguments' stage and finetuning_type,
// hparams/finetuning_args.py) shares model_name_or_path and lora_* names with it but is read by
// LLaMA-Factory's own parser, which picks the dtype from bf16/fp16 (model/model_utils infer_optim_dtype)
// and builds LoRA from lora_rank/lora_target: TRL's ModelConfig and its float32 default never see it.
void load_trl_fields(const std::string& path, const YAML::Node& root, TrainingArgs::Trl& t) {
  if (root["finetuning_type"] && root["stage"]) return;
  for (const auto& kv : root) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
    t.model_config = t.model_config || key == "model_name_or_path" || key == "use_peft" || key.starts_with("lora_") ||
                     key.starts_with("load_in_") || key.starts_with("bnb_4bit_") || key == "use_bnb_nested_quant";
  }
  auto flag = [&](const char* key, std::optional<Setting<bool>>& out) {
    if (const auto n = root[key]; n && !n.IsNull()) out = Setting<bool>{boolean(path, key, n), where(path, n)};
  };
  flag("use_peft", t.use_peft);
  flag("use_rslora", t.use_rslora);
  flag("use_dora", t.use_dora);
  flag("load_in_4bit", t.load_in_4bit);
  flag("load_in_8bit", t.load_in_8bit);
  flag("use_bnb_nested_quant", t.use_bnb_nested_quant);
  if (const auto n = root["lora_r"]; n && !n.IsNull())
    t.lora_r = Setting<std::int64_t>{positive(path, "lora_r", n), where(path, n)};
  if (const auto n = root["lora_alpha"]; n && !n.IsNull())
    t.lora_alpha = Setting<double>{number(path, "lora_alpha", n), where(path, n)};
  if (const auto n = root["lora_dropout"]; n && !n.IsNull())
    t.lora_dropout = Setting<double>{number(path, "lora_dropout", n), where(path, n)};
  for (auto [key, out] : {std::pair{"lora_target_modules", &t.lora_target_modules},
                          std::pair{"lora_target_parameters", &t.lora_target_parameters},
                          std::pair{"lora_modules_to_save", &t.lora_modules_to_save}})
    if (const auto n = root[key]; n && !n.IsNull()) *out = names(path, key, n);
  if (const auto n = root["bnb_4bit_quant_type"]; n && !n.IsNull())
    t.bnb_4bit_quant_type =
        Setting<std::string>{one_of(path, "bnb_4bit_quant_type", n, {"nf4", "fp4"}), where(path, n)};
  if (const auto n = root["bnb_4bit_quant_storage"]; n && !n.IsNull())
    t.bnb_4bit_quant_storage = Setting<std::string>{
        one_of(path, "bnb_4bit_quant_storage", n, {"uint8", "bfloat16", "float16", "float32"}), where(path, n)};
  // ModelConfig.__post_init__ refuses both.
  if (t.load_in_4bit && t.load_in_8bit && t.load_in_4bit->value && t.load_in_8bit->value)
    throw Bad{
        fmt::format("{}: load_in_4bit and load_in_8bit are both true; TRL's ModelConfig refuses that (\"You "
                    "can't use 8 bit and 4 bit precision at the same time\")",
                    t.load_in_8bit->source)};
}

// Keys of transformers' TrainingArguments and TRL's configs that change what a step holds and that
// the estimate does not model (transformers 5.12.1 training_args.py; trl 0.26 *_config.py). A value
// that turns the feature off is not reported.
constexpr const char* kUnmodelled[] = {
    "torch_compile",             // compiled graphs free and fuse differently
    "activation_offloading",     // TRL: saved activations moved to the CPU
    "beta",                      // DPO / ORPO / KTO / CPO: chosen and rejected concatenated, a reference model
    "num_generations",           // GRPO: completions per prompt and a reference model
    "precompute_ref_log_probs",  // DPO
    "deepspeed",                 // not FSDP
    "fsdp",                      // the Trainer's own FSDP setting (not accelerate's config)
    "optim_target_modules",      // GaLore / APOLLO projections
    "neftune_noise_alpha",
};

bool turned_off(const YAML::Node& n) {
  if (!n || n.IsNull()) return true;
  if (!n.IsScalar()) return false;
  const std::string& v = n.Scalar();
  return v == "false" || v == "False" || v == "0" || v.empty() || v == "null" || v == "None";
}

void load_recipe_fields(const std::string& path, const YAML::Node& root, TrainingArgs& t) {
  if (const auto n = root["optim"]; n && !n.IsNull()) {
    if (!n.IsScalar())
      throw Bad{fmt::format("{}: expected an optimizer name for optim, found {}", where(path, n), found(n))};
    t.optim = Setting<std::string>{n.Scalar(), where(path, n)};
  }
  for (const char* key : {"use_liger_kernel", "use_liger"})
    if (const auto n = root[key]; n && !n.IsNull() && !t.liger)
      t.liger = Setting<bool>{boolean(path, key, n), where(path, n)};
  if (const auto n = root["precompute_ref_log_probs"]; n && !n.IsNull())
    t.precompute_ref_log_probs = Setting<bool>{boolean(path, "precompute_ref_log_probs", n), where(path, n)};
  if (const auto n = root["gradient_accumulation_steps"]; n && !n.IsNull())
    t.gradient_accumulation = Setting<std::int64_t>{positive(path, "gradient_accumulation_steps", n), where(path, n)};
  for (const char* key : kUnmodelled)
    if (const auto n = root[key]; !turned_off(n)) t.unmodelled.emplace_back(key, where(path, n));
}

}  // namespace

std::variant<TrainingArgs, std::string> load_training_args(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fmt::format("cannot read the training arguments file {}", path);
  // A TRL or Trainer config is a few KiB; a bound keeps `--training-args /dev/zero` from reading forever.
  constexpr std::size_t kMaxBytes = std::size_t{1} << 20;
  std::string text;
  if (!util::read_bounded(in, kMaxBytes, text))
    return fmt::format(
        "expected a training arguments file of at most {} bytes, found more (or an unreadable one) in {}", kMaxBytes,
        path);
  return parse_training_args(text, path);
}

// An accelerate config given as the training arguments was accepted silently (none of its keys is
// a training argument): say which file it is and where it goes.
std::optional<std::string> accelerate_config_given(const std::string& path, const YAML::Node& root) {
  std::vector<std::string> keys;
  std::vector<YAML::Mark> marks;
  for (const auto& kv : root)
    if (kv.first.IsScalar()) {
      keys.push_back(kv.first.Scalar());
      marks.push_back(kv.first.Mark());
    }
  const FileKindEvidence kind = file_kind_evidence(keys);
  if (!looks_like_accelerate_config(kind)) return std::nullopt;
  const YAML::Mark first = marks[std::find(keys.begin(), keys.end(), kind.accelerate.front()) - keys.begin()];
  return fmt::format(
      "{}:{}:{}: expected Trainer/TRL training arguments (per_device_train_batch_size, max_length, ...), found an "
      "accelerate config ({}): give it with --config, and the training script's YAML with --training-args",
      path, first.line + 1, first.column + 1, evidence_list(kind.accelerate));
}

std::variant<TrainingArgs, std::string> parse_training_args(const std::string& text, const std::string& path) {
  TrainingArgs t;
  t.path = path;
  try {
    // TRL and HfArgumentParser read the file in text mode (universal newlines), as accelerate does.
    const YAML::Node root = YAML::Load(yaml_universal_newlines(text));
    if (!root.IsMap()) return fmt::format("{}: expected a mapping of training arguments, found {}", path, found(root));
    if (auto wrong = accelerate_config_given(path, root)) return *wrong;
    if (const auto n = root["per_device_train_batch_size"])
      t.micro_batch = Setting<std::int64_t>{positive(path, "per_device_train_batch_size", n), where(path, n)};
    for (const char* key : {"max_length", "max_seq_length"})
      if (const auto n = root[key]; n && !n.IsNull() && !t.seq_len)
        t.seq_len = Setting<std::int64_t>{positive(path, key, n), where(path, n)};
    if (const auto n = root["gradient_checkpointing"])
      t.gradient_checkpointing = Setting<bool>{boolean(path, "gradient_checkpointing", n), where(path, n)};
    const auto bf16 = root["bf16"], fp16 = root["fp16"];
    const bool b = bf16 && boolean(path, "bf16", bf16), f = fp16 && boolean(path, "fp16", fp16);
    if (b && f)
      return fmt::format(
          "{}: bf16 and fp16 are both true; TrainingArguments refuses that (\"At most one of fp16 and "
          "bf16 can be True\")",
          where(path, fp16));
    if (b) t.mixed_precision = Setting<MixedPrecision>{MixedPrecision::bf16, where(path, bf16)};
    if (f) t.mixed_precision = Setting<MixedPrecision>{MixedPrecision::fp16, where(path, fp16)};
    for (const char* key : {"dtype", "torch_dtype"})
      if (const auto n = root[key]; n && !n.IsNull() && !t.load_dtype) {
        const std::string v = n.IsScalar() ? n.Scalar() : "";
        if (v != "auto" && v != "bfloat16" && v != "float16" && v != "float32")
          return fmt::format("{}:{}:{}: expected auto, bfloat16, float16 or float32 for {}, found {}", path,
                             n.Mark().line + 1, n.Mark().column + 1, key, found(n));
        t.load_dtype = Setting<std::string>{v, where(path, n)};
      }
    load_trl_fields(path, root, t.trl);
    load_recipe_fields(path, root, t);
  } catch (const Bad& e) {
    return e.message;
  } catch (const YAML::Exception& e) {
    return fmt::format("{}:{}:{}: not YAML: {}", path, e.mark.line + 1, e.mark.column + 1, e.msg);
  }
  return t;
}

}  // namespace shardcheck
