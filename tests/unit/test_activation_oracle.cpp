// Activation memory against REAL torch 2.14.1 and transformers 5.12.1: every
// fixtures/oracle2/activations/<model>-tp<T>-<dtype>.json was written by scripts/activation_probe.py,
// which records each tensor autograd saves in one forward of a tiny saved model (SDPA attention, CPU),
// on TP rank 0 of T tensor-parallel ranks (transformers' tp_plan="auto"). The bytes per token of a
// middle decoder layer must be exactly what shardcheck's estimate gives per layer and token, from the
// registry's `activations` model of that architecture.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <nlohmann/json.hpp>

#include "oracle_case.hpp"
#include "shardcheck/memory.hpp"
#include "shardcheck/preflight.hpp"
#include "test_files.hpp"

using namespace shardcheck;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kActivationRecords = fs::path(SHARDCHECK_FIXTURES_DIR) / "oracle2";
std::uint64_t layers_of_last = 1;  // num_hidden_layers of the last model estimated
// Bytes per token and layer that CPU, which took the records, keeps less than CUDA in a bf16 run: an
// nn.LayerNorm's mean and rstd are at the compute dtype there and in float32 on CUDA, which the estimate
// counts (docs/activations.md). Two per LayerNorm of a decoder layer, two bytes less each.
std::uint64_t cpu_layernorm_saving_of_last = 0;

// The estimate on TP rank 0 for the run the record describes.
ActivationEstimate estimate_for(const json& c) {
  const int tp = c.at("tp").get<int>();
  json versions = c.at("versions");
  versions["accelerate"] = "1.14.0";
  const json flat = {{"versions", versions},
                     {"fsdp_version", 2},
                     {"world_size", 2 * tp},
                     {"policy", {{"kind", "none"}}},
                     {"mixed_precision", c.at("dtype") == "bfloat16" ? "bf16" : "no"}};
  PreflightRequest req;
  req.rules_dir = SHARDCHECK_SOURCE_DIR "/rules";
  req.model = (kActivationRecords / "models" / c.at("model").get<std::string>()).string();
  req.defaults = test::settings_for(flat);
  req.defaults.tp_size = {tp, "oracle"};
  const json& v = c.at("versions");
  req.versions.torch = Setting<Version>{test::parse_version(v.at("torch").get<std::string>()), "oracle"};
  req.versions.transformers = Setting<Version>{test::parse_version(v.at("transformers").get<std::string>()), "oracle"};
  req.versions.accelerate = Setting<Version>{Version{1, 14, 0}, "oracle"};
  const std::int64_t tokens = c.at("tokens").get<std::int64_t>();
  req.memory.seq_len = tokens;
  req.memory.micro_batch = 1;
  req.resolve.attn_implementation = c.value("attn_implementation", "sdpa");
  PreflightResult r = run_preflight(req);
  REQUIRE(r.tree.has_value());
  REQUIRE(r.plan.has_value());
  ShardPlan plan = *r.plan;
  plan.tp_rank = 0;  // the probe reports rank 0
  const ActivationEstimate a = estimate_activations(plan, *r.tree, r.settings, req.memory);
  REQUIRE_MESSAGE(a.available, a.why_not);
  CHECK(a.tp_size == tp);
  // The pipeline's own estimate (the one the fit verdict uses) is that of the largest TP rank, rank 0.
  CHECK(r.memory.activations.blocks == a.blocks);
  CHECK(r.memory.activations.tp_size == tp);
  layers_of_last = static_cast<std::uint64_t>(r.tree->activations.at("layers"));
  cpu_layernorm_saving_of_last = 0;
  if (c.at("dtype") == "bfloat16") {
    std::string first_layer;  // the path of decoder layer 0
    for (const Module& m : r.tree->modules)
      for (const auto& cls : r.tree->no_split_modules)
        if (first_layer.empty() && r.tree->is_instance(m, cls)) first_layer = m.path + ".";
    for (const Module& m : r.tree->modules)
      if (!first_layer.empty() && m.path.starts_with(first_layer) && m.cls == "LayerNorm")
        cpu_layernorm_saving_of_last += 2 * 2;
  }
  return a;
}

// One layer's estimated bytes per token.
std::uint64_t estimated_layer_bytes(const json& c) {
  const ActivationEstimate a = estimate_for(c);
  CHECK_FALSE(a.tp_upper_bound);
  const auto tokens = c.at("tokens").get<std::uint64_t>();
  // What a block keeps whatever the tokens: where the registry models it, exactly the record's.
  if (a.fixed_per_block) CHECK(a.fixed_per_block == c.at("layer1_fixed_bytes").get<std::uint64_t>());
  const std::uint64_t per_token = a.blocks - a.fixed_per_block * layers_of_last;
  CHECK(per_token % (layers_of_last * tokens) == 0);
  return per_token / layers_of_last / tokens;
}

}  // namespace

TEST_CASE("activation oracle: a decoder layer's saved bytes per token match the real forward") {
  int compared = 0;
  for (const auto& path : test::json_files(kActivationRecords / "activations")) {
    const json c = test::read_json(path);
    CAPTURE(path.filename().string());
    const double real = c.at("layer1_bytes_per_token").get<double>();
    const std::uint64_t estimated = estimated_layer_bytes(c);
    CHECK(static_cast<double>(estimated - cpu_layernorm_saving_of_last) == real);
    ++compared;
  }
  CHECK(compared >= 3);  // llama_tp in float32 and bfloat16 on one rank, float32 on two
}

TEST_CASE("activations under TP without a TP model: the unsplit estimate, flagged as an upper bound") {
  // Gemma-3's activation model lists no tp_split (its q/k norms and sliding masks are not matched yet):
  // with two TP ranks the block is the one-rank block, and the estimate says it is a bound.
  const json versions = {{"torch", "2.14.1"}, {"transformers", "5.12.1"}};
  json one = {{"model", "gemma3_text"}, {"tp", 1}, {"tokens", 16}, {"dtype", "bfloat16"}, {"versions", versions}};
  json two = one;
  two["tp"] = 2;
  const ActivationEstimate a1 = estimate_for(one);
  const ActivationEstimate a2 = estimate_for(two);
  CHECK_FALSE(a1.tp_upper_bound);
  CHECK(a2.tp_upper_bound);
  CHECK(a2.blocks == a1.blocks);
  // Llama's model does cut under TP: rank 0 keeps less than one rank alone.
  one["model"] = two["model"] = "llama_tp";
  CHECK(estimate_for(two).blocks < estimate_for(one).blocks);
}

// Sliding-window attention masks, from the same real forwards (fixtures/oracle2/masks/*.json, written by
// scripts/activation_probe.py): every layer's seq x seq tensors, summed over the model. The estimate's
// `masks` must be exactly that: one batch x seq x seq mask in the compute dtype per sliding-window layer,
// none below the window (7 tokens against Gemma-3's window of 8), none for models without one.
TEST_CASE("activation oracle: sliding-window layers' attention masks match the real forward") {
  int compared = 0, with_masks = 0;
  for (const auto& path : test::json_files(kActivationRecords / "masks")) {
    const json c = test::read_json(path);
    CAPTURE(path.filename().string());
    const ActivationEstimate a = estimate_for(c);
    CHECK(a.masks == c.at("masks_bytes").get<std::uint64_t>());
    with_masks += a.masks > 0;
    ++compared;
  }
  CHECK(compared >= 9);
  CHECK(with_masks >= 6);
}

TEST_CASE("activation masks by hand: checkpointing keeps one layer's, context parallelism none") {
  // Gemma-3 fixture: 2 sliding-window layers (window 8); 32 tokens in bfloat16: 32 x 32 x 2 = 2,048 bytes each.
  json c = test::read_json(kActivationRecords / "masks" / "gemma3_text-t32-bfloat16.json");
  CHECK(estimate_for(c).masks == 2u * 2048u);
  const auto masks_with = [&](bool checkpointing, int cp, const std::string& attn = "sdpa") {
    PreflightRequest req;
    req.rules_dir = SHARDCHECK_SOURCE_DIR "/rules";
    req.model = (kActivationRecords / "models" / "gemma3_text").string();
    req.defaults.fsdp_version = {2, "test"};
    req.defaults.world_size = {2 * cp, "test"};
    req.defaults.cp_size = {cp, "test"};
    req.defaults.mixed_precision = {MixedPrecision::bf16, "test"};
    req.defaults.activation_checkpointing = {checkpointing, "test"};
    req.resolve.attn_implementation = attn;
    req.memory.seq_len = 32;
    req.memory.micro_batch = 1;
    const PreflightResult r = run_preflight(req);
    REQUIRE(r.memory.activations.available);
    return r.memory.activations.masks;
  };
  CHECK(masks_with(false, 1) == 2u * 2048u);
  CHECK(masks_with(true, 1) == 2048u);  // only the block being recomputed keeps its mask
  CHECK(masks_with(false, 2) == 0u);    // accelerate's context-parallel hook drops every mask
  // flash_attention_2 gets no mask without padding; eager's one shared mask is not per layer.
  CHECK(masks_with(false, 1, "flash_attention_2") == 0u);
}

// Eager attention, from real forwards of the same tiny models with attn_implementation="eager" and
// "sdpa" (fixtures/oracle2/eager/<model>-tp<T>-<dtype>-<attn>.json, scripts/eager_oracle.sh). Per token, what
// eager keeps beyond SDPA (no logsumexp, repeat_kv's copies) must be the real difference; per layer,
// the seq x seq probabilities (`square_bytes`) exactly the estimate's `scores` over the layers. Where the
// architecture's SDPA model is matched (all but the ones named below) the eager block is also exact.
TEST_CASE("eager attention oracle: what eager keeps beside SDPA matches real forwards") {
  // Seed-OSS, whose dropout CPU keeps otherwise than CUDA (docs/activations.md), and the GPT-OSS fixture
  // with experts of 52 that CPU's grouped_mm cannot run (gpt_oss_i16 is matched).
  const std::set<std::string> unmatched = {"gpt_oss", "seed_oss"};
  int pairs = 0, with_copies = 0, tp = 0;
  for (const auto& path : test::json_files(kActivationRecords / "eager")) {
    const std::string name = path.filename().string();
    if (name.find("-eager.json") == std::string::npos) continue;  // the pairs, from their eager half
    CAPTURE(name);
    const json eager = test::read_json(path);
    const ActivationEstimate e = estimate_for(eager);
    REQUIRE(e.eager);
    const auto tokens = eager.at("tokens").get<std::uint64_t>();
    // Probabilities: every layer's, over the model. With attention dropout (Seed-OSS) the estimate counts
    // CUDA's one-byte mask where CPU, which took the record, keeps a noise tensor at the compute dtype.
    const std::uint64_t width = eager.at("dtype") == "float32" ? 4 : 2;
    const std::uint64_t cpu_noise =  // the fixture's 2 heads
        eager.at("model") == "seed_oss" ? 2 * tokens * tokens * (width - 1) : 0;
    CHECK(e.scores + cpu_noise * layers_of_last == eager.at("square_bytes").get<std::uint64_t>() * layers_of_last);
    CHECK(e.scores % (tokens * tokens) == 0);
    // Where the per-token SDPA model is not matched (some lack the logsumexp eager drops), only the
    // probabilities are compared.
    if (unmatched.count(eager.at("model").get<std::string>())) continue;
    CHECK(static_cast<double>(e.blocks / layers_of_last / tokens - cpu_layernorm_saving_of_last) ==
          eager.at("layer1_bytes_per_token").get<double>());
    const fs::path sdpa_path = path.parent_path() / (name.substr(0, name.size() - 10) + "sdpa.json");
    if (eager.at("model").get<std::string>().starts_with("gpt_oss")) {  // no SDPA path to pair with
      CHECK_FALSE(fs::exists(sdpa_path));
      continue;
    }
    REQUIRE(fs::exists(sdpa_path));
    const json sdpa = test::read_json(sdpa_path);
    const std::int64_t real = static_cast<std::int64_t>(eager.at("layer1_bytes_per_token").get<double>()) -
                              static_cast<std::int64_t>(sdpa.at("layer1_bytes_per_token").get<double>());
    const std::int64_t est = static_cast<std::int64_t>(estimated_layer_bytes(eager)) -
                             static_cast<std::int64_t>(estimated_layer_bytes(sdpa));
    CHECK(est == real);
    CHECK(estimate_for(sdpa).scores == 0u);
    ++pairs;
    with_copies += real > 0;
    tp += eager.at("tp").get<int>() > 1;
  }
  CHECK(pairs >= 40);
  CHECK(with_copies >= 3);  // llama_tp_kv2, phi3_kv2 and gemma2_kv2 copy K and V at every query head
  CHECK(tp >= 3);
}

// A model class without SDPA (GPT-OSS, transformers 5.12.1 _supports_sdpa = False) refuses
// attn_implementation="sdpa" at from_pretrained: the probe recorded the ValueError
// (fixtures/oracle2/eager/gpt_oss-*-sdpa.json). ARCH005 must say so for exactly those loads.
TEST_CASE("eager attention oracle: the loads transformers refuses are ARCH005, the others are not") {
  int refused = 0, loaded = 0;
  for (const auto& path : test::json_files(kActivationRecords / "eager")) {
    const json c = test::read_json(path);
    CAPTURE(path.filename().string());
    PreflightRequest req;
    req.rules_dir = SHARDCHECK_SOURCE_DIR "/rules";
    req.model = (kActivationRecords / "models" / c.at("model").get<std::string>()).string();
    req.defaults.fsdp_version = {2, "test"};
    req.defaults.world_size = {2, "test"};
    req.resolve.attn_implementation = c.at("attn_implementation").get<std::string>();
    const PreflightResult r = run_preflight(req);
    bool arch005 = false;
    for (const auto& d : r.sink.items()) arch005 = arch005 || d.code == "ARCH005";
    if (c.contains("error")) {
      CHECK(c.at("error").at("message").get<std::string>().find("does not support an attention implementation") !=
            std::string::npos);
      CHECK(arch005);
      ++refused;
    } else {
      CHECK_FALSE(arch005);
      ++loaded;
    }
  }
  CHECK(refused == 2);  // GPT-OSS in float32 and bfloat16
  CHECK(loaded >= 100);
}

// transformers' own model code failing for a configuration (registry `model_errors`): the probe recorded
// each failure of a real forward (fixtures/oracle2/errors), and every activation record is a forward that
// ran. ARCH006 must name exactly the recorded exception for the first, and stay silent for the others.
TEST_CASE("model errors oracle: the forwards that raised are ARCH006 with their exception, the others are not") {
  auto arch006 = [](const json& c) {
    PreflightRequest req;
    req.rules_dir = SHARDCHECK_SOURCE_DIR "/rules";
    req.model = (kActivationRecords / "models" / c.at("model").get<std::string>()).string();
    req.defaults.fsdp_version = {2, "test"};
    req.defaults.world_size = {2, "test"};
    req.versions.transformers =
        Setting<Version>{test::parse_version(c.at("versions").at("transformers").get<std::string>()), "oracle"};
    const PreflightResult r = run_preflight(req);
    std::string message;
    for (const auto& d : r.sink.items())
      if (d.code == "ARCH006") message = d.message;
    return message;
  };
  int raised = 0, ran = 0;
  for (const auto& path : test::json_files(kActivationRecords / "errors")) {
    CAPTURE(path.filename().string());
    const json c = test::read_json(path);
    const json& e = c.at("error");
    REQUIRE(e.at("stage") == "forward");
    const std::string expected = e.at("type").get<std::string>() + ": " + e.at("message").get<std::string>();
    CHECK(arch006(c).starts_with(expected + " at the first forward"));
    ++raised;
  }
  for (const auto& path : test::json_files(kActivationRecords / "activations")) {
    CAPTURE(path.filename().string());
    CHECK(arch006(test::read_json(path)).empty());
    ++ran;
  }
  CHECK(raised == 1);  // DeepSeek-V2's group_limited_greedy routing
  CHECK(ran >= 80);
}
