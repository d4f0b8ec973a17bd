#pragma once
// The two YAML files shardcheck reads are easy to swap: an accelerate config (`accelerate config`'s
// output, given with --config) and a Trainer/TRL training recipe (TrainingArguments / SFTConfig /
// ModelConfig fields, given with --training-args). Each kind is recognised from top-level keys only
// the other kind never has, so that a swapped file gets one clear message instead of dozens of
// unknown-key errors, or silence.

#include <string>
#include <string_view>
#include <vector>

namespace shardcheck {

struct FileKindEvidence {
  std::vector<std::string> accelerate;  // keys only an accelerate config has, in file order
  std::vector<std::string> training;    // keys only Trainer/TRL arguments have, in file order
};

FileKindEvidence file_kind_evidence(const std::vector<std::string>& top_level_keys);

// Two or more keys of one kind and none of the other: a file of that kind, whatever it was given as.
bool looks_like_training_args(const FileKindEvidence& e);
bool looks_like_accelerate_config(const FileKindEvidence& e);

// "a, b, c and 3 more" for a message.
std::string evidence_list(const std::vector<std::string>& keys);

}  // namespace shardcheck
