// Training arguments as transformers' TrainingArguments and TRL's configs name them (transformers
// training_args.py: per_device_train_batch_size, gradient_checkpointing, bf16, fp16 — both at once is
// refused there too; TRL SFTConfig/DPOConfig max_length, older SFTConfig max_seq_length; TRL
// ModelConfig torch_dtype, renamed dtype). transformers 5.12.1 TrainingArguments.__post_init__ starts
// from ACCELERATE_MIXED_PRECISION (what accelerate launch exports from its config) and replaces it
// with "fp16" or "bf16" when either is true; the Trainer builds its Accelerator with that
// (trainer.py). A false value leaves the config's, so only true values are taken. Read from the
// source, not run.
#include "shardcheck/training_args.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

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

}  // namespace

std::variant<TrainingArgs, std::string> load_training_args(const std::string& path) {
  TrainingArgs t;
  t.path = path;
  try {
    const YAML::Node root = YAML::LoadFile(path);
    if (!root.IsMap()) return fmt::format("{}: expected a mapping of training arguments, found {}", path, found(root));
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
      return fmt::format("{}: bf16 and fp16 are both true; TrainingArguments refuses that (\"At most one of fp16 and "
                         "bf16 can be True\")",
                         where(path, fp16));
    if (b) t.mixed_precision = Setting<std::string>{"bf16", where(path, bf16)};
    if (f) t.mixed_precision = Setting<std::string>{"fp16", where(path, fp16)};
    for (const char* key : {"dtype", "torch_dtype"})
      if (const auto n = root[key]; n && !n.IsNull() && !t.load_dtype) {
        const std::string v = n.IsScalar() ? n.Scalar() : "";
        if (v != "auto" && v != "bfloat16" && v != "float16" && v != "float32")
          return fmt::format("{}:{}:{}: expected auto, bfloat16, float16 or float32 for {}, found {}", path,
                             n.Mark().line + 1, n.Mark().column + 1, key, found(n));
        t.load_dtype = Setting<std::string>{v, where(path, n)};
      }
  } catch (const Bad& e) {
    return e.message;
  } catch (const YAML::BadFile&) {
    return fmt::format("cannot read the training arguments file {}", path);
  } catch (const YAML::Exception& e) {
    return fmt::format("{}:{}:{}: not YAML: {}", path, e.mark.line + 1, e.mark.column + 1, e.msg);
  }
  return t;
}

}  // namespace shardcheck
