// `plan` with the repeated blocks of a LoRA model held once (PreflightRequest::fold_repeats, what
// the text plan asks for) must print exactly what the materialised plan prints: the module tree with
// its unit marks, the unit table, memory, communication and every finding, byte for byte, and give
// the same numbers. The materialised pipeline is the reference; this runs both on real models and
// real peft adapters under the settings that change units, shards, memory and findings.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <functional>

#include "oracle_case.hpp"
#include "shardcheck/preflight.hpp"
#include "shardcheck/report.hpp"
#include "test_files.hpp"

using namespace shardcheck;
using namespace shardcheck::test;
namespace fs = std::filesystem;

namespace folded_plan_test {

const fs::path kFixtures = fs::path(SHARDCHECK_FIXTURES_DIR);

struct Outcome {
  std::string text;
  std::vector<Diagnostic> findings;
  bool folded = false;
  bool planned = false;
  std::string policy;  // the wrap policy and where it came from: a stopped run keeps the settings it had
  std::uint64_t peak = 0;
  std::vector<std::uint64_t> rank_totals;
  CollectiveBytes comm;
};

Outcome run(PreflightRequest req, bool fold) {
  req.fold_repeats = fold;
  const PreflightResult r = run_preflight(req);
  Outcome o;
  if (r.plan && r.tree) {
    o.text += render_plan_tree_text(*r.tree, *r.plan) + "\n";
    o.text += render_plan_text(*r.plan, r.settings, r.memory, r.comm, {}, r.tree->peft ? &*r.tree->peft : nullptr);
  }
  if (r.tree) o.folded = r.tree->folded;
  o.planned = r.plan.has_value();
  o.policy = fmt::format("{} {}", static_cast<int>(r.settings.policy.value), r.settings.policy.source);
  o.text += render_diagnostics_text(r.sink.items());
  o.findings = r.sink.items();
  o.peak = r.memory.peak;
  for (const RankMemory& m : r.memory.ranks) o.rank_totals.push_back(m.total());
  o.comm = r.comm.total;
  return o;
}

// Both ways; returns whether the folded run really was folded.
bool require_same_plan(const PreflightRequest& req) {
  const Outcome whole = run(req, false);
  const Outcome folded = run(req, true);
  CHECK_FALSE(whole.folded);
  CHECK(folded.text == whole.text);
  // Every field, as SARIF and the code-host formats print them (the model path too).
  REQUIRE(folded.findings.size() == whole.findings.size());
  for (std::size_t i = 0; i < whole.findings.size(); ++i) {
    const Diagnostic& a = folded.findings[i];
    const Diagnostic& b = whole.findings[i];
    CHECK(a.code == b.code);
    CHECK(a.severity == b.severity);
    CHECK(a.exit_code == b.exit_code);
    CHECK(a.message == b.message);
    CHECK(a.help == b.help);
    CHECK(a.location.file == b.location.file);
    CHECK(a.location.line == b.location.line);
    CHECK(a.location.column == b.location.column);
    CHECK(a.location.model_path == b.location.model_path);
    CHECK(a.fix.size() == b.fix.size());
  }
  CHECK(folded.peak == whole.peak);
  CHECK(folded.rank_totals == whole.rank_totals);
  CHECK(folded.comm.all_gather == whole.comm.all_gather);
  CHECK(folded.comm.reduce_scatter == whole.comm.reduce_scatter);
  CHECK(folded.comm.all_reduce == whole.comm.all_reduce);
  CHECK(folded.comm.all_gathers == whole.comm.all_gathers);
  CHECK(folded.comm.reduce_scatters == whole.comm.reduce_scatters);
  CHECK(folded.comm.all_reduces == whole.comm.all_reduces);
  CHECK(folded.comm.seconds == whole.comm.seconds);  // summed in the same order: the same double
  return folded.folded;
}

using Tweak = std::function<void(FsdpSettings&)>;

// The settings the plans are compared under, each with whether the plan may stay folded.
struct Variant {
  const char* name;
  Tweak tweak;
  bool foldable;
};

std::vector<Variant> variants() {
  return {
      {"Trainer, 8 ranks", [](FsdpSettings&) {}, true},
      {"Trainer, use_orig_params, 3 ranks (padding)",
       [](FsdpSettings& s) {
         s.use_orig_params = {true, "test"};
         s.world_size = {3, "test"};
       },
       true},
      {"accelerate's class policy, use_orig_params=False (mixed requires_grad fails in every layer)",
       [](FsdpSettings& s) {
         s.trainer = {false, "test"};
       },
       true},
      {"accelerate, bf16, SHARD_GRAD_OP, BACKWARD_POST, 5 ranks",
       [](FsdpSettings& s) {
         s.trainer = {false, "test"};
         s.use_orig_params = {true, "test"};
         s.mixed_precision = {MixedPrecision::bf16, "test"};
         s.sharding_strategy = {ShardingStrategy::shard_grad_op, "test"};
         s.backward_prefetch = {BackwardPrefetch::post, "test"};
         s.world_size = {5, "test"};
       },
       true},
      {"Trainer, NO_SHARD, no prefetch, a bus bandwidth",
       [](FsdpSettings& s) {
         s.sharding_strategy = {ShardingStrategy::no_shard, "test"};
         s.backward_prefetch = {BackwardPrefetch::none, "test"};
         s.world_size = {4, "test"};
       },
       true},
      {"HYBRID_SHARD over 2 machines",
       [](FsdpSettings& s) {
         s.sharding_strategy = {ShardingStrategy::hybrid_shard, "test"};
         s.num_machines = {2, "test"};
         s.use_orig_params = {true, "test"};
       },
       true},
      {"a size policy (subtree sums: planned materialised)",
       [](FsdpSettings& s) {
         s.trainer = {false, "test"};
         s.policy = {WrapPolicyKind::size, "test"};
         s.min_num_params = {300, "test"};
       },
       false},
      {"no wrapping (the root holds every layer: planned materialised)",
       [](FsdpSettings& s) {
         s.trainer = {false, "test"};
         s.policy = {WrapPolicyKind::none, "test"};
       },
       false},
      {"--frozen (names instances: planned materialised)",
       [](FsdpSettings& s) {
         s.frozen = {"layers\\.1\\.", "test"};
       },
       false},
      {"FSDP2 (not folded)",
       [](FsdpSettings& s) {
         s.fsdp_version = {2, "test"};
       },
       false},
  };
}

PreflightRequest request(const fs::path& model, bool config_only, const LoraAdapter& adapter, const Tweak& tweak) {
  PreflightRequest req;
  req.rules_dir = SHARDCHECK_SOURCE_DIR "/rules";
  req.model = model.string();
  req.config_only = config_only;
  req.versions.torch = Setting<Version>{Version{2, 14, 1}, "test"};
  req.versions.transformers = Setting<Version>{Version{5, 12, 1}, "test"};
  req.versions.accelerate = Setting<Version>{Version{1, 14, 0}, "test"};
  req.adapter = adapter;
  req.bus_bandwidth = 100e9;
  req.overrides = tweak;
  return req;
}

LoraAdapter all_linear(int r) {
  LoraAdapter a;
  a.source = "test";
  a.task_type = "CAUSAL_LM";
  a.r = r;
  a.target_modules.kind = ModuleSelector::Kind::all_linear;
  return a;
}

}  // namespace folded_plan_test
using namespace folded_plan_test;

TEST_CASE("folded plan: the text plan of every recorded adapter, under every setting, is the materialised one") {
  int folded = 0, compared = 0;
  for (const auto& dir : fs::directory_iterator(kFixtures / "peft-oracle" / "adapters")) {
    const json rec = read_json(dir.path() / "record.json");
    DiagnosticSink sink;
    auto adapter = load_adapter_config(dir.path().string(), sink);
    REQUIRE(adapter.has_value());
    REQUIRE(adapter->weights.has_value());  // peft's saved tensors, checked against every instance's name
    const fs::path model = kFixtures / "oracle2" / "models" / rec.at("model").get<std::string>();
    for (const Variant& v : variants()) {
      CAPTURE(dir.path().filename().string());
      CAPTURE(v.name);
      const bool was_folded = require_same_plan(request(model, false, *adapter, v.tweak));
      if (!v.foldable) CHECK_FALSE(was_folded);
      folded += was_folded;
      ++compared;
    }
  }
  CHECK(compared >= 170);
  CHECK(folded >= 100);  // all but llama-layers' (layers_to_transform tells the 2 layers apart)
}

TEST_CASE("folded plan: corpus models, config only") {
  struct Case {
    const char* config;
    LoraAdapter adapter;
  };
  LoraAdapter qv = all_linear(16);
  qv.target_modules.kind = ModuleSelector::Kind::names;
  qv.target_modules.names = {"q_proj", "v_proj"};
  LoraAdapter layers = qv;
  layers.layers_to_transform = std::vector<int>{0, 1, 2, 40, 41};
  LoraAdapter rank = all_linear(8);
  rank.rank_pattern = {{"layers\\.7\\.mlp\\.down_proj", 32}};
  rank.modules_to_save = {"lm_head"};
  LoraAdapter dora = all_linear(64);
  dora.use_dora = true;
  LoraAdapter gpt2 = all_linear(32);
  const std::vector<Case> cases = {
      {"meta-llama__Llama-3.1-70B-Instruct.json", all_linear(64)},
      {"meta-llama__Llama-3.1-70B-Instruct.json", layers},
      {"meta-llama__Llama-3.1-70B-Instruct.json", rank},
      {"meta-llama__Meta-Llama-3-8B.json", dora},
      {"Qwen__Qwen2.5-7B.json", qv},
      {"Qwen__Qwen3-30B-A3B.json", all_linear(16)},
      {"deepseek-ai__DeepSeek-V3.json", qv},
      {"openai-community__gpt2.json", gpt2},
  };
  int folded = 0;
  for (const Case& c : cases)
    for (const Variant& v : variants()) {
      CAPTURE(c.config);
      CAPTURE(v.name);
      const bool was_folded =
          require_same_plan(request(kFixtures / "corpus-configs" / c.config, true, c.adapter, v.tweak));
      if (!v.foldable) CHECK_FALSE(was_folded);
      folded += was_folded;
    }
  CHECK(folded >= 30);
}

TEST_CASE("folded plan: QLoRA (4-bit weights), uint8 and bfloat16 storage, prepared for k-bit training or not") {
  int folded = 0;
  for (const DType storage : {DType::U8, DType::BF16})
    for (const bool prepare : {false, true})
      for (const Variant& v : variants()) {
        CAPTURE(dtype_name(storage));
        CAPTURE(prepare);
        CAPTURE(v.name);
        for (const auto& [model, config_only] :
             {std::pair{kFixtures / "oracle2" / "models" / "llama", false},
              std::pair{kFixtures / "corpus-configs" / "meta-llama__Meta-Llama-3-8B.json", true}}) {
          PreflightRequest req = request(model, config_only, all_linear(16), v.tweak);
          Bnb4bitConfig bnb;
          bnb.quant_storage = storage;
          bnb.compute_dtype = DType::BF16;
          bnb.quant_type = "nf4";
          bnb.double_quant = true;
          bnb.source = "test";
          req.resolve.bnb_4bit = bnb;
          req.resolve.load_dtype = "bfloat16";
          req.prepare_kbit = prepare;
          const bool was_folded = require_same_plan(req);
          if (!v.foldable) CHECK_FALSE(was_folded);
          folded += was_folded;
        }
      }
  CHECK(folded >= 16);
}

TEST_CASE("folded plan: saved adapter weights that do not fit, or are left over, are reported alike") {
  DiagnosticSink sink;
  // peft's llama-qv adapter with r edited from 3 to 4: torch's size mismatch when it loads (PEFT008).
  auto edited = load_adapter_config((kFixtures / "adapters" / "rank-edited").string(), sink);
  REQUIRE(edited.has_value());
  // peft's llama-qv adapter with only q_proj targeted: its v_proj tensors have no place (PEFT009).
  auto q_only = load_adapter_config((kFixtures / "peft-oracle" / "adapters" / "llama-qv").string(), sink);
  REQUIRE(q_only.has_value());
  q_only->target_modules.names = {"q_proj"};
  for (const auto& [adapter, code] : {std::pair{*edited, "PEFT008"}, std::pair{*q_only, "PEFT009"}}) {
    CAPTURE(code);
    for (const auto& model : {kFixtures / "models" / "llama", kFixtures / "oracle2" / "models" / "llama"}) {
      PreflightRequest req = request(model, false, adapter, [](FsdpSettings&) {});
      const folded_plan_test::Outcome whole = run(req, false);
      CHECK(whole.text.find(code) != std::string::npos);
      // The folded run checks the saved weights beside the plan (pipeline/saved_weights.hpp SavedWeightsCheck): a
      // size mismatch still stops it where the check stands, with no plan and the settings it had.
      const folded_plan_test::Outcome folded = run(req, true);
      CHECK(folded.folded);
      CHECK(folded.planned == (std::string(code) != "PEFT008"));
      CHECK(folded.planned == whole.planned);
      CHECK(folded.policy == whole.policy);
      require_same_plan(req);
    }
  }
}
