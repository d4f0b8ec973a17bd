// FSDP2 groups as torchtitan and transformers' native plan create them, and HSDP on a 2-D mesh,
// against hand arithmetic. Fixtures: tiny llama (untied; hidden 20, 3 layers, vocab
// 37, bf16) and tiny gemma (tied; hidden 20, 2 layers, vocab 37).
#include <doctest/doctest.h>

#include "model_fixtures.hpp"
#include "shardcheck/memory.hpp"
#include "shardcheck/model_source.hpp"
#include "shardcheck/registry.hpp"
#include "shardcheck/shard_plan.hpp"

using namespace shardcheck;
using model_fixtures::fixture_tree;

namespace {

FsdpSettings fsdp2(int world, Fsdp2Caller caller, const std::string& block) {
  FsdpSettings s;
  s.world_size.value = world;
  s.fsdp_version.value = 2;
  s.fsdp2_caller.value = caller;
  s.wrap_classes.value = {block};
  return s;
}

std::vector<std::string> group_paths(const ShardPlan& p) {
  std::vector<std::string> out;
  for (const auto& u : p.units) {
    std::string g;
    for (const auto& m : u.modules) g += (g.empty() ? "" : "+") + m;
    out.push_back(g.empty() ? "<root>" : g);
  }
  return out;
}

}  // namespace

TEST_CASE("transformers native plan: llama's _fsdp_plan gives embed, blocks, [norm, lm_head], root") {
  const ModuleTree tree = fixture_tree("llama");
  DiagnosticSink sink;
  const ShardPlan p = plan_fsdp2(tree, fsdp2(3, Fsdp2Caller::transformers, "LlamaDecoderLayer"), sink);
  CHECK(group_paths(p) == std::vector<std::string>{"<root>", "model.embed_tokens", "model.layers.0", "model.layers.1",
                                                   "model.layers.2", "model.norm+lm_head"});
  for (const auto& u : p.units) {
    if (u.path.starts_with("model.layers.") || u.path == "model.embed_tokens") CHECK(u.reshard_after_forward == true);
    if (u.path == "model.norm") CHECK(u.reshard_after_forward == false);  // keep_full_weight
  }
}

TEST_CASE("transformers native plan: a tied embedding takes the head's keep_full_weight (gemma)") {
  // _resolve_tied_embed_lm_head_plan drops model.embed_tokens' free entry and gives it lm_head's
  // keep entry; [model.embed_tokens, model.norm] is then a norm + head pair: one group, kept.
  // Group numel: embed 37*20 = 740 + norm 20 = 760; W=3: embed 13 rows of 20 (r2 pads 2 rows = 40),
  // norm 7 rows of 1 (r2 pads 1): shard 260 + 7 = 267.
  const ModuleTree tree = fixture_tree("gemma");
  DiagnosticSink sink;
  const ShardPlan p = plan_fsdp2(tree, fsdp2(3, Fsdp2Caller::transformers, "GemmaDecoderLayer"), sink);
  REQUIRE(p.units.size() == 4);
  const ShardUnit& tail = p.units[1];
  CHECK(tail.modules == std::vector<std::string>{"model.embed_tokens", "model.norm"});
  CHECK(tail.numel == 760);
  CHECK(tail.shard_numel == 267);
  CHECK(tail.rank_pad == std::vector<std::int64_t>{0, 0, 41});
  CHECK(tail.reshard_after_forward == false);
}

TEST_CASE("transformers native plan: gpt2 declares no _fsdp_plan, so only the root is sharded") {
  // The default base_model_fsdp_plan names embed_tokens/layers.*/norm, which gpt2's wte/h.*/ln_f
  // do not match: fully_shard(model) alone holds all 4428 parameters.
  const ModuleTree tree = fixture_tree("gpt2");
  DiagnosticSink sink;
  const ShardPlan p = plan_fsdp2(tree, fsdp2(3, Fsdp2Caller::transformers, "GPT2Block"), sink);
  REQUIRE(p.units.size() == 1);
  CHECK(p.units[0].numel == 4428);
}

TEST_CASE("torchtitan: embed alone, blocks, [norm, output] kept; tied embedding joins the tail") {
  DiagnosticSink sink;
  const ShardPlan untied =
      plan_fsdp2(fixture_tree("llama"), fsdp2(3, Fsdp2Caller::torchtitan, "LlamaDecoderLayer"), sink);
  CHECK(group_paths(untied) == std::vector<std::string>{"<root>", "model.embed_tokens", "model.layers.0",
                                                        "model.layers.1", "model.layers.2", "model.norm+lm_head"});
  const ShardPlan tied =
      plan_fsdp2(fixture_tree("gemma"), fsdp2(3, Fsdp2Caller::torchtitan, "GemmaDecoderLayer"), sink);
  CHECK(group_paths(tied) == std::vector<std::string>{"<root>", "model.embed_tokens+model.norm+lm_head",
                                                      "model.layers.0", "model.layers.1"});
  CHECK(tied.units[1].numel == 760);  // the tied lm_head.weight is the embedding's storage, counted once
  CHECK(tied.units[0].numel == 0);    // nothing left to the root
}

TEST_CASE("torchtitan reduces in fp32 under bf16 mixed precision; accelerate in bf16") {
  // llama W=3 FSDP2 groups, padded elements W*E_g: embed 3*260 = 780, layers 3*1538 = 4614 each,
  // tail 3*267 = 801; root empty. Reduce-scatter bytes = sum * |reduce dtype|.
  const ModuleTree tree = fixture_tree("llama");
  DiagnosticSink sink;
  const std::uint64_t padded = 780 + 3 * 4614 + 801;  // 15,423
  for (auto [caller, bytes] : {std::pair{Fsdp2Caller::torchtitan, 4u}, std::pair{Fsdp2Caller::accelerate, 2u}}) {
    FsdpSettings s = fsdp2(3, caller, "LlamaDecoderLayer");
    s.mixed_precision.value = MixedPrecision::bf16;
    const ShardPlan p = plan_fsdp2(tree, s, sink);
    CHECK(communication(p).total.reduce_scatter == padded * bytes);
  }
}

TEST_CASE("FSDP2 HSDP: dp_replicate=2 on 6 ranks shards over 3 and all-reduces each shard over 2") {
  const ModuleTree tree = fixture_tree("llama");
  FsdpSettings s = fsdp2(6, Fsdp2Caller::accelerate, "LlamaDecoderLayer");
  s.dp_replicate.value = 2;
  DiagnosticSink sink;
  const ShardPlan p = plan_fsdp2(tree, s, sink);
  CHECK(p.shard_group == 3);
  CHECK(p.replicate_group == 2);
  for (const auto& u : p.units)
    if (u.path == "model.layers.0") CHECK(u.shard_numel == 1538);  // as W=3: the mesh's shard dim
  // All-reduce of E_g * |r| bytes per group with gradients (bf16, no mixed precision):
  // (260 + 3*1538 + 267) * 2 = 10,282 bytes in 5 calls; at 1 GB/s over R=2: size * 2 * 1/2 / 1e9.
  const CommVolume cv = communication(p, 1e9);
  CHECK(cv.total.all_reduce == 10'282u);
  CHECK(cv.total.all_reduces == 5);
  const double ag_rs = static_cast<double>(cv.total.all_gather + cv.total.reduce_scatter) * 2 / 3;
  CHECK(cv.total.seconds == doctest::Approx((ag_rs + 10'282.0) / 1e9).epsilon(1e-12));
}

TEST_CASE("bandwidth per group: a group that crosses machines is timed at --inter-node-bandwidth") {
  const ModuleTree tree = fixture_tree("llama");
  // 2 machines x 3 GPUs (accelerate launch: ranks 0-2 on the first). HSDP dp_replicate 2 x dp_shard 3:
  // the shard group {0, 1, 2} stays on one machine (bus bandwidth 100 GB/s); the replicas {0, 3} cross
  // (inter-node 10 GB/s): all-gather and reduce-scatter at size x 2/3 / 100e9, the all-reduce at
  // size x 2 x 1/2 / 10e9.
  FsdpSettings s = fsdp2(6, Fsdp2Caller::accelerate, "LlamaDecoderLayer");
  s.dp_replicate.value = 2;
  s.num_machines.value = 2;
  DiagnosticSink sink;
  const ShardPlan hsdp = plan_fsdp2(tree, s, sink);
  CHECK_FALSE(hsdp.shard_spans_nodes);
  CHECK(hsdp.replicate_spans_nodes);
  const CommVolume cv = communication(hsdp, 100e9, 10e9);
  const double ag_rs = static_cast<double>(cv.total.all_gather + cv.total.reduce_scatter) * 2 / 3;
  CHECK(cv.total.seconds ==
        doctest::Approx(ag_rs / 100e9 + static_cast<double>(cv.total.all_reduce) / 10e9).epsilon(1e-12));
  // Without dp_replicate the shard group is all 6 ranks, across both machines: everything at 10 GB/s.
  s.dp_replicate.value = 1;
  const ShardPlan full = plan_fsdp2(tree, s, sink);
  CHECK(full.shard_spans_nodes);
  const CommVolume cv2 = communication(full, 100e9, 10e9);
  CHECK(cv2.total.seconds ==
        doctest::Approx(static_cast<double>(cv2.total.all_gather + cv2.total.reduce_scatter) * 5 / 6 / 10e9)
            .epsilon(1e-12));
  // One machine: no group crosses, the inter-node figure is unused.
  s.num_machines.value = 1;
  const ShardPlan one = plan_fsdp2(tree, s, sink);
  CHECK_FALSE(one.shard_spans_nodes);
  CHECK(communication(one, 100e9, 10e9).total.seconds == doctest::Approx(communication(one, 100e9).total.seconds));
}
