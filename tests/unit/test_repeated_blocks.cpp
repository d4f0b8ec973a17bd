// Folded module trees (shardcheck/repeated_blocks.hpp): a fold followed by its expansion must give
// back the materialised tree exactly, the counts of a folded tree are those of the whole model, and
// a PeftModel built on a folded base model (apply_lora_adapter with fold_repeats) expands to the very
// tree that the materialised build gives, on every adapter recorded from real peft and on corpus
// models with adapters that tell layers apart.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "shardcheck/load_tree.hpp"
#include "shardcheck/peft_model.hpp"
#include "shardcheck/repeated_blocks.hpp"
#include "shardcheck/shard_plan.hpp"
#include "oracle_case.hpp"
#include "test_files.hpp"

using namespace shardcheck;
using namespace shardcheck::test;
namespace fs = std::filesystem;

namespace repeated_blocks_test {

const fs::path kFixtures = fs::path(SHARDCHECK_FIXTURES_DIR);

ModuleTree load(const fs::path& model, bool config_only) {
  DiagnosticSink sink;
  ResolveOptions opt;
  opt.transformers = *Version::parse("5.12.1");
  LoadedTree loaded = load_module_tree(model.string(), config_only, SHARDCHECK_SOURCE_DIR "/rules", opt, sink);
  REQUIRE_MESSAGE(loaded.tree.has_value(), errors_of(sink));
  return std::move(*loaded.tree);
}

// Every field of every module and parameter, in order, and the tree's counts.
void require_same_tree(const ModuleTree& got, const ModuleTree& want) {
  CHECK(got.folded == want.folded);
  CHECK(got.num_params == want.num_params);
  CHECK(got.num_tensors == want.num_tensors);
  CHECK(got.dtype_numel == want.dtype_numel);
  REQUIRE(got.modules.size() == want.modules.size());
  for (std::size_t i = 0; i < got.modules.size(); ++i) {
    const Module& a = got.modules[i];
    const Module& b = want.modules[i];
    CAPTURE(b.path);
    REQUIRE(a.path == b.path);
    CHECK(a.name == b.name);
    CHECK(a.cls == b.cls);
    CHECK(a.parent == b.parent);
    CHECK(a.children == b.children);
    CHECK(a.repeat == b.repeat);
    CHECK(a.own_numel == b.own_numel);
    CHECK(a.total_numel == b.total_numel);
    REQUIRE(a.params.size() == b.params.size());
    for (std::size_t k = 0; k < a.params.size(); ++k) {
      const ParamInfo& p = a.params[k];
      const ParamInfo& q = b.params[k];
      CAPTURE(q.name);
      CHECK(p.name == q.name);
      CHECK(p.shape == q.shape);
      CHECK(p.dtype == q.dtype);
      CHECK(p.numel == q.numel);
      CHECK(p.tied_to == q.tied_to);
      CHECK(p.buffer == q.buffer);
      CHECK(p.in_checkpoint == q.in_checkpoint);
      CHECK(p.requires_grad == q.requires_grad);
      CHECK(p.unreached == q.unreached);
      CHECK(p.fused_from == q.fused_from);
      CHECK(p.unpacked_shape == q.unpacked_shape);
    }
  }
}

// The adapter applied to `base` both ways; the folded result, expanded, must be the materialised
// one. Returns how many modules the folded PeftModel holds, and the materialised one.
std::pair<std::size_t, std::size_t> require_fold_exact(const ModuleTree& base, const LoraAdapter& adapter) {
  DiagnosticSink sink;
  const auto rules = PeftRules::load(SHARDCHECK_SOURCE_DIR "/rules", sink);
  REQUIRE(rules.has_value());
  ModuleTree whole = base;
  DiagnosticSink whole_sink;
  REQUIRE_MESSAGE(apply_lora_adapter(whole, adapter, *rules, whole_sink), errors_of(whole_sink));
  ModuleTree folded = base;
  DiagnosticSink folded_sink;
  REQUIRE(apply_lora_adapter(folded, adapter, *rules, folded_sink, /*fold_repeats=*/true));
  CHECK(folded_sink.items().size() == whole_sink.items().size());
  for (const auto& d : folded_sink.items()) CHECK_MESSAGE(d.code != "PEFT009", d.message);  // every tensor placed
  REQUIRE(folded.peft.has_value());
  CHECK(folded.peft->trainable == whole.peft->trainable);
  CHECK(folded.peft->total == whole.peft->total);
  CHECK(folded.peft->targeted == whole.peft->targeted);
  CHECK(folded.peft->saved == whole.peft->saved);
  CHECK(folded.tied.size() == whole.tied.size());
  const std::size_t held = folded.modules.size();
  expand_repeated_blocks(folded);
  require_same_tree(folded, whole);
  return {held, whole.modules.size()};
}

}  // namespace repeated_blocks_test
using namespace repeated_blocks_test;

TEST_CASE("repeated blocks: Llama-3.1-70B's 80 decoder layers fold into one and expand back") {
  const ModuleTree whole = load(kFixtures / "corpus-configs" / "meta-llama__Llama-3.1-70B-Instruct.json", true);
  ModuleTree tree = whole;
  const std::vector<int> now = fold_repeated_blocks(tree);
  REQUIRE(tree.folded);
  // The 80 layers are model.layers.0..79 (9 modules each: the layer, self_attn and its 4
  // projections, mlp and its 3, ... as the registry lays them out): 79 of them go.
  std::size_t per_layer = 0;
  for (const Module& m : whole.modules)
    if (m.path == "model.layers.0" || m.path.starts_with("model.layers.0.")) ++per_layer;
  CHECK(tree.modules.size() == whole.modules.size() - 79 * per_layer);
  int layers = -1;
  for (std::size_t i = 0; i < whole.modules.size(); ++i) {
    if (whole.modules[i].path == "model.layers.0") layers = now[i];
    if (whole.modules[i].path == "model.layers.1") CHECK(now[i] == -1);
  }
  REQUIRE(layers >= 0);
  CHECK(tree.modules[static_cast<std::size_t>(layers)].repeat == 80);
  // Counts are the whole model's: published 70.6B (config-only inspect reproduces it exactly).
  CHECK(tree.num_params == whole.num_params);
  CHECK(tree.modules[0].total_numel == whole.modules[0].total_numel);
  const std::vector<std::int64_t> mult = module_multiplicity(tree);
  CHECK(mult[static_cast<std::size_t>(layers)] == 80);
  CHECK(mult[static_cast<std::size_t>(layers) + 1] == 80);  // its first child
  expand_repeated_blocks(tree);
  require_same_tree(tree, whole);
}

TEST_CASE("repeated blocks: instances that differ, or that something outside names, stay apart") {
  ModuleTree whole = load(kFixtures / "corpus-configs" / "meta-llama__Llama-3.1-70B-Instruct.json", true);
  // Layer 5 frozen (plan --frozen does this by name): 0-4, 5, 6-79.
  for (Module& m : whole.modules)
    if (m.path.starts_with("model.layers.5."))
      for (ParamInfo& p : m.params) p.requires_grad = false;
  // A name pointing into layer 40 keeps layer 40 where it is: it may start a run, not be dropped
  // from one: 6-39, 40-79.
  whole.output_embeddings = "model.layers.40.mlp";
  ModuleTree tree = whole;
  fold_repeated_blocks(tree);
  std::vector<std::pair<std::string, int>> runs;
  for (const Module& m : tree.modules)
    if (m.parent >= 0 && tree.modules[static_cast<std::size_t>(m.parent)].path == "model.layers")
      runs.emplace_back(m.name, m.repeat);
  const std::vector<std::pair<std::string, int>> want = {{"0", 5}, {"5", 1}, {"6", 34}, {"40", 40}};
  CHECK(runs == want);
  expand_repeated_blocks(tree);
  require_same_tree(tree, whole);
}

TEST_CASE("repeated blocks: a PeftModel built folded is the materialised one, on every recorded adapter") {
  int compared = 0, folded = 0;
  for (const auto& dir : fs::directory_iterator(kFixtures / "peft-oracle" / "adapters")) {
    for (const auto& file : json_files(dir.path(), "record")) {
      const json rec = read_json(file);
      CAPTURE(file.string());
      if (!rec.value("quant", json()).is_null()) continue;  // the 4-bit records: the same builder
      const ModuleTree base =
          load(kFixtures / "oracle2" / "models" / rec.at("model").get<std::string>(), /*config_only=*/false);
      DiagnosticSink sink;
      auto adapter = load_adapter_config(dir.path().string(), sink);
      REQUIRE(adapter.has_value());
      REQUIRE(adapter->weights.has_value());  // checked against the folded tree's instances
      const auto [held, all] = require_fold_exact(base, *adapter);
      if (held < all) ++folded;
      ++compared;
    }
  }
  CHECK(compared >= 17);
  // All but the adapter that tells the two layers apart (llama-layers: layers_to_transform [1]).
  CHECK(folded == compared - 1);
}

TEST_CASE("repeated blocks: LoRA on Llama-3.1-70B folds as far as the adapter lets it") {
  const ModuleTree base = load(kFixtures / "corpus-configs" / "meta-llama__Llama-3.1-70B-Instruct.json", true);
  LoraAdapter a;
  a.source = "test";
  a.task_type = "CAUSAL_LM";
  a.r = 16;
  a.target_modules.kind = ModuleSelector::Kind::all_linear;
  SUBCASE("all-linear: one layer of 80 built") {
    // 7 LoRA layers per decoder layer, each its base_layer and 10 more modules (peft 0.20
    // LoraLayer.__init__): the folded PeftModel holds one decoder layer of them.
    const std::size_t held = require_fold_exact(base, a).first;
    std::size_t per_layer = 0;
    for (const Module& m : base.modules)
      if (m.path == "model.layers.0" || m.path.starts_with("model.layers.0.")) ++per_layer;
    CHECK(held == base.modules.size() - 79 * per_layer + 7 * 10 + 2);
  }
  SUBCASE("rank_pattern on layer 7") {
    a.rank_pattern = {{"layers\\.7\\.self_attn\\.q_proj", 64}};
    require_fold_exact(base, a);
  }
  SUBCASE("layers_to_transform") {
    a.target_modules.kind = ModuleSelector::Kind::names;
    a.target_modules.names = {"q_proj", "v_proj"};
    a.layers_to_transform = std::vector<int>{0, 1, 2, 40};
    require_fold_exact(base, a);
  }
  SUBCASE("a regex naming some layers, modules_to_save, DoRA and biases") {
    a.target_modules.kind = ModuleSelector::Kind::regex;
    a.target_modules.regex = R"(.*layers\.(1|2|3)\d*\.mlp\.(up|down)_proj)";
    a.modules_to_save = {"lm_head", "layers.9.input_layernorm"};
    a.use_dora = true;
    a.bias = "all";
    require_fold_exact(base, a);
  }
}

namespace repeated_blocks_test {

// The plan of the folded tree against the plan of the materialised one: each materialised unit is
// an instance of a folded unit (the module it expands from) with the same numbers and layout, its
// parameter names differing only in the instance's path, and every folded unit stands for as many
// as it says.
void require_same_plan(const ShardPlan& whole, const ModuleTree& folded_tree, const ShardPlan& folded) {
  ModuleTree expanded = folded_tree;
  std::vector<int> origin;
  expand_repeated_blocks(expanded, &origin);
  std::map<int, const ShardUnit*> by_module;
  for (const ShardUnit& f : folded.units) by_module[f.module] = &f;
  std::map<int, std::int64_t> seen;
  for (const ShardUnit& u : whole.units) {
    CAPTURE(u.path);
    const auto it = by_module.find(origin[static_cast<std::size_t>(u.module)]);
    REQUIRE(it != by_module.end());
    const ShardUnit& f = *it->second;
    CHECK(f.cls == u.cls);
    CHECK(f.numel == u.numel);
    CHECK(f.padded_numel == u.padded_numel);
    CHECK(f.shard_numel == u.shard_numel);
    CHECK(f.rank_pad == u.rank_pad);
    CHECK(f.dtype == u.dtype);
    CHECK(f.compute_dtype == u.compute_dtype);
    CHECK(f.reduce_dtype == u.reduce_dtype);
    CHECK(f.requires_grad == u.requires_grad);
    CHECK(f.gets_grad == u.gets_grad);
    CHECK(f.param_numels == u.param_numels);
    CHECK(f.duplicated.size() == u.duplicated.size());
    REQUIRE(f.params.size() == u.params.size());
    for (std::size_t k = 0; k < u.params.size(); ++k)
      CHECK(f.params[k].substr(f.path.size()) == u.params[k].substr(u.path.size()));
    REQUIRE(f.layout.size() == u.layout.size());
    for (std::size_t k = 0; k < u.layout.size(); ++k) {
      CHECK(f.layout[k].offset == u.layout[k].offset);
      CHECK(f.layout[k].numel == u.layout[k].numel);
      CHECK(f.layout[k].padding == u.layout[k].padding);
      CHECK(f.layout[k].requires_grad == u.layout[k].requires_grad);
      CHECK(f.layout[k].gets_grad == u.layout[k].gets_grad);
    }
    ++seen[f.module];
  }
  for (const ShardUnit& f : folded.units) CHECK(seen[f.module] == f.instances);
}

// Both trees planned by FSDP1 under `s`; the folded plan must be exact and match.
void require_fold_plans_alike(const ModuleTree& whole, const ModuleTree& folded, const FsdpSettings& s) {
  DiagnosticSink a, b;
  const ShardPlan plan = plan_fsdp1(whole, s, a);
  const ShardPlan folded_plan = plan_fsdp1(folded, s, b);
  REQUIRE(folded_plan_exact(folded, s, folded_plan));
  require_same_plan(plan, folded, folded_plan);
}

FsdpSettings fsdp1(int world, WrapPolicyKind policy, std::vector<std::string> classes, bool orig) {
  FsdpSettings s;
  s.world_size.value = world;
  s.policy.value = policy;
  s.wrap_classes.value = std::move(classes);
  s.use_orig_params.value = orig;
  return s;
}

}  // namespace repeated_blocks_test
using namespace repeated_blocks_test;

TEST_CASE("repeated blocks: the FSDP1 plan of a folded PeftModel is the materialised plan's, unit by unit") {
  DiagnosticSink sink;
  const auto rules = PeftRules::load(SHARDCHECK_SOURCE_DIR "/rules", sink);
  REQUIRE(rules.has_value());
  auto both = [&](const ModuleTree& base, const LoraAdapter& a) {
    ModuleTree whole = base, folded = base;
    DiagnosticSink s1, s2;
    REQUIRE(apply_lora_adapter(whole, a, *rules, s1));
    REQUIRE(apply_lora_adapter(folded, a, *rules, s2, true));
    return std::pair{std::move(whole), std::move(folded)};
  };
  int planned = 0;
  for (const auto& dir : fs::directory_iterator(kFixtures / "peft-oracle" / "adapters")) {
    const json rec = read_json(dir.path() / "record.json");
    CAPTURE(dir.path().string());
    const ModuleTree base = load(kFixtures / "oracle2" / "models" / rec.at("model").get<std::string>(), false);
    auto adapter = load_adapter_config(dir.path().string(), sink);
    REQUIRE(adapter.has_value());
    adapter->weights.reset();
    const auto [whole, folded] = both(base, *adapter);
    const std::vector<std::string> blocks = block_classes(base);
    // transformers' Trainer (peft's policy) and plain accelerate (the class policy), over 3 ranks
    // (padding) and 8, with and without use_orig_params.
    for (const int world : {3, 8})
      for (const bool orig : {true, false}) {
        require_fold_plans_alike(whole, folded, fsdp1(world, WrapPolicyKind::peft, blocks, orig));
        require_fold_plans_alike(whole, folded, fsdp1(world, WrapPolicyKind::transformer, blocks, orig));
      }
    ++planned;
  }
  CHECK(planned >= 17);

  SUBCASE("Llama-3.1-70B, all-linear LoRA, DoRA and a saved head") {
    const ModuleTree base = load(kFixtures / "corpus-configs" / "meta-llama__Llama-3.1-70B-Instruct.json", true);
    LoraAdapter a;
    a.source = "test";
    a.task_type = "CAUSAL_LM";
    a.r = 64;
    a.target_modules.kind = ModuleSelector::Kind::all_linear;
    a.use_dora = true;
    a.modules_to_save = {"lm_head"};
    const auto [whole, folded] = both(base, a);
    require_fold_plans_alike(whole, folded, fsdp1(8, WrapPolicyKind::peft, {"LlamaDecoderLayer"}, true));
  }
}

TEST_CASE("repeated blocks: a plan that would flatten several instances in one unit is not exact") {
  ModuleTree tree = load(kFixtures / "corpus-configs" / "meta-llama__Llama-3.1-70B-Instruct.json", true);
  fold_repeated_blocks(tree);
  DiagnosticSink sink;
  // No wrap: the root flattens all 80 layers, which the folded tree holds once.
  FsdpSettings none = fsdp1(8, WrapPolicyKind::none, {}, true);
  CHECK_FALSE(folded_plan_exact(tree, none, plan_fsdp1(tree, none, sink)));
  // A size policy counts elements of subtrees that the fold holds once.
  FsdpSettings size = fsdp1(8, WrapPolicyKind::size, {}, true);
  size.min_num_params.value = 100'000'000;
  CHECK_FALSE(folded_plan_exact(tree, size, plan_fsdp1(tree, size, sink)));
  const FsdpSettings layers = fsdp1(8, WrapPolicyKind::transformer, {"LlamaDecoderLayer"}, true);
  CHECK(folded_plan_exact(tree, layers, plan_fsdp1(tree, layers, sink)));
}

TEST_CASE("repeated blocks: every module path of the materialised model finds the module it is an instance of") {
  const ModuleTree whole = load(kFixtures / "corpus-configs" / "Qwen__Qwen3-30B-A3B.json", true);
  ModuleTree tree = whole;
  fold_repeated_blocks(tree);
  REQUIRE(tree.folded);
  ModuleTree expanded = tree;
  std::vector<int> origin;
  expand_repeated_blocks(expanded, &origin);
  REQUIRE(expanded.modules.size() == whole.modules.size());
  // One at a time, and in a row in both orders (a walk that goes on from the previous path's).
  ModuleInstanceFinder forward(tree), backward(tree);
  for (std::size_t i = 0; i < whole.modules.size(); ++i) {
    CAPTURE(whole.modules[i].path);
    CHECK(find_module_instance(tree, whole.modules[i].path) == origin[i]);
    CHECK(forward.find(whole.modules[i].path) == origin[i]);
    const std::size_t j = whole.modules.size() - 1 - i;
    CHECK(backward.find(whole.modules[j].path) == origin[j]);
  }
  // Not in the model: past the last layer, a name no module has, a part of a name.
  const int layers = static_cast<int>(std::count_if(whole.modules.begin(), whole.modules.end(), [](const Module& m) {
    return m.parent >= 0 && m.path.starts_with("model.layers.") && m.path.find('.', 13) == std::string::npos;
  }));
  CHECK(layers == 48);
  CHECK(forward.find("model.layers.48") == -1);
  CHECK(forward.find("model.layers.3.mlp.gate.nope") == -1);
  CHECK(forward.find("model.lay") == -1);
  CHECK(forward.find("model.layers.47.mlp") ==
        origin[static_cast<std::size_t>(std::find_if(whole.modules.begin(), whole.modules.end(),
                                                     [](const Module& m) { return m.path == "model.layers.47.mlp"; }) -
                                        whole.modules.begin())]);
}
