// training-args-as-config: a Trainer/TRL training recipe given where an accelerate config goes.
#include <fmt/format.h>

#include "rules/rule_util.hpp"
#include "shardcheck/file_kind.hpp"

namespace shardcheck::rules {

extern const Rule kTrainingArgsAsConfig;
const Rule kTrainingArgsAsConfig{
    .id = "training-args-as-config",
    .severity = Severity::error,
    .summary = "Trainer or TRL training arguments given as the accelerate config",
    .explanation =
        "A training recipe (transformers TrainingArguments fields such as per_device_train_batch_size and "
        "learning_rate, TRL's model_name_or_path, use_peft, max_length...) is not an accelerate config: "
        "load_config_from_file (commands/config/config_args.py, v1.14.0) refuses every key that is no "
        "ClusterConfig field (`ValueError: The config file at ... had unknown keys`), and before that "
        "`accelerate launch --config_file` never sees the training settings. The recipe is read by the training "
        "script (HfArgumentParser / TrlParser), so shardcheck takes it with --training-args. A file with two or more "
        "such keys and more than three times as many of them as accelerate-only keys (compute_environment, "
        "distributed_type, num_processes, ...: a recipe may carry a stray one, as open-r1's GRPO demo carries "
        "num_processes) is reported once, instead of one unknown-key error per line.",
    .fix = "",
    .check = nullptr,  // decided before the rules run (lint_driver.cpp): the other rules would only add noise
};

std::optional<Diagnostic> training_args_as_config(const ConfigDoc& doc) {
  if (!doc.root || !doc.root->is_mapping()) return std::nullopt;
  std::vector<std::string> keys;
  for (const auto& e : doc.root->entries) keys.push_back(e.key);
  const FileKindEvidence kind = file_kind_evidence(keys);
  if (!looks_like_training_args(kind)) return std::nullopt;
  const YamlEntry* first = doc.root->find(kind.training.front());
  Diagnostic d = loader_finding(
      kTrainingArgsAsConfig.id, doc.key_location(*first),
      kind.accelerate.empty()
          ? fmt::format("this looks like Trainer/TRL training arguments ({}), not an accelerate config: it has no "
                        "accelerate key (compute_environment, distributed_type, num_processes, ...)",
                        evidence_list(kind.training))
          : fmt::format("this looks like Trainer/TRL training arguments ({}), not an accelerate config: it has only "
                        "{} accelerate key{} ({}) among them",
                        evidence_list(kind.training), kind.accelerate.size(), kind.accelerate.size() == 1 ? "" : "s",
                        evidence_list(kind.accelerate)),
      "give it to `shardcheck plan` or `check` with --training-args, and the accelerate config (the file of "
      "`accelerate launch --config_file`) with --config");
  return d;
}

}  // namespace shardcheck::rules
