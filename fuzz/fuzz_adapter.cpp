// libFuzzer harness: adapter_config.json parsing, then building the PeftModel on a small Llama tree and
// on a transformers 5 Qwen3-MoE tree (target_parameters, peft's MoE conversion, ParamWrapper)
// (hostile target_modules / exclude_modules / modules_to_save / rank_pattern regexes, layer lists and
// ranks must give findings, never a crash, a hang or an overflow).
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_trees.hpp"
#include "shardcheck/adapter.hpp"
#include "shardcheck/load_tree.hpp"
#include "shardcheck/peft_model.hpp"

using namespace shardcheck;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::optional<ModuleTree> llama = fuzz_tree("llama"), moe = fuzz_tree("qwen3_moe");
  static const std::optional<PeftRules> rules = [] {
    DiagnosticSink sink;
    return PeftRules::load(SHARDCHECK_DEFAULT_RULES_DIR, sink);
  }();
  DiagnosticSink sink;
  const auto adapter =
      parse_adapter_config(std::string_view(reinterpret_cast<const char*>(data), size), "adapter_config.json", sink);
  if (!adapter || !rules) return 0;
  for (const auto* base : {&llama, &moe}) {
    if (!*base) continue;
    ModuleTree tree = **base;
    (void)apply_lora_adapter(tree, *adapter, *rules, sink);
  }
  return 0;
}
