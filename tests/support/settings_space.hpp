#pragma once
// The space of settings a user can give `plan` and `check`, valid and invalid alike, drawn from a
// byte stream: shared by the property test (tests/unit/test_settings_properties.cpp, a seeded
// random stream) and the fuzz harness (fuzz/fuzz_settings.cpp, libFuzzer's bytes), so both explore
// the same space. plan_invariants() says what any plan must satisfy whatever the settings.

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "shardcheck/finding_codes.hpp"
#include "shardcheck/preflight.hpp"

namespace settings_space {

using namespace shardcheck;

// Reads choices from bytes; past the end every choice is the first option.
class Chooser {
 public:
  Chooser(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  template <class T>
  const T& pick(const std::vector<T>& options) {
    return options[next() % options.size()];
  }
  bool coin() { return next() & 1; }

 private:
  std::uint8_t next() { return pos_ < size_ ? data_[pos_++] : 0; }
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

struct Draw {
  PreflightRequest req;
  std::string description;  // for failure messages
  bool peft = false;        // a LoRA / QLoRA run
};

inline Setting<Version> flag_version(int a, int b, int c, const char* flag) { return {Version{a, b, c}, flag}; }

// One request over the bundled fixtures. `source_dir`: the repository.
inline Draw draw(Chooser& ch, const std::string& source_dir) {
  static const std::vector<std::string> models = {"llama", "gpt2",  "mixtral",    "qwen3_moe",
                                                  "gemma", "qwen2", "deepseek_v3"};
  // Valid values outnumber invalid ones, so that most draws reach the simulator.
  static const std::vector<int> worlds = {-3, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 64, 2, 4, 8, 6, 1 << 21};
  static const std::vector<int> machines = {0, 1, 1, 1, 1, 2, 2, 3};
  static const std::vector<int> fsdp_versions = {1, 2, 1, 2, 1, 2, 3};
  static const std::vector<ShardingStrategy> strategies = {
      ShardingStrategy::full_shard, ShardingStrategy::shard_grad_op, ShardingStrategy::no_shard,
      ShardingStrategy::hybrid_shard, ShardingStrategy::hybrid_shard_zero2};
  static const std::vector<WrapPolicyKind> policies = {WrapPolicyKind::transformer, WrapPolicyKind::size,
                                                       WrapPolicyKind::none};
  static const std::vector<std::int64_t> min_params = {-1, 0, 1, 100, 1000, 5000, 100'000'000};
  static const std::vector<MixedPrecision> precisions = {MixedPrecision::no, MixedPrecision::bf16,
                                                         MixedPrecision::fp16};
  static const std::vector<int> replicas = {0, 1, 1, 1, 1, 2, 3};
  static const std::vector<std::string> ignored = {
      "", "", "", "", R"(model\.layers\.1)", "lm_head", "(", R"(model\.embed_tokens)"};
  static const std::vector<std::vector<std::string>> classes = {
      {}, {}, {"NoSuchLayer"}, {"L", "l", "a"}, {"LlamaDecoderLayer"}, {"LlamaDecoderLayer", "LlamaAttention"}};
  static const std::vector<Version> torches = {{1, 13, 1}, {2, 0, 0},  {2, 4, 0}, {2, 7, 0},
                                               {2, 9, 0},  {2, 14, 1}, {3, 0, 0}};
  static const std::vector<Version> transformers = {{4, 3, 0},  {4, 46, 0}, {4, 57, 6},
                                                    {5, 12, 1}, {5, 16, 0}, {9, 0, 0}};
  static const std::vector<Fsdp2Caller> callers = {Fsdp2Caller::accelerate, Fsdp2Caller::accelerate,
                                                   Fsdp2Caller::torchtitan, Fsdp2Caller::transformers};
  Draw d;
  PreflightRequest& r = d.req;
  r.rules_dir = source_dir + "/rules";
  const std::string& model = ch.pick(models);
  r.model = source_dir + "/fixtures/models/" + model;
  r.config_only = model == "deepseek_v3" || ch.coin();
  FsdpSettings& s = r.defaults;
  s.world_size = {ch.pick(worlds), ch.coin() ? "--world-size" : "cfg.yaml:4"};
  s.num_machines = {ch.pick(machines), "--num-machines"};
  s.fsdp_version = {ch.pick(fsdp_versions), "--fsdp-version"};
  s.sharding_strategy.value = ch.pick(strategies);
  s.policy.value = ch.pick(policies);
  s.min_num_params = {ch.pick(min_params), ch.coin() ? "--min-num-params" : "default"};
  s.use_orig_params.value = ch.coin();
  s.mixed_precision.value = ch.pick(precisions);
  // HSDP replicas of accelerate's mesh: FSDP2 only (under FSDP1 accelerate refuses them, SET008).
  if (const int replicas_drawn = ch.pick(replicas); s.fsdp_version.value == 2)
    s.dp_replicate = {replicas_drawn, "--dp-replicate"};
  s.ignored_modules = {ch.pick(ignored), "--ignored-modules"};
  s.wrap_classes.value = ch.pick(classes);
  s.offload_params.value = ch.coin();
  s.activation_checkpointing.value = ch.coin();
  s.fsdp2_caller.value = ch.pick(callers);
  if (ch.coin()) s.reshard_after_forward.value = ch.coin();
  if (ch.pick(std::vector<int>{0, 0, 0, 1}) == 1)
    r.versions.torch = Setting<Version>{ch.pick(torches), "--torch-version"};
  if (ch.pick(std::vector<int>{0, 0, 0, 1}) == 1)
    r.versions.transformers = Setting<Version>{ch.pick(transformers), "--transformers-version"};
  if (ch.coin()) {
    r.memory.seq_len = ch.pick(std::vector<std::int64_t>{1, 7, 4096});
    r.memory.micro_batch = ch.pick(std::vector<std::int64_t>{1, 3});
  }
  r.memory.gpu_memory = ch.pick(std::vector<std::uint64_t>{1, 10240, 80ull << 30});
  // Tensor and context parallelism (FSDP2 only; the rest of the mesh is dp_shard): dims that divide the
  // world or not, leave dp_shard at 1 or not.
  // Under FSDP1 accelerate refuses any of them (SET008), so they are drawn but kept only for FSDP2.
  const int tp = ch.pick(std::vector<int>{1, 1, 1, 1, 2, 2, 4, 3, 0});
  const int cp = ch.pick(std::vector<int>{1, 1, 1, 1, 1, 2});
  if (s.fsdp_version.value == 2) {
    s.tp_size = {tp, "--tp-size"};
    s.cp_size = {cp, "--cp-size"};
  }
  // A LoRA / QLoRA run in a quarter of the draws: targets that exist, do not exist or are containers,
  // every bias mode, DoRA, a saved head, 4-bit loading in each storage dtype, either caller.
  std::string peft = "none";
  if (ch.pick(std::vector<int>{0, 0, 0, 1}) == 1) {
    static const std::vector<std::vector<std::string>> targets = {{"q_proj", "v_proj"},
                                                                  {"q_proj", "v_proj", "c_attn"},
                                                                  {"q_proj", "v_proj"},
                                                                  {"c_attn"},
                                                                  {"query"},
                                                                  {"self_attn"},
                                                                  {"o_proj", "down_proj", "c_fc"},
                                                                  {}};
    LoraAdapter a;
    a.source = "command line";
    a.task_type = "CAUSAL_LM";
    a.r = ch.pick(std::vector<int>{1, 4, 64});
    const auto& t = ch.pick(targets);
    if (!t.empty()) {
      a.target_modules.kind = ModuleSelector::Kind::names;
      a.target_modules.names = t;
    } else if (ch.coin()) {
      a.target_modules.kind = ModuleSelector::Kind::all_linear;
    } else {
      a.target_modules.kind = ModuleSelector::Kind::regex;
      a.target_modules.regex = ch.pick(std::vector<std::string>{R"(.*\.(q|v)_proj)", "(", ".*"});
    }
    a.bias = ch.pick(std::vector<std::string>{"none", "all", "lora_only"});
    a.use_dora = ch.coin();
    if (ch.coin()) a.modules_to_save = {"lm_head"};
    a.prepare_kbit = ch.coin();
    r.adapter = a;
    if (ch.coin()) {
      Bnb4bitConfig q;
      q.quant_storage = ch.pick(std::vector<DType>{DType::U8, DType::BF16, DType::F32});
      q.double_quant = ch.coin();
      r.resolve.bnb_4bit = q;
    }
    s.trainer = {ch.coin(), "--caller"};
    d.peft = true;
    peft = "lora r=" + std::to_string(a.r) + " bias=" + a.bias + (a.use_dora ? " dora" : "") +
           (r.resolve.bnb_4bit ? " 4bit" : "") + (s.trainer.value ? " trainer" : " accelerate");
  }
  d.description =
      model + " ws=" + std::to_string(s.world_size.value) + " nm=" + std::to_string(s.num_machines.value) +
      " fsdp=" + std::to_string(s.fsdp_version.value) + " strat=" + strategy_name(s.sharding_strategy.value) +
      " policy=" + policy_name(s.policy.value) + " min=" + std::to_string(s.min_num_params.value) +
      " orig=" + std::to_string(s.use_orig_params.value) + " mp=" + mixed_precision_name(s.mixed_precision.value) +
      " rep=" + std::to_string(s.dp_replicate.value) + " tp=" + std::to_string(s.tp_size.value) +
      " cp=" + std::to_string(s.cp_size.value) + " ign='" + s.ignored_modules.value + "'" +
      " cls=" + std::to_string(s.wrap_classes.value.size()) + " caller=" + caller_name(s.fsdp2_caller.value) +
      " peft=" + peft;
  return d;
}

// What must hold of any result; "" when it does, else the first violation.
inline std::string plan_invariants(const PreflightResult& r) {
  std::set<std::string> catalogued;
  for (const auto& c : finding_codes()) catalogued.insert(c.id);
  bool errors = false, job_fails = false;  // job_fails: an error other than the fit itself
  for (const auto& d : r.sink.items()) {
    errors = errors || d.severity == Severity::error;
    job_fails = job_fails || (d.severity == Severity::error && d.code != "FIT001");
    // Lint rules have kebab-case ids; every other finding is in the catalogue.
    if (d.code.find('-') == std::string::npos && !catalogued.count(d.code)) return "uncatalogued code " + d.code;
    if (d.severity == Severity::error && d.exit_code == ExitCode::ok) return "an error with exit code 0: " + d.code;
  }
  if (!r.plan) return errors ? "" : "no plan and no error";
  const ShardPlan& p = *r.plan;
  if (p.shard_group < 1 || p.world_size < 1 || p.world_size % p.shard_group != 0) return "bad shard group";
  // Every parameter storage of the tree that is not ignored is in exactly one unit, or reported as
  // flattened twice (duplicated) by a unit.
  std::unordered_map<std::string, int> in_units;
  std::set<std::string> duplicated;
  for (const auto& u : p.units) {
    if (u.rank_pad.size() != static_cast<std::size_t>(p.shard_group)) return "rank_pad size in unit " + u.path;
    std::int64_t sum = 0;
    for (auto n : u.param_numels) sum += n;
    if (sum != u.numel) return "numel is not the sum of the parameters in unit " + u.path;
    for (const auto& f : u.params) ++in_units[f];
    duplicated.insert(u.duplicated.begin(), u.duplicated.end());
    std::int64_t pad = 0;
    for (auto x : u.rank_pad) pad += x;
    if (p.fsdp_version == 1) {
      std::int64_t laid = 0;
      for (const auto& slot : u.layout) laid += slot.numel;
      if (p.strategy != ShardingStrategy::no_shard && !u.params.empty()) {
        if (u.shard_numel * p.shard_group != u.padded_numel) return "shard x ranks != padded in unit " + u.path;
        if (u.padded_numel - pad != laid) return "padding does not make up the chunks in unit " + u.path;
      }
    } else {
      std::int64_t shard = 0, expect_pad = 0;
      for (const auto& ps : u.shards) {
        shard += ps.rows_per_rank * ps.row_numel;
        for (int rk = 0; rk < p.shard_group; ++rk) {
          const std::int64_t rows =
              std::clamp<std::int64_t>(ps.shape.front() - rk * ps.rows_per_rank, 0, ps.rows_per_rank);
          expect_pad += (ps.rows_per_rank - rows) * ps.row_numel;
        }
      }
      if (shard != u.shard_numel || u.padded_numel != shard * p.shard_group || pad != expect_pad)
        return "FSDP2 shard arithmetic in group " + u.path;
    }
  }
  if (!errors && r.tree) {
    std::set<std::string> ignored;
    for (const auto& ip : p.ignored) ignored.insert(ip.fqn);
    for (const auto& m : r.tree->modules)
      for (const auto& prm : m.params) {
        if (prm.buffer || !prm.tied_to.empty()) continue;
        const std::string fqn = qualified_name(m.path, prm.name);
        if (ignored.count(fqn)) continue;
        const int n = in_units.count(fqn) ? in_units.at(fqn) : 0;
        if (n == 0 && !p.units.empty()) {
          // A tie's target may be held under its alias's name.
          bool alias_held = false;
          for (const auto& m2 : r.tree->modules)
            for (const auto& q : m2.params)
              if (q.tied_to == fqn && in_units.count(qualified_name(m2.path, q.name))) alias_held = true;
          if (!alias_held) return "parameter in no unit: " + fqn;
        }
        if (n > 1 && !duplicated.count(fqn)) return "parameter in two units, not reported: " + fqn;
      }
  }
  // Memory: the peak is the replayed step's largest moment (never above the sum of the categories of
  // the largest rank), or without activations the largest rank's total; the verdict agrees with it.
  const MemoryEstimate& m = r.memory;
  std::uint64_t peak = 0;
  for (const auto& rk : m.ranks) peak = std::max(peak, rk.total());
  if (m.step.available) {
    if (m.peak != m.step.peak.total()) return "peak is not the replayed step's";
  } else if (!m.ranks.empty() && peak != m.peak) {
    return "peak is not the largest rank's total";
  }
  if (job_fails != (m.verdict == FitVerdict::withheld))
    return "a verdict for a failing job, or none for a runnable one";
  if (!job_fails && m.verdict == FitVerdict::does_not_fit && m.peak <= m.gpu_memory)
    return "does not fit, yet the peak fits";
  if (!job_fails && m.verdict == FitVerdict::fits && m.peak > m.gpu_memory) return "fits, yet the peak does not";
  return "";
}

}  // namespace settings_space
