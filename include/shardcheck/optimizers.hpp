#pragma once
// Stage "load": what an optimizer keeps per trainable element, from rules/optimizers.yaml (data, one
// entry per transformers TrainingArguments.optim name).

#include <optional>
#include <string>

namespace shardcheck {

struct OptimizerModel {
  std::string name = "adamw_torch";
  int states = 2;       // state tensors in the parameter's dtype (AdamW: exp_avg, exp_avg_sq)
  int byte_states = 0;  // one-byte states (bitsandbytes 8-bit) ...
  int block = 0;        // ... with one float32 absmax per `block` elements
  int temporaries = 1;  // parameter-sized temporaries during step() (foreach AdamW's sqrt), in states
  bool known = true;    // false: a name rules/optimizers.yaml does not list (counted as adamw_torch)
  std::string source;   // where the numbers come from
};

// The entry `name` of <rules_dir>/optimizers.yaml; an unknown name gives AdamW's numbers with
// known = false. nullopt with `error` set when the file cannot be read.
std::optional<OptimizerModel> load_optimizer(const std::string& rules_dir, const std::string& name, std::string& error);

}  // namespace shardcheck
