// libFuzzer harness: adapter_config.json parsing, then building the PeftModel on a small Llama tree and
// on a transformers 5 Qwen3-MoE tree (target_parameters, peft's MoE conversion, ParamWrapper)
// (hostile target_modules / exclude_modules / modules_to_save / rank_pattern regexes, layer lists and
// ranks must give findings, never a crash, a hang or an overflow). It also reads every input with the
// plain reader (load/plain_json_value.hpp) and with nlohmann's parser: where the plain reader accepts,
// both must give the same value, type for type and member for member.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_trees.hpp"
#include "load/padded_file.hpp"
#include "load/plain_json_value.hpp"
#include "shardcheck/adapter.hpp"
#include "shardcheck/load_tree.hpp"
#include "shardcheck/peft_model.hpp"

using namespace shardcheck;

namespace {

using json = nlohmann::ordered_json;

// Equal values of the same types, objects in the same member order (json's == calls 1 and 1u equal).
bool same(const json& a, const json& b) {
  if (a.type() != b.type()) return false;
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    auto x = a.begin();
    for (auto y = b.begin(); y != b.end(); ++x, ++y)
      if (x.key() != y.key() || !same(x.value(), y.value())) return false;
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same(a[i], b[i])) return false;
    return true;
  }
  return a == b;
}

void compare_readers(std::string_view text) {
  std::string padded(text);
  padded.append(detail::kJsonPadding, '\0');
  std::vector<detail::TopLevelKey> keys;
  const auto plain = detail::read_plain_json_value(std::string_view(padded).substr(0, text.size()), &keys);
  if (!plain) return;
  json full;
  try {
    full = json::parse(text);
  } catch (const json::exception&) {
    __builtin_trap();  // the plain reader accepted what nlohmann refuses
  }
  if (!same(*plain, full)) __builtin_trap();
  for (const auto& [key, at] : keys)
    if (at >= text.size() || text[at] != '"' || !full.contains(std::string(key))) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  compare_readers(std::string_view(reinterpret_cast<const char*>(data), size));
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
