// smoke --weights under tensor parallelism against REAL transformers 5.12.1: every
// fixtures/oracle2/tp-values/<model>-t<T>-r<R>.json was written by scripts/tp_values_probe.py, which
// loads the tiny saved model with tp_plan="auto" on T gloo ranks and dumps TP rank R's local tensors
// (colwise q_proj and gate_proj rows, rowwise o_proj and down_proj columns, the packed gate_up_proj
// of MoE experts). smoke's WeightReader, given shardcheck's own TP layout, must read exactly those
// values from the checkpoint, bit for bit.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "oracle_case.hpp"
#include "shardcheck/preflight.hpp"
#include "smoke/weights.hpp"
#include "test_files.hpp"

using namespace shardcheck;
using nlohmann::json;
namespace fs = std::filesystem;

TEST_CASE("smoke --weights under TP: each TP rank reads the real local tensors transformers loads") {
  const fs::path oracle = fs::path(SHARDCHECK_FIXTURES_DIR) / "oracle2";
  int compared = 0;
  for (const auto& path : test::json_files(oracle / "tp-values")) {
    const json c = test::read_json(path);
    CAPTURE(path.filename().string());
    const int tp = c.at("tp").get<int>(), rank = c.at("rank").get<int>();
    PreflightRequest req;
    req.rules_dir = SHARDCHECK_SOURCE_DIR "/rules";
    req.model = (oracle / "models" / c.at("model").get<std::string>()).string();
    req.defaults.fsdp_version = {2, "oracle"};
    req.defaults.world_size = {2 * tp, "oracle"};
    req.defaults.tp_size = {tp, "oracle"};
    const PreflightResult r = run_preflight(req);
    REQUIRE(r.tree.has_value());
    REQUIRE(r.plan.has_value());
    REQUIRE(r.plan->tensor_parallel.has_value());
    DiagnosticSink sink;
    auto meta = load_checkpoint(fs::path(req.model), sink);
    REQUIRE(meta.has_value());
    std::map<std::string, std::vector<std::string>> fused;
    for (const Module& m : r.tree->modules)
      for (const ParamInfo& p : m.params)
        if (!p.fused_from.empty()) fused[qualified_name(m.path, p.name)] = p.fused_from;
    smoke::WeightReader reader(std::move(*meta), {}, r.tree->base_model_path, {}, fused);
    reader.set_tp_pieces(smoke::tp_pieces(*r.plan->tensor_parallel, rank));
    for (const json& p : c.at("params")) {
      const std::string name = p.at("name").get<std::string>();
      CAPTURE(name);
      const auto values = p.at("values").get<std::vector<float>>();
      smoke::UnitLayout u;
      u.path = name;
      u.dtype = DType::F32;
      u.params = {name};
      u.param_numels = {static_cast<std::int64_t>(values.size())};
      std::string error;
      REQUIRE_MESSAGE(reader.bind(u, error), error);
      std::vector<float> got(values.size());
      reader.source()(0, 0, static_cast<std::int64_t>(got.size()), reinterpret_cast<std::byte*>(got.data()));
      CHECK(std::memcmp(got.data(), values.data(), values.size() * sizeof(float)) == 0);
      ++compared;
    }
  }
  CHECK(compared >= 6);  // llama_tp: q, o, down, gate; qwen3_moe_tp: gate_up (packed), down
}
