// libFuzzer harness: a Trainer / TRL training-arguments file parsed (src/load/training_args.cpp), then
// TRL's ModelConfig resolved into its LoraConfig and BitsAndBytesConfig and, when that succeeds, the
// PeftModel built on a small transformers 5 MoE tree (Qwen3-MoE config: ParamWrapper conversion) and on
// a Llama tree. Hostile values must give a message or findings, never a crash or a hang.
#include <cstdint>
#include <string>

#include "fuzz_trees.hpp"
#include "shardcheck/load_tree.hpp"
#include "shardcheck/peft_model.hpp"
#include "shardcheck/training_args.hpp"
#include "shardcheck/trl_model_config.hpp"

using namespace shardcheck;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::optional<ModuleTree> llama = fuzz_tree("llama"), moe = fuzz_tree("qwen3_moe");
  static const std::optional<PeftRules> rules = [] {
    DiagnosticSink sink;
    return PeftRules::load(SHARDCHECK_DEFAULT_RULES_DIR, sink);
  }();
  auto parsed = parse_training_args(std::string(reinterpret_cast<const char*>(data), size), "args.yaml");
  const auto* args = std::get_if<TrainingArgs>(&parsed);
  if (!args || !rules) return 0;
  DiagnosticSink sink;
  const bool known = size > 0 && (data[0] & 1);
  const TrlRun run =
      resolve_trl_run(*args, known ? std::optional<Setting<Version>>{{Version{0, 25, 0}, "fuzz"}} : std::nullopt,
                      args->load_dtype ? args->load_dtype->value : "", sink);
  if (!run.adapter) return 0;
  for (const auto* base : {&llama, &moe}) {
    if (!*base) continue;
    ModuleTree tree = **base;
    (void)apply_lora_adapter(tree, *run.adapter, *rules, sink);
  }
  return 0;
}
