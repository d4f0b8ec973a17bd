// libFuzzer harness: --module-tree files (src/resolve/module_tree_file.cpp, docs/module-tree.md). Hostile
// JSON, hostile schema values and self-contradicting trees must give one finding with a position,
// never a crash, a hang or an overflow; a tree that loads is wrapped and planned under FSDP1 and FSDP2
// with TRANSFORMER_BASED_WRAP from its own _no_split_modules. The position-keeping JSON reader
// (load/located_json.hpp) is compared with nlohmann's on every input: what it accepts nlohmann
// accepts, and what nlohmann accepts it refuses only for a repeated member name or deep nesting.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>
#include <variant>

#include "load/located_json.hpp"
#include "shardcheck/effective_settings.hpp"
#include "shardcheck/module_tree_file.hpp"
#include "shardcheck/shard_plan.hpp"

using namespace shardcheck;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto located = detail::parse_located_json(text, 64);
  const bool nlohmann_ok = nlohmann::json::accept(text);
  if (std::holds_alternative<detail::LocatedJson>(located) && !nlohmann_ok) __builtin_trap();
  if (const auto* e = std::get_if<detail::LocatedJsonError>(&located); e && nlohmann_ok)
    if (e->message.find("repeated") == std::string::npos && e->message.find("levels of nesting") == std::string::npos)
      __builtin_trap();

  DiagnosticSink sink;
  const std::optional<ModuleTree> tree = parse_module_tree_file(text, "fuzz.json", {}, sink);
  if (!tree) {
    if (sink.count(Severity::error) != 1) __builtin_trap();
    return 0;
  }
  for (int version : {1, 2}) {
    FsdpSettings s;
    s.fsdp_version.value = version;
    s.policy.value = WrapPolicyKind::transformer;
    s.world_size.value = 3;
    DiagnosticSink plan_sink;
    resolve_wrap_classes(*tree, s, plan_sink);
    if (plan_sink.has_errors()) continue;
    (void)(version == 1 ? plan_fsdp1(*tree, s, plan_sink) : plan_fsdp2(*tree, s, plan_sink));
  }
  return 0;
}
