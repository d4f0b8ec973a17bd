#pragma once
// Stage "resolve": what TRL builds from the ModelConfig fields of a run's training-arguments file
// (`trl sft --config FILE`, alignment-handbook recipes): peft's LoraConfig (trl/trainer/utils.py
// get_peft_config), transformers' BitsAndBytesConfig (get_quantization_config), the load dtype
// (ModelConfig.dtype) and what SFTTrainer does to the PeftModel's trainable parameters. TRL's
// defaults changed between releases; each rule below names the release it starts in.

#include <optional>
#include <string>

#include "shardcheck/adapter.hpp"
#include "shardcheck/diagnostics.hpp"
#include "shardcheck/quantization.hpp"
#include "shardcheck/settings.hpp"
#include "shardcheck/training_args.hpp"

namespace shardcheck {

struct TrlRun {
  std::optional<LoraAdapter> adapter;              // use_peft: true
  std::optional<Bnb4bitConfig> bnb_4bit;           // load_in_4bit: true
  std::optional<Setting<std::string>> load_dtype;  // ModelConfig's default when the file names none
};

// `trl`: the TRL release when known (flag or Python environment); unknown means the current one.
// `file_load_dtype`: the dtype the run loads in as already decided (flag or file), "" when neither
// says. Findings (TRL001-TRL003) go to `sink`; an 8-bit load is refused (not laid out).
TrlRun resolve_trl_run(const TrainingArgs& args, const std::optional<Setting<Version>>& trl,
                       const std::string& file_load_dtype, DiagnosticSink& sink);

}  // namespace shardcheck
