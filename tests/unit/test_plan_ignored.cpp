// fsdp_ignored_modules: the matched subtrees' parameters are in no unit and stay whole on every
// rank (torch wrap.py `_recursive_wrap` skips ignored children and subtracts ignored params;
// fully_shard(ignored_params=...) for FSDP2, as accelerate 1.14 passes them).
#include <doctest/doctest.h>

#include <algorithm>

#include "model_fixtures.hpp"
#include "shardcheck/memory.hpp"
#include "shardcheck/model_source.hpp"
#include "shardcheck/registry.hpp"
#include "shardcheck/shard_plan.hpp"

using namespace shardcheck;

static ModuleTree llama() { return model_fixtures::fixture_tree("llama"); }

namespace {

FsdpSettings ignored_settings(int version, const std::string& ignored) {
  FsdpSettings s;
  s.world_size.value = 3;
  s.fsdp_version.value = version;
  s.wrap_classes.value = {"LlamaDecoderLayer"};
  s.ignored_modules.value = ignored;
  return s;
}

bool holds(const ShardPlan& p, const std::string& fqn) {
  for (const auto& u : p.units)
    if (std::find(u.params.begin(), u.params.end(), fqn) != u.params.end()) return true;
  return false;
}

}  // namespace

TEST_CASE("ignored embedding: the FSDP1 root flattens norm + lm_head only; the embedding is whole per rank") {
  // Root without embed: norm 20 + lm_head 740 = 760, padded to 762 for W=3, 254 per rank, r2 pads 2.
  // Ignored embed 37x20 bf16 = 1480 bytes, plus its grad and two AdamW states: 4 * 1480 = 5920.
  const ModuleTree tree = llama();
  const FsdpSettings s = ignored_settings(1, "model\\.embed_tokens");
  DiagnosticSink sink;
  const ShardPlan p = plan_fsdp1(tree, s, sink);
  REQUIRE(p.units.size() == 4);
  CHECK(p.units[0].numel == 760);
  CHECK(p.units[0].shard_numel == 254);
  CHECK(p.units[0].rank_pad == std::vector<std::int64_t>{0, 0, 2});
  CHECK_FALSE(holds(p, "model.embed_tokens.weight"));
  REQUIRE(p.ignored.size() == 1);
  CHECK(p.ignored[0].fqn == "model.embed_tokens.weight");
  CHECK(estimate_memory(p, tree, s, {}).ranks[0].ignored == 5920u);
}

TEST_CASE("ignored layer subtree: FSDP1 never wraps it, its parameters leave the root too") {
  // model.layers.2 (4360 elements) ignored: units = root (1500) + layers 0, 1.
  const ModuleTree tree = llama();
  DiagnosticSink sink;
  const ShardPlan p = plan_fsdp1(tree, ignored_settings(1, "model\\.layers\\.2"), sink);
  REQUIRE(p.units.size() == 3);
  CHECK(p.units[0].numel == 1500);
  CHECK(p.ignored.size() == 9);  // q, k, v, o, gate, up, down, two norms
  CHECK_FALSE(holds(p, "model.layers.2.mlp.up_proj.weight"));
}

TEST_CASE("ignored modules are matched whole (re.fullmatch), not by prefix") {
  const ModuleTree tree = llama();
  DiagnosticSink sink;
  const ShardPlan p = plan_fsdp1(tree, ignored_settings(1, "model\\.layers\\.1"), sink);
  CHECK(p.units.size() == 3);  // layers 0 and 2 still units, not "model.layers.1*"
  CHECK(holds(p, "model.layers.0.mlp.up_proj.weight"));
}

TEST_CASE("ignored embedding under FSDP2: no fully_shard group holds it") {
  const ModuleTree tree = llama();
  DiagnosticSink sink;
  const ShardPlan p = plan_fsdp2(tree, ignored_settings(2, "model\\.embed_tokens"), sink);
  CHECK_FALSE(holds(p, "model.embed_tokens.weight"));
  CHECK(p.ignored.size() == 1);
}
