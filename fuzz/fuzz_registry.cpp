// libFuzzer harness: the architecture registry reader (src/resolve/registry_yaml.cpp and
// registry.cpp) on a hostile model file. Each input is written as rules/models/zz_fuzz.yaml into a
// private copy of the real registry (so `extends: llama` and the shared `_*.yaml` libraries resolve),
// loaded, and when it loads, a module tree is built from a small config of that model_type.
// Invariants: no crash, no hang; a bad file is a REG diagnostic. Seed corpus: rules/models.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "shardcheck/model_config.hpp"
#include "shardcheck/module_tree.hpp"
#include "shardcheck/registry.hpp"

using namespace shardcheck;
namespace fs = std::filesystem;

namespace {

// A private copy of rules/models, removed when the fuzzer exits.
struct PrivateRules {
  fs::path dir = fs::temp_directory_path() / ("shardcheck-fuzz-registry-" + std::to_string(::getpid()));
  PrivateRules() {
    fs::create_directories(dir / "models");
    for (const auto& entry : fs::directory_iterator(fs::path(SHARDCHECK_DEFAULT_RULES_DIR) / "models"))
      if (entry.path().extension() == ".yaml")
        fs::copy_file(entry.path(), dir / "models" / entry.path().filename(), fs::copy_options::overwrite_existing);
  }
  ~PrivateRules() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const PrivateRules rules;
  const fs::path& dir = rules.dir;
  {
    std::ofstream out(dir / "models" / "zz_fuzz.yaml", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  DiagnosticSink sink;
  const auto registry = Registry::load(dir, sink, {"zz_fuzz"});
  if (!registry) return 0;
  static const char kConfig[] =
      R"({"model_type": "zz_fuzz", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128, "head_dim": 16})";
  auto cfg = parse_model_config(kConfig, "fuzz.json", sink);
  if (cfg) (void)build_module_tree(*cfg, nullptr, *registry, {}, sink);
  return 0;
}
