// Activation estimates and communication time, checked against hand arithmetic from the registry's
// activation model (rules/models/llama.yaml `activations`, docs/activations.md) and the nccl-tests
// busbw conventions.
#include <doctest/doctest.h>

#include "model_fixtures.hpp"
#include "shardcheck/memory.hpp"
#include "shardcheck/model_source.hpp"
#include "shardcheck/registry.hpp"
#include "shardcheck/shard_plan.hpp"

using namespace shardcheck;
using model_fixtures::clean_tree;
using model_fixtures::fixture_tree;

namespace {

FsdpSettings llama_settings(int world) {
  FsdpSettings s;
  s.world_size.value = world;
  s.wrap_classes.value = {"LlamaDecoderLayer"};
  return s;
}

// Meta-Llama-3-8B's config planned with FSDP1 on 8 ranks, bf16 mixed precision.
struct Llama3Plan {
  ModuleTree tree;
  FsdpSettings s;
  ShardPlan plan;
};
Llama3Plan llama3_8b_bf16() {
  Llama3Plan p{
      clean_tree(model_fixtures::corpus_dir() / "meta-llama__Meta-Llama-3-8B.json", true), llama_settings(8), {}};
  p.s.mixed_precision.value = MixedPrecision::bf16;
  DiagnosticSink sink;
  p.plan = plan_fsdp1(p.tree, p.s, sink);
  return p;
}

}  // namespace

TEST_CASE("activations: tiny llama fixture, with and without checkpointing") {
  // hidden 20, 4 heads of dim 5, 2 KV heads, intermediate 52, 3 layers, vocab 37, bf16:
  // layer = 4*20 + 2*4*5 + 2*2*5 + 4*52 = 80 + 40 + 20 + 208 = 348 elements per token at bf16, and
  // layer_fp32 = 2*20 + 4 + 2 = 46 in float32 (norm inputs, logsumexp, rsqrt): 696 + 184 = 880 bytes.
  const ModuleTree tree = fixture_tree("llama");
  FsdpSettings s = llama_settings(3);
  DiagnosticSink sink;
  const ShardPlan plan = plan_fsdp1(tree, s, sink);
  MemoryOptions opts;
  CHECK_FALSE(estimate_activations(plan, tree, s, opts).available);  // no --seq-len/--micro-batch
  opts.seq_len = 8;
  opts.micro_batch = 2;
  ActivationEstimate a = estimate_activations(plan, tree, s, opts);
  REQUIRE(a.available);
  CHECK(a.tokens == 16);
  CHECK(a.dtype == DType::BF16);
  CHECK(a.blocks == 3u * 880 * 16);  // 42,240
  CHECK(a.recompute == 0u);
  CHECK(a.logits == 37u * 16 * (2 + 4 + 4));  // 5,920: bf16 logits, fp32 copy, fp32 log-softmax
  const MemoryEstimate m = estimate_memory(plan, tree, s, opts);
  CHECK(m.ranks[0].activations == 42'240u + 5'920u);

  s.activation_checkpointing.value = true;
  a = estimate_activations(plan, tree, s, opts);
  CHECK(a.blocks == 3u * 20 * 16 * 2);  // each block keeps its 20-wide input: 1,920
  CHECK(a.recompute == 880u * 16);      // one block recomputed in backward: 14,080
  CHECK(a.logits == 5'920u);
}

TEST_CASE("activations: Meta-Llama-3-8B config, seq 4096, micro-batch 1, bf16 mixed precision") {
  // hidden 4096, 32 heads x 128, 8 KV heads, intermediate 14336, 32 layers, vocab 128256 (config.json):
  // layer = 16384 + 8192 + 2048 + 57344 = 83,968 elements per token at bf16 (167,936 bytes), and
  // layer_fp32 = 2*4096 + 32 + 2 = 8,226 in float32 (32,904 bytes): 200,840 bytes per token and layer.
  const auto [tree, s, plan] = llama3_8b_bf16();
  MemoryOptions opts;
  opts.seq_len = 4096;
  opts.micro_batch = 1;
  const ActivationEstimate a = estimate_activations(plan, tree, s, opts);
  REQUIRE(a.available);
  CHECK(a.blocks == 26'324'500'480ull);  // 200840 * 32 * 4096
  CHECK(a.logits == 5'253'365'760ull);   // 128256 * 4096 * 10
}

TEST_CASE("eager attention by hand: Meta-Llama-3-8B's probabilities at 8k tokens, checkpointing, no model") {
  // 32 layers of 32 query heads (128 wide) over 8 KV heads, bf16 compute, 8,192 tokens, one sequence:
  // each layer keeps 32 x 8192 x 8192 probabilities in float32 (the softmax output) and their bf16 copy
  // (rules/models/llama.yaml eager_attention): 12 GiB a layer.
  auto [tree, s, plan] = llama3_8b_bf16();
  MemoryOptions opts;
  opts.seq_len = 8192;
  opts.micro_batch = 1;
  REQUIRE(tree.attn_implementation == "sdpa");
  const ActivationEstimate sdpa = estimate_activations(plan, tree, s, opts);
  CHECK(sdpa.scores == 0u);
  CHECK_FALSE(sdpa.eager);
  CHECK(sdpa.attn_implementation == "sdpa");  // the estimate says what it is for
  tree.attn_implementation = "eager";
  const ActivationEstimate eager = estimate_activations(plan, tree, s, opts);
  REQUIRE(eager.available);
  CHECK(eager.attn_implementation == "eager");
  const std::uint64_t per_layer = 32ull * 8192 * 8192 * (4 + 2);
  CHECK(per_layer == 12ull << 30);
  CHECK(eager.scores == 32 * per_layer);
  // Per token and layer eager keeps K and V copied at all 32 heads, 2 x (32 - 8) x 128 more bf16
  // elements, and no float32 logsumexp, 32 x 4 bytes fewer, than SDPA.
  CHECK(eager.blocks - sdpa.blocks == 8192ull * 32 * (2 * 24 * 128 * 2 - 32 * 4));
  CHECK(eager.total() == sdpa.total() + eager.blocks - sdpa.blocks + 32 * per_layer);
  CHECK(estimate_memory(plan, tree, s, opts).verdict == FitVerdict::does_not_fit);
  tree.attn_implementation = "sdpa";
  CHECK(estimate_memory(plan, tree, s, opts).verdict != FitVerdict::does_not_fit);
  // Checkpointed: only the block being recomputed holds its probabilities.
  tree.attn_implementation = "eager";
  s.activation_checkpointing.value = true;
  CHECK(estimate_activations(plan, tree, s, opts).scores == per_layer);
}

TEST_CASE("eager attention on an architecture without an eager model: the estimate is withheld, not SDPA's") {
  ModuleTree tree = fixture_tree("gpt2");
  tree.attn_implementation = "eager";
  FsdpSettings s;
  s.world_size.value = 2;
  DiagnosticSink sink;
  const ShardPlan plan = plan_fsdp1(tree, s, sink);
  MemoryOptions opts;
  opts.seq_len = 64;
  opts.micro_batch = 1;
  const ActivationEstimate a = estimate_activations(plan, tree, s, opts);
  CHECK_FALSE(a.available);
  CHECK(a.why_not.find("eager_attention") != std::string::npos);
}

TEST_CASE("communication time at a bus bandwidth: FSDP1 FULL_SHARD, llama fixture, W=3") {
  // Root: 1500 elements (bf16) all-gathered once, reduce-scattered once: 3000 + 3000 bytes.
  // Layers: padded 4362 elements: all-gathered twice (forward, backward), reduce-scattered once.
  // AG = 3000 + 3 * 2 * 8724 = 55,344; RS = 3000 + 3 * 8724 = 29,172.
  const ModuleTree tree = fixture_tree("llama");
  const FsdpSettings s = llama_settings(3);
  DiagnosticSink sink;
  const ShardPlan plan = plan_fsdp1(tree, s, sink);
  const CommVolume none = communication(plan);
  CHECK(none.total.seconds == 0.0);
  const CommVolume cv = communication(plan, 1e9);
  CHECK(cv.total.all_gather == 55'344u);
  CHECK(cv.total.reduce_scatter == 29'172u);
  // t = size (n-1)/n / busbw with n = 3: (55344 + 29172) * 2/3 / 1e9 s.
  CHECK(cv.total.seconds == doctest::Approx(84'516.0 * 2 / 3 / 1e9).epsilon(1e-12));
}

TEST_CASE("transient peak by backward prefetch: FSDP1 FULL_SHARD, llama fixture, W=3 (fsdp-semantics.md §3.3)") {
  // Root kept unsharded all step: G_R = 1500 * 2 = 3000. Each layer: G = 4362 * 2 = 8724 (padded,
  // bf16); grad temporaries = unsharded grad 4360*2 = 8720 + padded RS input 8724 + RS output
  // 1454*2 = 2908 -> 20,352. Forward: two layers in flight = 17,448.
  const ModuleTree tree = fixture_tree("llama");
  FsdpSettings s = llama_settings(3);
  DiagnosticSink sink;
  const ShardPlan plan = plan_fsdp1(tree, s, sink);
  const MemoryOptions opts;
  s.backward_prefetch.value = BackwardPrefetch::pre;  // G_i + G_{i-1} + temps = 37,800
  CHECK(estimate_memory(plan, tree, s, opts).ranks[0].transient == 3000u + 37'800u);
  s.backward_prefetch.value = BackwardPrefetch::post;  // max(G_i + 8720, temps + G_{i-1}) = 29,076
  CHECK(estimate_memory(plan, tree, s, opts).ranks[0].transient == 3000u + 29'076u);
  s.backward_prefetch.value = BackwardPrefetch::none;  // G_i + temps = 29,076
  CHECK(estimate_memory(plan, tree, s, opts).ranks[0].transient == 3000u + 29'076u);
}
