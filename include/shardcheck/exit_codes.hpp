#pragma once
// Process exit codes. Every failure class has its own code so a CI job can tell a broken download
// from a bad config without parsing text. The table is printed by `shardcheck --help` and the README.

namespace shardcheck {

enum class ExitCode : int {
  ok = 0,
  findings = 1,            // lint/check found errors (or warnings with --strict)
  usage = 2,               // bad command line
  io = 3,                  // a file or directory could not be read
  bad_model_config = 4,    // config.json is not valid JSON or lacks a required field
  bad_safetensors = 5,     // a safetensors header violates the format
  truncated_file = 6,      // a safetensors file is shorter or longer than its header says
  bad_index = 7,           // model.safetensors.index.json disagrees with the shards
  bad_rules = 8,           // a file under rules/ is malformed
  model_mismatch = 9,      // checkpoint tensors disagree with the architecture registry
  bad_accelerate_config = 10,  // the accelerate YAML cannot be parsed at all
  unknown_model = 11,      // model_type not in the registry and no checkpoint to infer from
  internal = 70,           // a bug in shardcheck
};

inline int to_int(ExitCode c) { return static_cast<int>(c); }

}  // namespace shardcheck
