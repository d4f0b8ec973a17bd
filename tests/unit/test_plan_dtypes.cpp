// Parameter dtypes in FSDP units: an FP8 checkpoint kept quantised (F8 weights beside F32 scales)
// fails to wrap, identically in every decoder layer (reported once); loaded dequantised it plans
// like a bf16 model. FSDP2's one-dtype-per-group assertion and its torch 2.8 relaxation to trainable
// parameters (pytorch PR #154103).
//
// The DeepSeek-V3 fixture (fixtures/models/deepseek_v3, transformers 4.57 layout, bf16, hidden 20,
// q_lora_rank 12, kv_lora_rank 16, 4 heads of qk 24+12 and v 20, intermediate 136, 4 experts of 20,
// 1 shared expert, first_k_dense_replace 1, vocab 37, untied), dequantised:
//   attention = q_a 12*20 + q_a_norm 12 + q_b 144*12 + kv_a 28*20 + kv_a_norm 16 + kv_b 176*16
//               + o 20*80 = 240 + 12 + 1728 + 560 + 16 + 2816 + 1600 = 6972
//   layer 0 (dense MLP) = 6972 + 3*136*20 + norms 2*20 = 6972 + 8160 + 40 = 15172
//   layers 1-2 (MoE) = 6972 + experts 4*3*20*20 + router 4*20 + shared 3*20*20 + 40
//                    = 6972 + 4800 + 80 + 1200 + 40 = 13092
//   root = embed 37*20 + norm 20 + lm_head 37*20 = 1500
#include <doctest/doctest.h>

#include "diag_query.hpp"
#include "model_fixtures.hpp"
#include "plan_query.hpp"
#include "shardcheck/shard_plan.hpp"

using namespace shardcheck;
using namespace model_fixtures;

namespace {

ModuleTree deepseek(bool dequantize) {
  ResolveOptions opts = options("4.57.6");
  opts.dequantize = dequantize;
  Built b = build_fixture("deepseek_v3", false, opts);
  REQUIRE_MESSAGE(b.with(Severity::error).empty(), b.report());
  return std::move(*b.tree);
}

FsdpSettings dtype_settings(int world, int version, const char* block = "DeepseekV3DecoderLayer") {
  FsdpSettings s;
  s.wrap_classes.value = {block};
  s.world_size.value = world;
  s.fsdp_version.value = version;
  return s;
}

using test::unit;

}  // namespace

TEST_CASE("plan dtypes: an FP8 checkpoint loaded dequantised shards like a bf16 model") {
  const ModuleTree tree = deepseek(true);
  DiagnosticSink sink;
  const ShardPlan plan = plan_fsdp1(tree, dtype_settings(2, 1), sink);
  CHECK_MESSAGE(!sink.has_errors(), test::dump(sink));
  REQUIRE(plan.units.size() == 4);
  CHECK(unit(plan, "").numel == 1500);
  CHECK(unit(plan, "model.layers.0").numel == 15172);
  CHECK(unit(plan, "model.layers.0").shard_numel == 7586);
  CHECK(unit(plan, "model.layers.1").numel == 13092);
  CHECK(unit(plan, "model.layers.2").shard_numel == 6546);
  for (const auto& u : plan.units) CHECK(u.dtype == DType::BF16);

  const ShardPlan plan2 = plan_fsdp2(tree, dtype_settings(2, 2), sink);
  CHECK_MESSAGE(!sink.has_errors(), test::dump(sink));
}

TEST_CASE("plan dtypes: FP8 kept quantised fails in every layer, reported once") {
  const ModuleTree tree = deepseek(false);
  SUBCASE("FSDP1: FlatParameter of F8 weights and F32 scales") {
    DiagnosticSink sink;
    (void)plan_fsdp1(tree, dtype_settings(2, 1), sink);
    REQUIRE(test::count_code(sink, "PLAN002") == 1);
    const Diagnostic& d = *test::first_code(sink, "PLAN002");
    CHECK(d.location.model_path == std::optional<std::string>("model.layers.0"));
    CHECK(d.location.file == tree.config_path);  // a real file for SARIF and annotations
    CHECK(tree.config_path.ends_with("deepseek_v3/config.json"));
    // q_a_proj registers weight (F8), then weight_scale_inv (F32): the first pair that differs.
    CHECK(d.message ==
          "ValueError: Must flatten tensors with uniform dtype but got torch.float8_e4m3fn and torch.float32 "
          "(model.layers.0.self_attn.q_a_proj.weight vs model.layers.0.self_attn.q_a_proj.weight_scale_inv) "
          "(the same in 2 more units: model.layers.1, model.layers.2)");
    CHECK(d.help.find("FineGrainedFP8Config(dequantize=True)") != std::string::npos);
    CHECK(d.help.find("--dequantize") != std::string::npos);
  }
  SUBCASE("FSDP2: one original dtype per fully_shard group") {
    DiagnosticSink sink;
    (void)plan_fsdp2(tree, dtype_settings(2, 2), sink);
    REQUIRE(test::count_code(sink, "PLAN006") == 1);
    const Diagnostic& d = *test::first_code(sink, "PLAN006");
    CHECK(d.location.model_path == std::optional<std::string>("model.layers.0"));
    CHECK(d.location.file == tree.config_path);  // a real file for SARIF and annotations
    CHECK(tree.config_path.ends_with("deepseek_v3/config.json"));
    // The layer's norms are bf16, its projections F8 with F32 scales (Python prints a set; sorted here).
    CHECK(
        d.message.starts_with("AssertionError: FSDP expects uniform original parameter dtype but got "
                              "{torch.bfloat16, torch.float32, torch.float8_e4m3fn}"));
    CHECK(d.message.ends_with("(the same in 2 more units: model.layers.1, model.layers.2)"));
  }
}

TEST_CASE("plan dtypes: FSDP2 with frozen bf16 beside upcast trainable parameters (torch 2.7 vs 2.8)") {
  // accelerate upcasts trainable parameters to fp32 under mixed precision; frozen ones stay bf16
  // (the llama fixture is bf16). A layer with a frozen MLP then holds fp32 and bf16 parameters.
  const ModuleTree tree = fixture_tree("llama");
  FsdpSettings s = dtype_settings(2, 2, "LlamaDecoderLayer");
  s.mixed_precision.value = MixedPrecision::bf16;
  s.frozen.value = R"(\.mlp\.)";
  s.torch_version.value = Version{2, 7, 1};
  DiagnosticSink before;
  (void)plan_fsdp2(tree, s, before);
  REQUIRE(test::count_code(before, "PLAN006") == 1);
  const Diagnostic& d = *test::first_code(before, "PLAN006");
  CHECK(d.message ==
        "AssertionError: FSDP expects uniform original parameter dtype but got {torch.bfloat16, "
        "torch.float32} (raised at the first forward by this fully_shard group) (the same in 2 more "
        "units: model.layers.1, model.layers.2)");
  CHECK(d.help.find("one dtype") != std::string::npos);

  s.torch_version.value = Version{2, 8, 0};  // only parameters that require grad count: all fp32
  DiagnosticSink after;
  (void)plan_fsdp2(tree, s, after);
  CHECK_MESSAGE(test::count_code(after, "PLAN006") == 0, test::dump(after));
}
