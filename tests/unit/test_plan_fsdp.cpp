// FSDP1/FSDP2 plans of the tiny Llama fixture, checked against hand arithmetic from the torch
// sources. The fixture: hidden 20, 3 layers,
// 2 KV heads of dim 5 (k/v 10x20), intermediate 52, vocab 37, untied, bf16.
//   layer = q 400 + k 200 + v 200 + o 400 + gate/up/down 3*1040 + 2 norms 20 = 4360
//   root  = embed 740 + norm 20 + lm_head 740 = 1500
#include <doctest/doctest.h>

#include "model_fixtures.hpp"
#include "plan_query.hpp"
#include "shardcheck/model_source.hpp"
#include "shardcheck/module_tree.hpp"
#include "shardcheck/registry.hpp"
#include "shardcheck/shard_plan.hpp"

using namespace shardcheck;

namespace {

ModuleTree llama_tree() { return model_fixtures::fixture_tree("llama"); }

FsdpSettings settings(int world, int version = 1) {
  FsdpSettings s;
  s.world_size.value = world;
  s.fsdp_version.value = version;
  s.wrap_classes.value = {"LlamaDecoderLayer"};
  return s;
}

using test::unit;

}  // namespace

TEST_CASE("chunk_split: torch.chunk padding sits on the highest ranks") {
  // fsdp-semantics.md §2.5, oracle-verified examples.
  auto a = chunk_split(65, 3);
  CHECK(a.shard == 22);
  CHECK(a.pad == std::vector<std::int64_t>{0, 0, 1});
  auto b = chunk_split(6, 4);  // S=2: ranks hold 2,2,2,0
  CHECK(b.real(0) == 2);
  CHECK(b.real(2) == 2);
  CHECK(b.real(3) == 0);
  CHECK(b.pad == std::vector<std::int64_t>{0, 0, 0, 2});
}

TEST_CASE("qualified_name: a parameter's full name, as named_parameters() prints it") {
  CHECK(qualified_name("", "weight") == "weight");  // a parameter of the root module
  CHECK(qualified_name("model.layers.0.self_attn.q_proj", "weight") == "model.layers.0.self_attn.q_proj.weight");
  // Appended back to back into one block of names, as ParamTable keeps them.
  std::string block;
  append_qualified_name(block, "", "weight");
  append_qualified_name(block, "lm_head", "weight");
  CHECK(block == "weightlm_head.weight");
}

TEST_CASE("fsdp1 plan: transformer wrap of the llama fixture, W=3, use_orig_params=False") {
  const ModuleTree tree = llama_tree();
  DiagnosticSink sink;
  const ShardPlan plan = plan_fsdp1(tree, settings(3), sink);
  CHECK_FALSE(sink.has_errors());
  REQUIRE(plan.units.size() == 4);  // root + 3 layers
  const ShardUnit& root = unit(plan, "");
  CHECK(root.numel == 1500);
  CHECK(root.shard_numel == 500);
  CHECK(root.params == std::vector<std::string>{"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"});
  const ShardUnit& l1 = unit(plan, "model.layers.1");
  CHECK(l1.numel == 4360);
  CHECK(l1.shard_numel == 1454);  // ceil(4360 / 3)
  CHECK(l1.padded_numel == 4362);
  CHECK(l1.rank_pad == std::vector<std::int64_t>{0, 0, 2});
  // Flat order is registration order: attention, MLP, then the two norms.
  CHECK(l1.params.front() == "model.layers.1.self_attn.q_proj.weight");
  CHECK(l1.params[4] == "model.layers.1.mlp.gate_proj.weight");
  CHECK(l1.params.back() == "model.layers.1.post_attention_layernorm.weight");
}

TEST_CASE("fsdp1 plan: W=7 pads the last rank of every unit") {
  const ModuleTree tree = llama_tree();
  DiagnosticSink sink;
  const ShardPlan plan = plan_fsdp1(tree, settings(7), sink);
  CHECK(unit(plan, "").shard_numel == 215);  // ceil(1500/7); 7*215 = 1505
  CHECK(unit(plan, "").rank_pad.back() == 5);
  CHECK(unit(plan, "model.layers.0").shard_numel == 623);  // ceil(4360/7); 7*623 = 4361
  CHECK(unit(plan, "model.layers.0").rank_pad == std::vector<std::int64_t>{0, 0, 0, 0, 0, 0, 1});
}

TEST_CASE("fsdp1 plan: use_orig_params alignment and world-size padding (torch 2.1+, bf16 compute)") {
  const ModuleTree tree = llama_tree();
  FsdpSettings s = settings(3);
  s.use_orig_params.value = true;
  s.mixed_precision.value = MixedPrecision::bf16;
  s.torch_version.value = Version{2, 4, 0};
  DiagnosticSink sink;
  const ShardPlan plan = plan_fsdp1(tree, s, sink);
  // Layer: offsets 400, 600, 800, 1200, 2240, 3280, 4320 are multiples of 8 (16 B of bf16); after
  // input_layernorm T=4340 -> pad 4 -> 4364; world pad to a multiple of 3 -> 4365.
  const ShardUnit& l0 = unit(plan, "model.layers.0");
  CHECK(l0.shard_numel == 1455);
  CHECK(l0.padded_numel == 4365);
  CHECK(l0.rank_pad == std::vector<std::int64_t>{0, 0, 0});
  CHECK(l0.dtype == DType::F32);    // accelerate upcasts trainable bf16 params under mixed precision
  REQUIRE(l0.layout.size() == 11);  // 9 params + alignment pad + world pad
  CHECK(l0.layout[8].padding);
  CHECK(l0.layout[8].numel == 4);
  CHECK(l0.layout.back().numel == 1);
  // Root: embed 740 -> pad 4, norm 20 -> pad 4, lm_head 740 -> 1508 -> world pad 1 -> 1509.
  CHECK(unit(plan, "").shard_numel == 503);
}

TEST_CASE("fsdp1 plan: torch 2.0 has alignment padding but no world-size padding") {
  const ModuleTree tree = llama_tree();
  FsdpSettings s = settings(3);
  s.use_orig_params.value = true;
  s.mixed_precision.value = MixedPrecision::bf16;
  s.torch_version.value = Version{2, 0, 1};
  DiagnosticSink sink;
  const ShardPlan plan = plan_fsdp1(tree, s, sink);
  const ShardUnit& l0 = unit(plan, "model.layers.0");
  CHECK(l0.shard_numel == 1455);  // ceil(4364 / 3)
  CHECK(l0.rank_pad == std::vector<std::int64_t>{0, 0, 1});
}

TEST_CASE("fsdp1 plan: world size 1 is NO_SHARD; NO_WRAP leaves one unit") {
  const ModuleTree tree = llama_tree();
  DiagnosticSink sink;
  const ShardPlan one = plan_fsdp1(tree, settings(1), sink);
  CHECK(one.strategy == ShardingStrategy::no_shard);
  CHECK(unit(one, "model.layers.2").shard_numel == 4360);
  FsdpSettings s = settings(4);
  s.policy.value = WrapPolicyKind::none;
  const ShardPlan none = plan_fsdp1(tree, s, sink);
  REQUIRE(none.units.size() == 1);
  CHECK(none.units[0].numel == 14580);
  CHECK(none.units[0].shard_numel == 3645);  // 14580 / 4
}

TEST_CASE("fsdp1 plan: size policy wraps the remainder rule") {
  const ModuleTree tree = llama_tree();
  FsdpSettings s = settings(2);
  s.policy.value = WrapPolicyKind::size;
  // min 3000: each MLP (3120 >= 3000) is wrapped; a layer's remainder (4360-3120 = 1240) is not;
  // the layers ModuleList is never a unit; LlamaModel's remainder is embed 740 + norm 20 + three
  // layer remainders 3*1240 = 4480 >= 3000, so it is a unit; the root keeps lm_head (740).
  s.min_num_params.value = 3000;
  DiagnosticSink sink;
  const ShardPlan plan = plan_fsdp1(tree, s, sink);
  REQUIRE(plan.units.size() == 5);
  CHECK(unit(plan, "model.layers.0.mlp").numel == 3120);
  CHECK(unit(plan, "model").numel == 4480);
  CHECK(unit(plan, "").numel == 740);
  CHECK(unit(plan, "").params == std::vector<std::string>{"lm_head.weight"});
  // At 4361 a layer (4360) is too small to be recursed into, so no MLP can be wrapped either; the
  // whole of LlamaModel (740 + 3*4360 + 20 = 13840) becomes one unit and the root keeps lm_head.
  s.min_num_params.value = 4361;
  const ShardPlan plan2 = plan_fsdp1(tree, s, sink);
  REQUIRE(plan2.units.size() == 2);
  CHECK(unit(plan2, "model").numel == 13840);
  CHECK(unit(plan2, "").numel == 740);
}

TEST_CASE("fsdp1 plan: frozen and trainable parameters in one flat parameter is torch's error") {
  const ModuleTree tree = llama_tree();
  FsdpSettings s = settings(2);
  s.frozen.value = "q_proj";
  DiagnosticSink sink;
  (void)plan_fsdp1(tree, s, sink);
  REQUIRE(sink.has_errors());
  CHECK(sink.items().front().message.find("Must flatten tensors with uniform `requires_grad`") != std::string::npos);
  s.torch_version.value = Version{1, 13, 1};
  DiagnosticSink old;
  (void)plan_fsdp1(tree, s, old);
  CHECK(old.items().front().message.find("`FlatParameter` requires uniform `requires_grad`") != std::string::npos);
}

TEST_CASE("fsdp2 plan: accelerate 1.14 groups and dim-0 chunk padding, W=3") {
  const ModuleTree tree = llama_tree();
  DiagnosticSink sink;
  const ShardPlan plan = plan_fsdp2(tree, settings(3, 2), sink);
  CHECK_FALSE(sink.has_errors());
  // root (no params left), embed_tokens, 3 layers, [model.norm, lm_head]
  REQUIRE(plan.units.size() == 6);
  // Layer: q [20,20] 7 rows x 20 = 140 ... E = 140+80+80+140+360+360+364+7+7 = 1538;
  // rank 2 holds 6/2/2/6/16/16/6/6/6 rows: padding 20+40+40+20+40+40+52+1+1 = 254.
  const ShardUnit& l0 = unit(plan, "model.layers.0");
  CHECK(l0.shard_numel == 1538);
  CHECK(l0.padded_numel == 4614);
  CHECK(l0.rank_pad == std::vector<std::int64_t>{0, 0, 254});
  CHECK(l0.reshard_after_forward == std::optional<bool>(true));
  const ShardUnit& embed = unit(plan, "model.embed_tokens");
  CHECK(embed.shard_numel == 260);  // ceil(37/3) = 13 rows x 20
  CHECK(embed.rank_pad == std::vector<std::int64_t>{0, 0, 40});
  const ShardUnit& tail = unit(plan, "model.norm");
  CHECK(tail.modules == std::vector<std::string>{"model.norm", "lm_head"});
  CHECK(tail.shard_numel == 7 + 260);
  CHECK(tail.reshard_after_forward == std::optional<bool>(false));
  CHECK(unit(plan, "").numel == 0);
}

TEST_CASE("fsdp2 plan: accelerate before 1.14 leaves embed, norm and head to the root") {
  const ModuleTree tree = llama_tree();
  FsdpSettings s = settings(4, 2);
  s.accelerate_version.value = Version{1, 10, 0};
  DiagnosticSink sink;
  const ShardPlan plan = plan_fsdp2(tree, s, sink);
  REQUIRE(plan.units.size() == 4);
  const ShardUnit& root = unit(plan, "");
  CHECK(root.numel == 1500);
  // Post-order: embed_tokens, (layers done), norm, then lm_head.
  CHECK(root.params == std::vector<std::string>{"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"});
  CHECK(root.shard_numel == 10 * 20 + 5 + 10 * 20);                // ceil(37/4)=10 rows, ceil(20/4)=5
  CHECK(root.reshard_after_forward == std::optional<bool>(true));  // torch 2.9 respects the explicit True
}
