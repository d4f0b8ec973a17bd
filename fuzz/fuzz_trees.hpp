#pragma once
// The small module trees the PEFT harnesses build adapters on: a fixture model's config.json expanded
// by the registry as transformers 5.12.1 lays it out (fixtures/models/<model>).
#include <optional>
#include <string>

#include "shardcheck/load_tree.hpp"

inline std::optional<shardcheck::ModuleTree> fuzz_tree(const char* model) {
  shardcheck::DiagnosticSink sink;
  shardcheck::ResolveOptions opt;
  opt.transformers = shardcheck::Version{5, 12, 1};
  return shardcheck::load_module_tree(std::string(SHARDCHECK_SOURCE_DIR "/fixtures/models/") + model + "/config.json",
                                      true, SHARDCHECK_DEFAULT_RULES_DIR, opt, sink)
      .tree;
}
