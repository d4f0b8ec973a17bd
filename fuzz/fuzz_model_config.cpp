// libFuzzer harness: config.json parsing, then module-tree expansion against the real registry
// (formulas evaluated on hostile field values must fail cleanly, never overflow or hang).
#include <cstdint>
#include <string_view>

#include "shardcheck/model_config.hpp"
#include "shardcheck/module_tree.hpp"
#include "shardcheck/registry.hpp"

using namespace shardcheck;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::optional<Registry> registry = [] {
    DiagnosticSink sink;
    return Registry::load(SHARDCHECK_DEFAULT_RULES_DIR, sink);
  }();
  DiagnosticSink sink;
  auto cfg = parse_model_config(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json", sink);
  if (!cfg || !registry) return 0;
  // Refuse absurd layer/expert counts up front: the tree is materialised, so a config asking for
  // 10^12 layers is a resource problem, not a parser bug (build_module_tree caps it too).
  (void)build_module_tree(*cfg, nullptr, *registry, {}, sink);
  return 0;
}
