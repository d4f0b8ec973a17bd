#include "shardcheck/preflight.hpp"
#include "shardcheck/repeated_blocks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <system_error>
#include <thread>

#include "shardcheck/accelerate_schema.hpp"
#include "shardcheck/effective_settings.hpp"
#include "shardcheck/load_tree.hpp"
#include "shardcheck/tensor_parallel.hpp"
#include "shardcheck/text.hpp"
#include "shardcheck/trl_model_config.hpp"
#include "shardcheck/validate_settings.hpp"
#include "shardcheck/finding_codes.hpp"
#include "util/stage_timer.hpp"

namespace shardcheck {

namespace {

// The check of a saved adapter's weights against the PeftModel (check_saved_adapter_weights), on a
// thread of its own beside the plan when the tree is folded: it reads the tree only, as the plan's
// stages do until the memory estimate. For a 405B all-linear adapter's 1,764 saved keys it is ~0.3 ms,
// which the plan (~0.3 ms) then hides. Its findings go where the adapter's end, as if it had run
// first; a saved matrix that does not fit (PEFT008) stops the run there, as the synchronous check did:
// what came after is dropped and the settings are as they were.
class SavedWeightsCheck {
 public:
  // False when the check ran here (an unfolded tree) and stops the run: `r` is then final.
  bool start(PreflightResult& r, const LoraAdapter& adapter) {
    started_ = true;
    if (!adapter.weights) return true;
    at_ = r.sink.items().size();
    settings_ = r.settings;
    const ModuleTree& tree = *r.tree;
    auto run = [this, &tree, &adapter] {
      try {
        ok_ = check_saved_adapter_weights(tree, adapter, sink_);
      } catch (...) {
        failure_ = std::current_exception();
      }
    };
    if (tree.folded) {
      try {
        thread_ = std::jthread(run);
        return true;
      } catch (const std::system_error&) {
        // no thread to be had: check it now
      }
    }
    run();
    return finish(r);
  }

  // Joins the check and puts its findings in place; false when it stops the run (`r` is then final).
  // Call before anything changes the tree; again later, it does nothing.
  bool finish(PreflightResult& r) {
    if (!started_ || finished_) return ok_;
    finished_ = true;
    if (thread_.joinable()) thread_.join();
    if (failure_) std::rethrow_exception(failure_);
    auto& items = r.sink.items();
    if (!ok_) {  // (memory and communication come after the last finish())
      items.erase(items.begin() + static_cast<std::ptrdiff_t>(at_), items.end());
      r.settings = std::move(settings_);
      r.plan.reset();
    }
    items.insert(items.begin() + static_cast<std::ptrdiff_t>(at_), std::make_move_iterator(sink_.items().begin()),
                 std::make_move_iterator(sink_.items().end()));
    return ok_;
  }

 private:
  bool started_ = false, finished_ = false, ok_ = true;
  std::size_t at_ = 0;
  FsdpSettings settings_;
  DiagnosticSink sink_;
  std::exception_ptr failure_;
  std::jthread thread_;  // declared last: joined first if finish() was never called
};

// Tensor parallelism splits the attention projections' output rows over tp_size ranks (transformers'
// colwise plan), and the attention reshapes each rank's rows into heads of head_dim at the first
// forward, which no load-time check catches. Real transformers 5.12.1 + torch 2.14.1 with
// tp_plan="auto" on 2 ranks and one key/value head of 10: "RuntimeError: shape '[1, 5, -1, 10]' is
// invalid for input of size 25" (the k_proj shard holds 5 rows; scripts/tp_heads_probe.py).
// Only where the plan cuts the attention projections' rows and leaves them cut: a plan whose q/k/v are
// kept whole (none at all: GPT-2, StableLM) or gathered back (colwise_gather_output: OLMo-2, Phi-3)
// hands the attention whole heads. Unknown plans (PLAN015) keep the check.
bool splits_attention_heads(const ModuleTree& tree) {
  if (!tree.tp_plan) return true;
  for (const Module& m : tree.modules)
    for (const auto& p : m.params) {
      if (p.name != "weight" ||
          !(m.name == "q_proj" || m.name == "k_proj" || m.name == "v_proj" || m.name == "qkv_proj"))
        continue;
      const ModuleTree::TpEntry* e = tp_entry_for(tree, m.path + ".weight");
      if (e && e->style.matrix_dim && !e->style.forward_all_gather) return true;
    }
  return false;
}

void check_tp_heads(const ModelConfig& config, const ModuleTree& tree, const FsdpSettings& s, DiagnosticSink& sink) {
  if (!splits_attention_heads(tree)) return;
  // The model's own head counts, else (a vision-language model, whose plan is its language model's)
  // its text_config's.
  auto integer = [&](const char* a, const char* b) -> std::optional<std::int64_t> {
    for (const char* k : {a, b})
      if (auto n = k ? config.int_field(config.effective_key(k)) : std::nullopt) return n;
    for (const char* k : {a, b})
      if (auto n = k ? config.int_field(std::string("text_config.") + k) : std::nullopt) return n;
    return std::nullopt;
  };
  const auto heads = integer("num_attention_heads", "n_head");
  if (!heads) return;
  const auto kv = integer("num_key_value_heads", nullptr).value_or(*heads);
  const int tp = s.tp_size.value;
  for (auto [what, n] : {std::pair{"num_attention_heads", *heads}, std::pair{"num_key_value_heads", kv}}) {
    if (n % tp == 0) continue;
    sink.report(setting_finding(
        "PLAN021", s.tp_size.source, tree.config_path,
        fmt::format("RuntimeError: shape '[batch, seq, -1, head_dim]' is invalid for input of size N at the first "
                    "forward: {} {} is not divisible by tp_size {}, so a rank's share of the projection rows is not a "
                    "whole number of heads",
                    what, n, tp),
        fmt::format("use a tp_size that divides both num_attention_heads ({}) and num_key_value_heads ({})", *heads,
                    kv)));
    return;
  }
}

// Why the tensor-parallel layout cannot be simulated for this run ("" when it can). The layout is
// transformers 5.12.1's: plain local tensors cut in ceil pieces (integrations/tensor_parallel.py).
// The 4.5x releases placed DTensors cut by floor division and later main returns to DTensors, whose
// FSDP2 sharding (_StridedShard) is another layout.
std::string tp_not_simulated(const ModuleTree& tree, const FsdpSettings& s) {
  if (!tree.tp_plan) return fmt::format("the registry does not describe {}'s tensor-parallel plan", tree.model_type);
  if (tree.peft)
    for (const Module& m : tree.modules) {
      // peft 0.20 gives tensor-parallel plans only to the adapters of colwise and rowwise layers
      // (tuners/lora/model.py _SUPPORTED_TP_PLANS; an embedding's are applied in its forward).
      if (m.cls == "DoraLinearLayer" || m.cls == "ParamWrapper" || m.cls == "ModulesToSaveWrapper")
        return fmt::format("a PEFT model's {} layers under tensor parallelism are not laid out", m.cls);
      if (!m.cls.starts_with("lora.")) continue;
      const ModuleTree::TpEntry* e = tp_module_entry(tree, m.path + ".base_layer");
      if (e && (m.cls == "lora.Embedding" || (e->style.name != "colwise" && e->style.name != "rowwise")))
        return fmt::format("the LoRA adapters of '{}' (a {} layer) under tensor parallelism are not laid out", m.path,
                           e->style.name);
    }
  const Version& tf = s.transformers_version.value;
  if (tf < Version{5, 0, 0} || tf > Version{5, 12, 1})
    return fmt::format(
        "the layout is transformers 5.x's (plain local tensors, checked on 5.12.1) and transformers {} "
        "places tensor-parallel parameters as DTensors",
        tf.str());
  return "";
}

// FSDP2 over tensor-parallel local tensors: every TP rank's tree planned over its data-parallel group
// (accelerate 1.14 fsdp2_prepare_model shards over the mesh's dp_shard_cp dims; transformers 5.12.1's
// TP parameters are plain tensors, so fully_shard sees each rank's pieces as whole parameters). The
// plan and memory kept are the TP rank's with the largest per-rank peak; diagnostics come from TP rank 0.
void plan_tensor_parallel(PreflightResult& r, const MemoryOptions& opts) {
  TensorParallelLayout layout = tensor_parallel_layout(*r.tree, r.settings, r.sink);
  const int tp = layout.tp_size;
  if (layout.split == 0)
    r.sink.report(model_setting_finding(
        "PLAN024", r.settings.tp_size.source, r.tree->config_path,
        fmt::format("tensor parallelism (tp_size {}) splits no parameter of {}: transformers has no tensor-parallel "
                    "plan for it, so every TP rank holds and computes the whole model",
                    tp, r.tree->architecture),
        fmt::format("give the {} processes of each TP group to dp_shard instead (tp_size 1)", tp)));
  // TP ranks whose pieces have the same shapes hold the same plan (every rank, when tp_size divides
  // every split dimension): each distinct set of shapes is planned once.
  std::map<std::vector<std::int64_t>, int> first_with;  // the split sizes of a rank -> the first such rank
  std::optional<ShardPlan> best;
  MemoryEstimate best_memory;
  int best_rank = 0;
  std::vector<TpRankMemory> per_rank;
  std::vector<std::vector<ShardUnit>> unit_sets;  // each distinct TP rank's units
  std::vector<int> unit_set;                      // TP rank -> its set
  for (int t = 0; t < tp; ++t) {
    std::vector<std::int64_t> pieces;
    for (const auto& p : layout.params)
      if (p.dim) pieces.push_back(p.shapes[static_cast<std::size_t>(t)][static_cast<std::size_t>(*p.dim)]);
    if (const auto [it, fresh] = first_with.emplace(std::move(pieces), t); !fresh) {
      TpRankMemory copy = per_rank[static_cast<std::size_t>(it->second)];
      copy.tp_rank = t;
      copy.global_rank += t - it->second;
      per_rank.push_back(copy);
      unit_set.push_back(unit_set[static_cast<std::size_t>(it->second)]);
      continue;
    }
    const ModuleTree local = tp_local_tree(*r.tree, layout, t);
    DiagnosticSink scratch;
    ShardPlan plan = plan_fsdp2(local, r.settings, t == 0 ? r.sink : scratch);
    plan.tp_rank = t;
    plan.tensor_parallel = layout;  // the estimate cuts this TP rank's activations by it
    MemoryEstimate memory = estimate_memory(plan, local, r.settings, opts);
    const RankMemory& peak = memory.ranks[static_cast<std::size_t>(memory.peak_rank)];
    // The tp index varies fastest on the mesh: TP rank t of rank 0's shard-group member k is that
    // member's global rank + t.
    const int global = plan.shard_peers.at(static_cast<std::size_t>(peak.rank)) + t;
    per_rank.push_back({t, global, peak});
    unit_set.push_back(static_cast<int>(unit_sets.size()));
    unit_sets.push_back(plan.units);
    if (!best || memory.peak > best_memory.peak) {
      best = std::move(plan);
      best_memory = std::move(memory);
      best_rank = global;
    }
  }
  best_memory.peak_mesh_rank = best_rank;
  best->tensor_parallel = std::move(layout);
  best->tp_unit_sets = std::move(unit_sets);
  best->tp_unit_set = std::move(unit_set);
  best_memory.tp_ranks = std::move(per_rank);
  r.plan = std::move(best);
  r.memory = std::move(best_memory);
}

// Who prepares a PEFT model. Most LoRA runs go through transformers' Trainer (TRL's trainers subclass
// it), so that is the default. Under FSDP1 the Trainer replaces accelerate's policy with peft's
// whatever the config says (trainer.py _prepare_for_training -> integrations/fsdp.py
// update_fsdp_plugin_peft, transformers 5.12.1); under FSDP2 it never calls it (delay_optimizer_creation
// is off), so accelerate's own policy stays.
// For a bitsandbytes model with a floating bnb_4bit_quant_storage the same function also makes that
// dtype the mixed precision (set_mixed_precision(quant_storage, override=True)).
void apply_peft_caller(FsdpSettings& s, const std::optional<Bnb4bitConfig>& bnb) {
  if (s.trainer.source == "default") s.trainer = {true, "default (a PEFT adapter: transformers Trainer)"};
  if (!s.trainer.value || s.fsdp_version.value != 1) return;
  s.policy = {WrapPolicyKind::peft, "transformers Trainer with a PEFT model (update_fsdp_plugin_peft)"};
  if (bnb && dtype_is_floating(bnb->quant_storage)) {
    const DType q = bnb->quant_storage;
    s.mixed_precision = {q == DType::BF16  ? MixedPrecision::bf16
                         : q == DType::F16 ? MixedPrecision::fp16
                                           : MixedPrecision::fp32,
                         "transformers Trainer: bnb_4bit_quant_storage (update_fsdp_plugin_peft)"};
  }
}

// Context parallelism's failures that depend on the model and the sequence (FSDP2, cp_size > 1).
// accelerate's activation checkpointing (fsdp_activation_checkpointing: FSDP1's checkpoint_wrapper on
// each block, FSDP2's fsdp2_apply_ac on each block's children) with the model's KV cache on: the
// recomputed attention appends its keys and values to the cache a second time, and
// torch.utils.checkpoint raises CheckpointError at the first backward (real torch 2.14.1 +
// transformers 5.12.1 steps, FSDP1 and FSDP2: fixtures/oracle2/peak/*-cache.json). The Trainer sets
// config.use_cache from TrainingArguments.use_cache (false by default, trainer.py); transformers' own
// gradient_checkpointing turns it off; a plain loop keeps config.json's use_cache (true by default).
void check_cache_with_checkpointing(const ModelConfig& config, const FsdpSettings& s, const MemoryOptions& opts,
                                    DiagnosticSink& sink) {
  if (!s.activation_checkpointing.value || checkpointing_by_transformers(s, opts) ||
      training_loop(opts, s) != TrainingLoop::accelerate)
    return;
  if (config.bool_field("use_cache").value_or(true) == false) return;
  std::string from;
  SourceLocation where = setting_location(s.activation_checkpointing.source, config.path, &from);
  sink.report(finding(
      "PLAN034", std::move(where),
      fmt::format("activation checkpointing{} with the model's KV cache on (config.json use_cache: {}): in a loop that "
                  "calls model(...) without use_cache=False, the recomputed attention appends to the cache again and "
                  "the first backward raises torch.utils.checkpoint.CheckpointError (\"Recomputed values for the "
                  "following tensors have different metadata than during the forward pass\")",
                  from, config.bool_field("use_cache") ? "true" : "absent, so true"),
      "pass use_cache=False in the forward call, or set model.config.use_cache = False before training (the "
      "Trainer does so by itself)"));
}

void check_context_parallel(const ModuleTree& tree, const FsdpSettings& s, const MemoryOptions& opts,
                            DiagnosticSink& sink) {
  const int cp = s.context_parallel();
  if (cp <= 1) return;
  if (!tree.attn_implementation.empty() && tree.attn_implementation != "sdpa")
    sink.report(model_setting_finding(
        "PLAN026", s.cp_size.source, tree.config_path,
        fmt::format("ValueError: Context parallelism is supported only with SDPA attention, you are using {}. "
                    "(transformers Trainer; without it each of the {} CP ranks attends within its own piece of "
                    "the sequence)",
                    tree.attn_implementation, cp),
        "load the model with attn_implementation=\"sdpa\" (--attn-implementation sdpa)"));
  // accelerate 1.14.0 utils/dataclasses.py TorchContextParallelConfig.__post_init__
  // (BETA_CP_AVAILABLE_PYTORCH_VERSION).
  if (s.torch_version.value < Version{2, 6, 0})
    sink.report(model_setting_finding(
        "PLAN029", s.cp_size.source, tree.config_path,
        fmt::format("ValueError: FSDP2-based Context parallelism is only available in PyTorch 2.6.0 and later "
                    "versions. Please upgrade your PyTorch version. (torch {} from {})",
                    s.torch_version.value.str(), s.torch_version.source),
        "install torch 2.6.0 or later, or drop cp_size"));
  // accelerate 1.14.0 big_modeling.py _attach_context_parallel_hooks: every `*self_attn` module gets
  // attention_mask=None, is_causal=True, so sliding-window layers attend to the whole context.
  const auto masked = tree.activations.find("mask_layers");
  const auto from = tree.activations.find("mask_from_tokens");
  if (masked != tree.activations.end() && masked->second > 0 &&
      // (a sequence no longer than the window: the sliding mask is the causal one, nothing changes)
      (!opts.seq_len || from == tree.activations.end() || *opts.seq_len > from->second))
    sink.report(model_setting_finding(
        "PLAN032", s.cp_size.source, tree.config_path,
        fmt::format("context parallelism drops the attention mask of every layer: {} sliding-window layer(s) of {} "
                    "attend to the whole causal context instead of their window{}",
                    masked->second, tree.architecture,
                    from != tree.activations.end() ? fmt::format(" of {} tokens", from->second) : std::string()),
        "train without cp_size, or accept full attention in those layers (it changes the model)"));
  if (!opts.seq_len) return;
  const std::int64_t n = *opts.seq_len;
  if (n % cp != 0) {
    const std::int64_t piece = chunk_size(n, cp);
    Diagnostic d = model_setting_finding(
        "PLAN027", s.cp_size.source, tree.config_path,
        fmt::format("a sequence of {} tokens over cp_size {} splits into pieces of {} and {} tokens, and ring "
                    "attention exchanges keys and values as if every piece were the same size{}",
                    fmt::group_digits(n), cp, fmt::group_digits(piece), fmt::group_digits(chunk_real(n, piece, cp - 1)),
                    opts.seq_len_is_cap ? " (the training arguments' max_length: batches padded to their own longest "
                                          "sequence have other lengths)"
                                        : ""),
        fmt::format("pad or pack sequences to a multiple of {} (2 x cp_size)", 2 * cp));
    // A cap says nothing certain about the batches' lengths: a warning then.
    sink.report(opts.seq_len_is_cap ? milder(std::move(d), Severity::warning) : std::move(d));
  } else if (n % (std::int64_t{2} * cp) != 0) {
    sink.report(model_setting_finding(
        "PLAN028", s.cp_size.source, tree.config_path,
        fmt::format("a sequence of {} tokens is not a multiple of 2 x cp_size ({}): torch turns context parallelism's "
                    "load balancing off, and the last of the {} CP ranks does {} times the causal attention work of "
                    "the first",
                    fmt::group_digits(n), 2 * cp, cp, 2 * cp - 1),
        fmt::format("pad or pack sequences to a multiple of {}", 2 * cp)));
  }
}

// LoRA on layers transformers split for tensor parallelism (peft tuners/lora/model.py
// _create_and_replace): a layer whose base_layer carries a TP plan.
void check_lora_under_tp(const ModuleTree& tree, const FsdpSettings& s, const StackVersions& versions,
                         DiagnosticSink& sink) {
  std::string split;
  for (const Module& m : tree.modules)
    if (m.cls.starts_with("lora.") && tp_module_entry(tree, m.path + ".base_layer")) {
      split = m.path;
      break;
    }
  if (split.empty()) return;  // no adapter on a split layer: peft neither checks nor needs anything
  // transformers 5.12.1 rewrites a split layer's in_features/out_features once per parameter it cuts
  // (integrations/tensor_parallel.py update_module_attributes, called for weight and bias alike), so a
  // layer with a bias ends at a quarter of its size for tp 2 while its weight holds half; peft builds
  // the adapters from those attributes, and the first forward fails (fixtures/oracle2/tp/lora-ranks-*-*:
  // GPT-NeoX query_key_value and dense, Qwen2 q_proj).
  const Version& tf_version = s.transformers_version.value;
  if (tf_version >= Version{5, 0, 0} && tf_version <= Version{5, 12, 1})
    for (const Module& m : tree.modules) {
      if (!m.cls.starts_with("lora.") || m.children.empty()) continue;
      const Module& base = tree.modules[static_cast<std::size_t>(m.children.front())];
      const ModuleTree::TpEntry* e = tp_module_entry(tree, base.path);
      const bool biased = std::any_of(base.params.begin(), base.params.end(),
                                      [](const ParamInfo& p) { return p.name == "bias" && !p.buffer; });
      if (!e || !biased || (e->style.name != "colwise" && e->style.name != "rowwise")) continue;
      const bool colwise = e->style.name == "colwise";
      sink.report(model_setting_finding(
          "PLAN033", s.tp_size.source, tree.config_path,
          fmt::format("RuntimeError at the first forward: LoRA on '{}', a {} layer with a bias: transformers {} cuts "
                      "its {} once for the weight and again for the bias, and peft builds the adapter's {} from "
                      "that attribute, so the adapter's output does not match the layer's",
                      m.path, e->style.name, tf_version.str(), colwise ? "out_features" : "in_features",
                      colwise ? "lora_B rows" : "lora_A columns"),
          "target only the split layers without a bias, or train the adapter without tp_size"));
      break;  // one finding: every such layer fails the same way
    }
  const bool old_peft = versions.peft && versions.peft->value < Version{0, 19, 0};
  if (old_peft) {
    // peft 0.19.0 (#3079 "LoRA support for Transformers TP") gave the adapters of tensor-parallel layers
    // their own plans; before it they get none, and nothing says so (fixtures/oracle2/tp/lora-ranks-*.json:
    // with peft 0.18.1 a rowwise layer's adapter adds an unreduced partial sum, so the TP ranks' logits
    // differ, and a colwise layer's lora_A gets a different gradient on every rank).
    sink.report(model_setting_finding(
        "PLAN031", versions.peft->source, tree.config_path,
        fmt::format("peft {} gives the LoRA adapters of tensor-parallel layers ({}, ...) no tensor-parallel plan: "
                    "their outputs and gradients are not reduced across the {} TP ranks, which then train different "
                    "models without an error",
                    versions.peft->value.str(), split, s.tp_size.value),
        "install peft 0.19.0 or later, or train the adapter without tp_size"));
    return;
  }
  const Version& tf = s.transformers_version.value;
  if (tf >= Version{5, 0, 0} && tf < Version{5, 4, 0})
    // peft 0.19+ refuses before it builds the adapter (is_transformers_ge_v5_4_0).
    sink.report(model_setting_finding(
        "PLAN030", s.tp_size.source, tree.config_path,
        fmt::format("RuntimeError: The base model is tensor-parallel sharded but the installed version of "
                    "Transformers does not support LoRA with Tensor Parallelism. Please upgrade to transformers >= "
                    "5.4.0. (transformers {} from {}; LoRA on {})",
                    tf.str(), s.transformers_version.source, split),
        "install transformers 5.4.0 or later, or train the adapter without tp_size"));
}

}  // namespace

// What the recipe asks for that the estimate does not count: an optimizer rules/optimizers.yaml does
// not list (FIT002), a training argument that changes a step's memory (FIT003). Never silence.
void report_recipe_gaps(const PreflightRequest& req, PreflightResult& r) {
  if (!req.memory.optimizer.known)
    r.sink.report(finding("FIT002", req.training_args ? in_file(req.training_args->path) : in_file(r.tree->config_path),
                          fmt::format("optim {} is not modelled (rules/optimizers.yaml lists the optimizers shardcheck "
                                      "counts): its states are counted as adamw_torch's and the fit is not estimated",
                                      req.memory.optimizer.name)));
  if (!req.training_args) return;
  for (const auto& [key, source] : req.training_args->unmodelled)
    r.sink.report(finding("FIT003", setting_location(source, req.training_args->path, nullptr),
                          fmt::format("{} changes what a training step holds and is not modelled: the peak below "
                                      "leaves it out",
                                      key)));
}

PreflightResult run_preflight(const PreflightRequest& req) {
  PreflightResult r;
  r.settings = req.defaults;
  // The release set first: linting, wrapping and the module layout all depend on it.
  const auto version_rules = VersionRules::load(req.rules_dir, r.sink);
  if (!version_rules) return r;
  const StackVersions versions = resolve_stack_versions(req.versions, *version_rules);
  r.settings.torch_version = versions.torch;
  r.settings.accelerate_version = versions.accelerate;
  r.settings.transformers_version = versions.transformers;
  ResolveOptions resolve = req.resolve;
  resolve.transformers = versions.transformers.value;
  // TRL's ModelConfig in the training-arguments file: under every flag and --adapter.
  std::optional<LoraAdapter>& adapter = r.adapter;  // the result keeps it (the CLI frees nothing at exit)
  adapter = req.adapter;
  if (req.training_args) {
    const std::size_t errors_before_trl = r.sink.count(Severity::error);
    TrlRun trl = resolve_trl_run(*req.training_args, versions.trl, resolve.load_dtype, r.sink);
    if (r.sink.count(Severity::error) > errors_before_trl) return r;
    if (trl.load_dtype) resolve.load_dtype = trl.load_dtype->value;
    if (!resolve.bnb_4bit) resolve.bnb_4bit = trl.bnb_4bit;
    if (resolve.bnb_4bit && req.bnb_4bit_overrides) req.bnb_4bit_overrides(*resolve.bnb_4bit);
    if (!adapter && req.adapter_path.empty()) adapter = std::move(trl.adapter);
  }

  // Accelerate config: lint it (check), and read the settings accelerate launch would export. When
  // the file has fixable errors (the seed's lost indentation), the plan is computed from the fixed
  // text, so the user sees both what is wrong and the shard tree the corrected file gives.
  if (req.accelerate_config) {
    r.config_doc = load_config_doc(*req.accelerate_config, r.sink);
    auto schema = AccelerateSchema::load(req.rules_dir, r.sink);
    if (!r.config_doc || !schema) return r;  // unreadable or unparsable: planning on defaults would mislead
    {
      LintOptions lo;
      lo.accelerate = r.settings.accelerate_version.value;
      lo.torch = r.settings.torch_version.value;
      lo.audit_env = !req.env.empty();
      lo.env = req.env;
      DiagnosticSink lint_sink;
      lint_document(*r.config_doc, *schema, lo, lint_sink);
      const ConfigDoc* effective = &*r.config_doc;
      std::optional<ConfigDoc> fixed;
      bool fixable_errors = false;
      for (const auto& d : lint_sink.items())
        fixable_errors = fixable_errors || (d.severity == Severity::error && !d.fix.empty());
      if (fixable_errors) {
        DiagnosticSink ignore;
        std::string text = fix_to_fixpoint(r.config_doc->text, r.config_doc->path, *schema, lo);
        // Sources then read "<file> (fixed):LINE": line numbers of the fixed text, not the original.
        fixed = parse_config_doc(std::move(text), r.config_doc->path + std::string(kFixedConfigSuffix), ignore);
        if (fixed) {
          effective = &*fixed;
          r.planned_config_note = fmt::format(
              "{} has errors; the plan below uses it with shardcheck's fixes applied "
              "(`shardcheck lint --fix`)",
              r.config_doc->path);
        }
      }
      if (req.lint) r.sink.append(lint_sink);
      apply_accelerate_config(*effective, *schema, req.env, r.settings);
    }
  }
  if (req.overrides) req.overrides(r.settings);
  // One check of the merged settings; nothing unchecked reaches the simulator.
  if (!validate_settings(r.settings, req.accelerate_config.value_or(req.model), r.sink)) return r;
  // Regexes from the file, the environment or a flag: a bad one is Python's re.error at launch.
  for (const Setting<std::string>* rx : {&r.settings.frozen, &r.settings.ignored_modules}) {
    if (rx->value.empty()) continue;
    try {
      std::regex check(rx->value);
    } catch (const std::regex_error& e) {
      r.sink.report(setting_finding("PLAN016", rx->source, req.accelerate_config.value_or(req.model),
                                    fmt::format("expected a regular expression, found '{}' ({})", rx->value, e.what()),
                                    ""));
      return r;
    }
  }

  std::string model = req.model, adapter_path = req.adapter_path;
  const std::size_t errors_before_adapter = r.sink.count(Severity::error);
  if (!adapter) split_adapter_model(model, adapter_path, r.sink);
  if (r.sink.count(Severity::error) > errors_before_adapter) return r;
  // The adapter's files (adapter_config.json with, for all-linear, every module's name, and the
  // header of adapter_model.safetensors: ~1 ms for a 405B model's) and rules/peft.yaml (yaml-cpp,
  // ~0.7 ms over its 4 KB) are read on the checkpoint's reading thread once the headers are read
  // (ModelLoad::begin says why there), while this thread still expands the registry tree. On a thread
  // of their own from the start they took the core this thread needed: bench_plan's ratio for the 405B
  // all-linear adapter went from 1.25-1.32 to 1.20-1.22 (4 pairs of 41 runs). When no load starts (no
  // config.json) they are read here. Their findings keep their places: the adapter's before the
  // model's, the rules' after.
  const bool peft = adapter.has_value() || !adapter_path.empty();
  std::optional<PeftRules> peft_rules;
  DiagnosticSink adapter_sink, peft_rules_sink;
  std::exception_ptr peft_failure;  // rethrown here, as a call on this thread would have thrown
  bool peft_read = false;           // set by the reading; joined (or run here) before it is read
  // A model or an adapter from the Hub is fetched over the network: there the two are read at once,
  // as before, each on its own thread.
  std::error_code ec;
  const bool remote =
      !std::filesystem::exists(model, ec) || (!adapter_path.empty() && !std::filesystem::exists(adapter_path, ec));
  auto read_peft = [&]() noexcept {
    peft_read = true;
    try {
      if (!adapter_path.empty()) {
        util::StageTimer read_adapter("peft: read adapter");
        adapter = load_adapter_config(adapter_path, adapter_sink);
        if (!adapter) return;
      }
      peft_rules = PeftRules::load(req.rules_dir, peft_rules_sink);
    } catch (...) {
      peft_failure = std::current_exception();
    }
  };
  DiagnosticSink model_sink;
  std::jthread peft_reader;
  if (peft && remote) peft_reader = std::jthread(read_peft);
  LoadedTree loaded = load_module_tree(model, req.config_only, req.rules_dir, resolve, model_sink,
                                       peft && !remote ? std::function<void()>(read_peft) : std::function<void()>());
  if (peft_reader.joinable()) peft_reader.join();
  if (peft && !peft_read) read_peft();  // the model was not found: nothing ran it
  if (peft_failure) std::rethrow_exception(peft_failure);
  r.sink.append(adapter_sink);
  if (peft && !adapter) return r;  // an unreadable adapter: nothing of the model is reported
  if (adapter) adapter->prepare_kbit = adapter->prepare_kbit || req.prepare_kbit;
  r.sink.append(model_sink);
  r.tree = std::move(loaded.tree);
  if (!r.tree) return r;
  // The saved adapter weights are checked beside the plan (SavedWeightsCheck); their findings take
  // their place after the adapter's, and a saved matrix that does not fit stops the run there.
  SavedWeightsCheck saved_weights;
  if (adapter) {
    r.sink.append(peft_rules_sink);
    if (!peft_rules) return r;
    // Folded only where every later stage reads a folded tree exactly: FSDP1 (TP and CP are FSDP2's),
    // no activation estimate (it walks the blocks), no --frozen regex (it names instances).
    const bool fold = req.fold_repeats && r.settings.fsdp_version.value == 1 && !req.memory.seq_len &&
                      r.settings.frozen.value.empty();
    if (!build_peft_model(*r.tree, *adapter, *peft_rules, r.sink, fold)) return r;
    if (!saved_weights.start(r, *adapter)) return r;
    apply_peft_caller(r.settings, r.tree->bnb_4bit);
    if (r.tree->quantized_4bit())
      check_qlora_versions(versions, *peft_rules, req.accelerate_config.value_or(r.tree->config_path), r.sink);
  }
  check_stack_versions(versions, *version_rules, r.tree->model_type, r.tree->since,
                       r.settings.fsdp_version.value == 2 && r.settings.fsdp2_caller.value == Fsdp2Caller::transformers,
                       r.tree->config_path, r.sink);

  util::StageTimer timer("plan: wrap classes");
  const std::size_t errors_before = r.sink.count(Severity::error);
  resolve_wrap_classes(*r.tree, r.settings, r.sink);
  timer.lap("plan: simulate");
  const bool wrap_failed = r.sink.count(Severity::error) > errors_before;  // accelerate would stop here
  const bool tp = r.settings.fsdp_version.value == 2 && r.settings.mesh_size("tp") > 1;
  // Expert parallelism: the model's tp_plan property returns the EP plan instead (modeling_utils.py
  // PreTrainedModel.tp_plan, transformers 5.12.1), empty for an architecture without one.
  if (tp && r.settings.expert_parallel.value) r.tree->tp_plan = r.tree->ep_plan;
  const std::string tp_gap = tp ? tp_not_simulated(*r.tree, r.settings) : "";
  if (tp && tp_gap.empty()) {
    plan_tensor_parallel(r, req.memory);
  } else if (r.tree->folded) {
    // The folded plan stands where it is exact; else the tree is materialised and planned again.
    DiagnosticSink folded_sink;
    r.plan = plan_fsdp1(*r.tree, r.settings, folded_sink);
    if (folded_plan_exact(*r.tree, r.settings, *r.plan)) {
      r.sink.append(folded_sink);
    } else {
      if (!saved_weights.finish(r)) return r;  // it reads the tree that is about to change
      expand_repeated_blocks(*r.tree);
      r.plan = plan_fsdp1(*r.tree, r.settings, r.sink);
    }
  } else {
    r.plan = r.settings.fsdp_version.value == 2 ? plan_fsdp2(*r.tree, r.settings, r.sink)
                                                : plan_fsdp1(*r.tree, r.settings, r.sink);
  }
  if (!wrap_failed) check_plan_coverage(*r.tree, r.settings, *r.plan, r.sink);
  if (r.tree->peft && !wrap_failed) check_peft_plan(*r.tree, r.settings, *r.plan, r.sink);
  if (tp && loaded.inputs) check_tp_heads(loaded.inputs->config, *r.tree, r.settings, r.sink);
  check_context_parallel(*r.tree, r.settings, req.memory, r.sink);
  if (loaded.inputs) check_cache_with_checkpointing(loaded.inputs->config, r.settings, req.memory, r.sink);
  if (tp && r.tree->peft) check_lora_under_tp(*r.tree, r.settings, versions, r.sink);
  if (!tp_gap.empty()) {
    // What shardcheck cannot lay out it says so rather than guess.
    std::string from;
    SourceLocation where = setting_location(r.settings.tp_size.source, r.tree->config_path, &from);
    r.sink.report(
        finding("PLAN015", std::move(where),
                fmt::format("tensor parallelism (tp_size {}{}) is not simulated: {}; the shards below are "
                            "over {} ranks of whole parameters, and with TP each rank holds about 1/{} of "
                            "those elements",
                            r.settings.tp_size.value, from, tp_gap, r.plan->shard_group, r.settings.tp_size.value)));
  }
  if (!saved_weights.finish(r)) return r;
  timer.lap("plan: memory and communication");
  if (!r.plan->tensor_parallel) r.memory = estimate_memory(*r.plan, *r.tree, r.settings, req.memory);
  r.comm = communication(*r.plan, req.bus_bandwidth, req.inter_node_bandwidth);
  if (r.plan->tensor_parallel)
    r.comm.tensor_parallel =
        tensor_parallel_traffic(*r.plan, *r.tree, r.settings, req.memory, req.bus_bandwidth, req.inter_node_bandwidth);
  if (r.settings.context_parallel() > 1)
    r.comm.context_parallel =
        context_parallel_traffic(*r.plan, *r.tree, r.settings, req.memory, req.bus_bandwidth, req.inter_node_bandwidth);
  // A job that fails before training gets no fit verdict: the numbers are what FSDP would hold once
  // the errors above are fixed.
  for (const auto& d : r.sink.items())
    if (d.severity == Severity::error) {
      r.memory.verdict = FitVerdict::withheld;
      // An unknown model or adapter layout, a config.json without its fields, a checkpoint that
      // disagrees: shardcheck cannot lay out this model; anything else: torch or accelerate stops it.
      const bool undescribed = d.exit_code == ExitCode::unknown_model || d.exit_code == ExitCode::bad_model_config ||
                               d.exit_code == ExitCode::model_mismatch;
      r.memory.verdict_reason = fmt::format(
          "{} ({}: {})",
          undescribed ? "shardcheck cannot lay out this model as the job builds it" : "the job fails before training",
          d.code, d.message.substr(0, d.message.find(" (")));
      return r;
    }
  report_recipe_gaps(req, r);
  if (r.memory.verdict == FitVerdict::may_not_fit)
    r.sink.report(finding(
        "FIT004", in_file(r.tree->config_path),
        fmt::format("the step's peak is {} ({} at rank {}); with the margin of {} for the CUDA context, NCCL and the "
                    "allocator that is more than a GPU's {}, so the job may run out of memory",
                    human_bytes(r.memory.peak), r.memory.step.peak.name, r.memory.step.rank,
                    human_bytes(r.memory.margin), human_bytes(r.memory.gpu_memory))));
  if (r.memory.verdict == FitVerdict::does_not_fit) {
    // At config.json, a file for SARIF and annotations (req.model may be a directory).
    Diagnostic d = finding(
        "FIT001", in_file(r.tree->config_path),
        r.memory.step.available
            ? fmt::format("the plan needs {} ({} bytes) per GPU on rank {} at its peak, {}, but a GPU has {}",
                          human_bytes(r.memory.peak), r.memory.peak,
                          r.memory.peak_mesh_rank.value_or(r.memory.peak_rank), r.memory.step.peak.name,
                          human_bytes(r.memory.gpu_memory))
            : fmt::format("the plan needs {} ({} bytes) per GPU on rank {} but a GPU has {} (params, grads and "
                          "optimizer states sharded; the largest unsharded units resident; {})",
                          human_bytes(r.memory.peak), r.memory.peak,
                          r.memory.peak_mesh_rank.value_or(r.memory.peak_rank), human_bytes(r.memory.gpu_memory),
                          r.memory.activations.available ? "activations estimated" : "activations not counted"));
    // Only the remedies that are not already on.
    std::vector<std::string> fixes{"more GPUs (num_processes)"};
    if (!r.settings.offload_params.value) fixes.emplace_back("fsdp_offload_params: true");
    // Under FSDP2 accelerate upcasts trainable low-precision parameters to float32 with mixed precision
    // (fsdp_utils.py fsdp2_prepare_model, 1.14): it helps only where the parameters are float32 already.
    if (!r.settings.param_dtype() &&
        (r.plan->fsdp_version == 1 || r.plan->units.empty() || r.plan->units.back().dtype == DType::F32))
      fixes.emplace_back("mixed_precision: bf16");
    if (r.memory.activations.available && !r.settings.activation_checkpointing.value)
      fixes.emplace_back("fsdp_activation_checkpointing: true");
    if (r.memory.activations.available) fixes.emplace_back("a smaller --micro-batch or --seq-len");
    if (r.plan->fsdp_version == 1 && r.plan->strategy == ShardingStrategy::shard_grad_op)
      fixes.emplace_back("fsdp_sharding_strategy: FULL_SHARD");
    std::string list;
    for (std::size_t i = 0; i < fixes.size(); ++i)
      list += (i == 0 ? "" : i + 1 == fixes.size() ? ", or " : ", ") + fixes[i];
    d.help = fmt::format("use {}; a larger --gpu-memory only if the GPU really has it", list);
    r.sink.report(std::move(d));
  }
  return r;
}

}  // namespace shardcheck
