// The training recipe as the step replay counts it: the optimizer models of rules/optimizers.yaml, the
// recipe keys of a Trainer / TRL file, and what each changes in the replayed peak.
#include <doctest/doctest.h>

#include <string>

#include "shardcheck/adapter.hpp"
#include "shardcheck/memory.hpp"
#include "shardcheck/optimizers.hpp"
#include "shardcheck/preflight.hpp"
#include "shardcheck/training_args.hpp"

using namespace shardcheck;

namespace {

OptimizerModel optimizer(const std::string& name) {
  std::string error;
  const auto o = load_optimizer(SHARDCHECK_SOURCE_DIR "/rules", name, error);
  REQUIRE_MESSAGE(o.has_value(), error);
  return *o;
}

}  // namespace

TEST_CASE("optimizer state bytes follow each optimizer's source") {
  const std::int64_t n = 1 << 20;
  // torch optim/adamw.py: exp_avg and exp_avg_sq, zeros_like(param); foreach adds _foreach_sqrt's list.
  const OptimizerModel adamw = optimizer("adamw_torch");
  CHECK(adamw.known);
  CHECK(optimizer_state_bytes(adamw, n, DType::F32) == 2ull * 4 * n);
  CHECK(optimizer_state_bytes(adamw, n, DType::BF16) == 2ull * 2 * n);
  CHECK(adamw.temporaries == 1);
  CHECK(optimizer("adamw_torch_fused").temporaries == 0);  // one fused kernel, in place
  // bitsandbytes Optimizer8bit (blockwise): state1 and state2 in uint8, a float32 absmax per 256 elements.
  const OptimizerModel bnb = optimizer("adamw_bnb_8bit");
  CHECK(optimizer_state_bytes(bnb, n, DType::F32) == 2ull * n + 2ull * (n / 256) * 4);
  CHECK(optimizer_state_bytes(bnb, 257, DType::BF16) == 2ull * 257 + 2ull * 2 * 4);  // a partial block has its absmax
  CHECK(optimizer_state_bytes(optimizer("adamw_8bit"), n, DType::F32) == optimizer_state_bytes(bnb, n, DType::F32));
  // torch SGD with transformers' momentum 0 keeps no momentum_buffer; Lion one state.
  CHECK(optimizer_state_bytes(optimizer("sgd"), n, DType::F32) == 0);
  CHECK(optimizer_state_bytes(optimizer("lion_32bit"), n, DType::F32) == 4ull * n);
  // A name rules/optimizers.yaml does not list: known = false (FIT002, verdict not_estimated).
  const OptimizerModel unknown = optimizer("adamw_mystery");
  CHECK_FALSE(unknown.known);
  CHECK(unknown.name == "adamw_mystery");
}

TEST_CASE("a recipe's optim, Liger, gradient accumulation and unmodelled keys are read with their lines") {
  const auto parsed = parse_training_args(
      "per_device_train_batch_size: 2\n"
      "optim: paged_adamw_8bit\n"
      "use_liger_kernel: true\n"
      "gradient_accumulation_steps: 8\n"
      "torch_compile: false\n"
      "beta: 0.1\n"
      "activation_offloading: true\n",
      "recipe.yaml");
  REQUIRE(std::holds_alternative<TrainingArgs>(parsed));
  const TrainingArgs& t = std::get<TrainingArgs>(parsed);
  REQUIRE(t.optim);
  CHECK(t.optim->value == "paged_adamw_8bit");
  CHECK(t.optim->source == "recipe.yaml:2");
  REQUIRE(t.liger);
  CHECK(t.liger->value);
  REQUIRE(t.gradient_accumulation);
  CHECK(t.gradient_accumulation->value == 8);
  // torch_compile: false turns nothing on; beta (DPO-style pairs) and activation offloading change memory.
  REQUIRE(t.unmodelled.size() == 2);
  CHECK(t.unmodelled[0].first == "activation_offloading");
  CHECK(t.unmodelled[0].second == "recipe.yaml:7");
  CHECK(t.unmodelled[1].first == "beta");
}

TEST_CASE("a bad optim value is an error with its position") {
  const auto parsed = parse_training_args("optim: [adamw_torch]\n", "recipe.yaml");
  REQUIRE(std::holds_alternative<std::string>(parsed));
  CHECK(std::get<std::string>(parsed).starts_with("recipe.yaml:1"));
}

TEST_CASE("Liger's fused loss leaves out every T x V tensor; the Trainer's loop holds no outputs") {
  const auto run = [](bool liger, TrainingLoop loop) {
    PreflightRequest req;
    req.rules_dir = SHARDCHECK_SOURCE_DIR "/rules";
    req.model = SHARDCHECK_FIXTURES_DIR "/oracle2/peak/models/l256";
    req.defaults.world_size = {2, "test"};
    req.defaults.fsdp_version = {2, "test"};
    req.memory.seq_len = 1024;
    req.memory.micro_batch = 1;
    req.memory.fused_loss = liger;
    req.memory.loop = loop;
    req.resolve.load_dtype = "float32";
    const PreflightResult r = run_preflight(req);
    REQUIRE(r.memory.step.available);
    return r.memory.step;
  };
  const auto has = [](const StepMoment& m, const std::string& what) {
    for (const auto& p : m.parts)
      if (p.what.starts_with(what)) return true;
    return false;
  };
  const StepPeak plain = run(false, TrainingLoop::accelerate);
  CHECK(has(plain.peak, "logits and loss tensors"));
  CHECK(has(plain.peak, "outputs held by the loop"));
  const StepPeak liger = run(true, TrainingLoop::accelerate);
  for (const auto& m : liger.moments) CHECK_FALSE(has(m, "logits and loss tensors"));
  // vocab 8000 x 1024 tokens: at least the log-softmax and its two float32 gradients are gone from the peak
  // (which moves to another moment).
  CHECK(plain.peak.total() - liger.peak.total() >= 3ull * 1024 * 8000 * 4);
  const StepPeak trainer = run(false, TrainingLoop::trainer);
  for (const auto& m : trainer.moments) CHECK_FALSE(has(m, "outputs held by the loop"));
}

TEST_CASE("transformers' gradient_checkpointing is told apart from accelerate's activation checkpointing") {
  // transformers 5.12.1 GradientCheckpointingLayer turns use_cache off under gradient checkpointing, so only
  // accelerate's fsdp_activation_checkpointing meets the KV cache (PLAN034).
  const auto plan034 = [](const std::string& source) {
    PreflightRequest req;
    req.rules_dir = SHARDCHECK_SOURCE_DIR "/rules";
    req.model = SHARDCHECK_FIXTURES_DIR "/oracle2/peak/models/l256";
    req.defaults.world_size = {2, "test"};
    req.defaults.fsdp_version = {2, "test"};
    req.defaults.activation_checkpointing = {true, source};
    req.memory.recipe_checkpointing_source = "recipe.yaml:3";
    const PreflightResult r = run_preflight(req);
    for (const auto& d : r.sink.items())
      if (d.code == "PLAN034") return true;
    return false;
  };
  CHECK_FALSE(plan034("recipe.yaml:3"));
  CHECK(plan034("--activation-checkpointing"));
}

TEST_CASE("TRL's DPO: chosen and rejected rows, the reference model's forward, and what removes it") {
  // trl v1.9.0 dpo_trainer.py: DataCollatorForPreference concatenates chosen and rejected (2 x
  // per_device_train_batch_size rows); prepare_fsdp shards the reference model with ONE fully_shard
  // under FSDP2; a PEFT policy is its own reference (adapter off); precompute_ref_log_probs drops it.
  const auto run = [](PreferenceReference ref, bool lora) {
    PreflightRequest req;
    req.rules_dir = SHARDCHECK_SOURCE_DIR "/rules";
    req.model = SHARDCHECK_FIXTURES_DIR "/oracle2/peak/models/l256";
    req.defaults.world_size = {2, "test"};
    req.defaults.fsdp_version = {2, "test"};
    req.memory.seq_len = 1024;
    req.memory.micro_batch = 1;
    req.memory.loop = TrainingLoop::trainer;
    req.memory.reference = ref;
    req.resolve.load_dtype = "float32";
    if (lora) {
      LoraAdapter a;
      a.source = "test";
      a.task_type = "CAUSAL_LM";
      a.target_modules.kind = ModuleSelector::Kind::all_linear;
      req.adapter = a;
    }
    PreflightResult r = run_preflight(req);
    REQUIRE(r.memory.step.available);
    return r;
  };
  const auto reference_part = [](const StepPeak& s) -> std::uint64_t {
    for (const StepMoment& m : s.moments)
      if (m.name == "reference forward")
        for (const StepPart& p : m.parts)
          if (p.what.starts_with("reference forward")) return p.bytes;
    return 0;
  };
  const PreflightResult sft = run(PreferenceReference::none, false);
  const PreflightResult dpo = run(PreferenceReference::model, false);
  CHECK(dpo.memory.activations.tokens == 2 * sft.memory.activations.tokens);
  // The reference's whole model unsharded (5,547,264 float32 parameters: the oracle's "reference forward |
  // resize_" of 22,189,056 bytes), the flat all-gather output beside it, and its logits (2 rows x 1024 x 8000).
  CHECK(reference_part(dpo.memory.step) >= 2ull * 22189056 + 2ull * 1024 * 8000 * 4);
  CHECK(reference_part(run(PreferenceReference::precomputed, false).memory.step) == 0);
  // A PEFT model: no second model, the policy's groups one at a time.
  const PreflightResult peft = run(PreferenceReference::model, true);
  CHECK(reference_part(peft.memory.step) > 0);
  CHECK(reference_part(peft.memory.step) < reference_part(dpo.memory.step));
}

TEST_CASE("a recipe's beta is FIT003 unless --trainer dpo models it") {
  const auto parsed = parse_training_args("per_device_train_batch_size: 1\nmax_length: 512\nbeta: 0.1\n", "dpo.yaml");
  REQUIRE(std::holds_alternative<TrainingArgs>(parsed));
  const auto fit003 = [&](PreferenceReference ref) {
    PreflightRequest req;
    req.rules_dir = SHARDCHECK_SOURCE_DIR "/rules";
    req.model = SHARDCHECK_FIXTURES_DIR "/oracle2/peak/models/l256";
    req.defaults.world_size = {2, "test"};
    req.defaults.fsdp_version = {2, "test"};
    req.memory.seq_len = 512;
    req.memory.micro_batch = 1;
    req.memory.reference = ref;
    req.training_args = std::get<TrainingArgs>(parsed);
    const PreflightResult r = run_preflight(req);
    std::string messages;
    for (const auto& d : r.sink.items())
      if (d.code == "FIT003") messages += d.message + "\n";
    return messages;
  };
  const std::string plain = fit003(PreferenceReference::none);
  CHECK(plain.find("beta") != std::string::npos);
  CHECK(plain.find("--trainer dpo") != std::string::npos);
  CHECK(fit003(PreferenceReference::model).find("beta") == std::string::npos);
}
