// Checkpoints bitsandbytes already quantized (fixtures/bnb-prequantized, saved and reloaded by real
// transformers 5.12.1 + bitsandbytes 0.50): shardcheck's tree of each must be the model
// from_pretrained(dir) builds, parameter for parameter, with the same quantization-state bytes, and
// the checkpoint's packed weights and state tensors must match it with no finding.
#include <doctest/doctest.h>

#include <filesystem>

#include "oracle_case.hpp"
#include "shardcheck/load_tree.hpp"
#include "simulate/plan_internal.hpp"
#include "test_files.hpp"

using namespace shardcheck;
using namespace shardcheck::test;
namespace fs = std::filesystem;

TEST_CASE("pre-quantized bitsandbytes checkpoints load as transformers builds them") {
  const fs::path root = fs::path(SHARDCHECK_FIXTURES_DIR) / "bnb-prequantized";
  int compared = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (!entry.is_directory() || entry.path().filename() == "llama-int8") continue;
    CAPTURE(entry.path().string());
    const json rec = read_json(entry.path() / "record.json");
    DiagnosticSink sink;
    ResolveOptions opt;
    opt.transformers = *Version::parse("5.12.1");
    LoadedTree loaded = load_module_tree(entry.path().string(), false, SHARDCHECK_SOURCE_DIR "/rules", opt, sink);
    REQUIRE(loaded.tree.has_value());
    CHECK_MESSAGE(sink.items().empty(), errors_of(sink));
    const ModuleTree& t = *loaded.tree;
    CHECK(t.quantized_4bit());
    std::vector<json> params;
    for (const auto& m : t.modules)
      for (const auto& p : m.params)
        if (!p.buffer)
          params.push_back(json::array({qualified_name(m.path, p.name), p.shape, torch_dtype_name(p.dtype).substr(6),
                                        p.packed_4bit() ? "Params4bit" : "Parameter"}));
    const auto& want = rec.at("params");
    REQUIRE(params.size() == want.size());
    for (std::size_t i = 0; i < params.size(); ++i) CHECK(params[i].dump() == want[i].dump());
    CHECK(t.quant_state_bytes == rec.at("quant_state_bytes").get<std::uint64_t>());
    CHECK(rec.at("same_as_first_load").get<bool>());
    ++compared;
  }
  CHECK(compared == 3);
}

TEST_CASE("a bitsandbytes 8-bit checkpoint is refused, not planned as 16-bit weights") {
  DiagnosticSink sink;
  ResolveOptions opt;
  opt.transformers = *Version::parse("5.12.1");
  LoadedTree loaded = load_module_tree(SHARDCHECK_FIXTURES_DIR "/bnb-prequantized/llama-int8", false,
                                       SHARDCHECK_SOURCE_DIR "/rules", opt, sink);
  CHECK_FALSE(loaded.tree.has_value());
  REQUIRE(sink.has_errors());
  CHECK(sink.items().back().code == "CFG008");
  CHECK(sink.first_error_exit_code() == ExitCode::unknown_model);
}
