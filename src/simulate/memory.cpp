// Per-rank memory of a shard plan. Persistent terms are exact byte counts of the tensors FSDP
// keeps (FSDP1 flat_param.py `_local_shard`/`_saved_grad_shard`; FSDP2 _fsdp_param.py
// `_sharded_param_data`); optimizer states follow what the optimizer is given (the FlatParameter
// with its padding when use_orig_params=False, the unpadded local shards otherwise). The transient
// term replays the unshard/reshard order of fsdp-semantics.md §3.3 (FSDP1) and §5.8 (FSDP2) and is
// a lower bound: it ignores allocator fragmentation and activations.
#include <fmt/format.h>

#include <algorithm>

#include "shardcheck/memory.hpp"
#include "shardcheck/repeated_blocks.hpp"
#include "shardcheck/tensor_parallel.hpp"
#include "shardcheck/text.hpp"
#include "unit_bytes.hpp"

namespace shardcheck {
namespace {

using unit_bytes::grad_temps;
using unit_bytes::is_root;
using unit_bytes::unsharded;

std::uint64_t bytes(std::int64_t numel, DType d) { return unit_bytes::of(numel, d); }

struct Dtypes {
  DType p, c, r;  // master, compute (all-gather), reduce
};

Dtypes dtypes_of(const ShardUnit& u) { return {u.dtype, u.compute_dtype, u.reduce_dtype}; }

// Real (non-padding) elements of a FlatParameter's trainable parameters that fall in rank r's slice
// [r*S, (r+1)*S): with use_orig_params=True each original parameter is a view of that part, and only
// parameters with a gradient get optimizer states -- every trainable one of a unit that gets a flat
// gradient, reached by the forward or not: its .grad is a view of the flat gradient (torch 2.14.1
// oracle, llava-fsdp1-tfcls-orig-w4: the unreached post_layernorm in the root unit has states).
std::int64_t trainable_in_rank(const ShardUnit& u, int r) {
  const std::int64_t lo = static_cast<std::int64_t>(r) * u.shard_numel, hi = lo + u.shard_numel;
  std::int64_t n = 0;
  for (const auto& slot : u.layout) {
    if (slot.padding || !slot.requires_grad) continue;
    n += std::max<std::int64_t>(0, std::min(hi, slot.offset + slot.numel) - std::max(lo, slot.offset));
  }
  return n;
}

// FSDP2: the unpadded local rows of one parameter on rank r (zeros_like(DTensor) for Adam).
std::int64_t real_rows_numel(const ParamShard& ps, int r) {
  const std::int64_t d0 = ps.shape.empty() ? 1 : ps.shape.front();
  return chunk_real(d0, ps.rows_per_rank, r) * ps.row_numel;
}

// Elements of a unit's trainable parameters (NO_SHARD keeps every original whole).
std::int64_t trainable_numel(const ShardUnit& u) {
  std::int64_t n = 0;
  for (const auto& slot : u.layout)
    if (!slot.padding && slot.requires_grad) n += slot.numel;
  return n;
}

std::uint64_t buffer_bytes(const ModuleTree& tree) {
  std::uint64_t b = 0;
  // Every instance of a module of a folded tree holds its buffers.
  const std::vector<std::int64_t> mult = tree.folded ? module_multiplicity(tree) : std::vector<std::int64_t>();
  for (std::size_t i = 0; i < tree.modules.size(); ++i)
    for (const auto& p : tree.modules[i].params)
      if (p.buffer) b += static_cast<std::uint64_t>(mult.empty() ? 1 : mult[i]) * bytes(p.numel, p.dtype);
  return b;
}

struct Transient {
  std::uint64_t bytes = 0;
  std::string note;
};

Transient transient_peak(const ShardPlan& plan, const FsdpSettings& s) {
  // Units that stay unsharded from their forward to their post-backward: the FSDP1 root, FSDP1
  // SHARD_GRAD_OP/ZERO2 units, FSDP2 groups with reshard_after_forward=False.
  std::uint64_t kept = 0;
  std::vector<std::uint64_t> flowing, grads, unsharded_grad;
  const BackwardPrefetch prefetch = plan.fsdp_version == 2 ? BackwardPrefetch::pre : s.backward_prefetch.value;
  // Labelled only for the one the note names: the unit and, in a folded plan, which instance.
  std::vector<std::pair<const ShardUnit*, std::int64_t>> flowing_units;
  const bool zero2 =
      plan.strategy == ShardingStrategy::shard_grad_op || plan.strategy == ShardingStrategy::hybrid_shard_zero2;
  plan.for_each_in_order([&](const ShardUnit& u, std::int64_t instance) {
    const std::uint64_t g = unsharded(plan, u);
    const bool stays = plan.fsdp_version == 1 ? (is_root(u) || zero2) : !u.reshard_after_forward.value_or(true);
    if (stays) {
      kept += g;
      return;
    }
    flowing.push_back(g);
    grads.push_back(grad_temps(plan, u));
    unsharded_grad.push_back(u.gets_grad && !u.params.empty() ? bytes(u.numel, dtypes_of(u).c) : 0);
    flowing_units.emplace_back(&u, instance);
  });
  const auto label = [&](std::size_t at) {
    const auto [u, instance] = flowing_units[at];
    return module_label(instance == 0 ? u->path : unit_instance_path(*u, instance));
  };
  // Forward: the rate limiter (_limiter_utils.py, 2 in flight) and FSDP2's one-ahead prefetch keep
  // at most the current and the next unit unsharded.
  std::uint64_t fwd = 0, bwd = 0;
  std::size_t fwd_at = 0, bwd_at = 0;
  for (std::size_t i = 0; i < flowing.size(); ++i) {
    const std::uint64_t pair = flowing[i] + (i + 1 < flowing.size() ? flowing[i + 1] : 0);
    if (pair > fwd) {
      fwd = pair;
      fwd_at = i;
    }
    // Backward, reverse order (fsdp-semantics.md §3.3). BACKWARD_PRE (and FSDP2's implicit
    // one-ahead prefetch): the unit computing, the previous unit already prefetched, its grad
    // temporaries. BACKWARD_POST: the next all-gather is issued in the post-backward, after this
    // unit's parameters are freed. None: no overlap at all.
    const std::uint64_t previous = i > 0 ? flowing[i - 1] : 0;
    std::uint64_t b = 0;
    switch (prefetch) {
      case BackwardPrefetch::pre:
        b = flowing[i] + previous + grads[i];
        break;
      case BackwardPrefetch::post:
        b = std::max(flowing[i] + unsharded_grad[i], grads[i] + previous);
        break;
      case BackwardPrefetch::none:
        b = flowing[i] + grads[i];
        break;
    }
    if (b > bwd) {
      bwd = b;
      bwd_at = i;
    }
  }
  Transient t;
  t.bytes = kept + std::max(fwd, bwd);
  if (!flowing.empty())
    t.note = fwd >= bwd ? fmt::format("forward all-gathers of {} and the next unit", label(fwd_at))
                        : fmt::format("backward of {} (unsharded params{}, gradient buffers)", label(bwd_at),
                                      prefetch == BackwardPrefetch::none ? "" : ", prefetch");
  if (kept)
    t.note += fmt::format("{}{} bytes stay unsharded through the step (root / kept groups)", t.note.empty() ? "" : "; ",
                          kept);
  // No unit all-gathered and none kept (NO_SHARD in the parameters' own dtype): say so, never print nothing.
  if (t.note.empty()) t.note = "no unsharded parameter buffers";
  return t;
}

// The dtype saved activations have: the mixed-precision param_dtype, else the dtype most
// parameters compute in (8-bit and smaller storage formats such as FP8 weights compute in bf16).
DType activation_dtype(const ShardPlan& plan, const FsdpSettings& s) {
  if (auto d = s.param_dtype()) return *d;
  std::int64_t best = -1;
  DType dt = DType::BF16;
  for (const auto& u : plan.units)
    if (!u.params.empty() && u.numel > best) {
      best = u.numel;
      dt = u.dtype;
    }
  return dtype_bits(dt) <= 8 ? DType::BF16 : dt;
}

// nccl-tests (src/all_gather.cu, reduce_scatter.cu, all_reduce.cu busbw factors): the time a
// collective of `size` bytes over n ranks takes at a measured bus bandwidth; factor 1 for all-gather
// and reduce-scatter, 2 for all-reduce.
double ring_seconds(std::uint64_t size, int n, double factor, std::optional<double> bus_bandwidth) {
  if (!bus_bandwidth || *bus_bandwidth <= 0 || n <= 1) return 0.0;
  return static_cast<double>(size) * factor * (n - 1) / n / *bus_bandwidth;
}

// The tokens one rank's forward sees per micro-batch: the whole sequence, or under context
// parallelism its torch.chunk piece (the largest, ceil(seq_len / cp)). Needs seq_len and micro_batch.
std::int64_t rank_tokens(const FsdpSettings& s, const MemoryOptions& opts) {
  return chunk_size(*opts.seq_len, s.context_parallel()) * opts.rows();
}

// What eager attention changes in one block, for one TP rank: per token at the compute dtype and in
// float32 (beside the SDPA model), and the heads whose seq x seq tensors it keeps.
struct EagerTerms {
  std::int64_t compute = 0, fp32 = 0;
  std::uint64_t scores_fp32 = 0, scores = 0, scores_cast = 0, scores_bool = 0;
};

EagerTerms eager_terms(const ModuleTree& tree, int tp_size, bool tp_upper_bound) {
  const auto get = [&](const char* name) {
    const auto it = tree.activations.find(name);
    return it == tree.activations.end() ? std::int64_t{0} : it->second;
  };
  // Every term is per attention head, and tensor parallelism gives each rank 1/tp of the query and KV
  // heads (a count it does not divide fails at the first forward: PLAN021, and no fit verdict). Without
  // a `tp_split` model nothing is cut, as for the SDPA part (GPT-OSS's empty TP plan: measured so).
  const std::int64_t tp = tp_size > 1 && !tp_upper_bound ? tp_size : 1;
  EagerTerms e;
  e.compute = get("eager_layer") / tp;
  e.fp32 = get("eager_layer_fp32") / tp;
  // repeat_kv (llama/modeling_llama.py) expands the KV heads and reshapes: a copy at every query head,
  // except with a single KV head, where the reshape is a view (torch keeps stride 0).
  if (get("eager_kv_heads") / tp > 1) e.compute += get("eager_kv_repeat") / tp;
  e.scores_fp32 = static_cast<std::uint64_t>(std::max<std::int64_t>(0, get("eager_scores_fp32") / tp));
  e.scores = static_cast<std::uint64_t>(std::max<std::int64_t>(0, get("eager_scores") / tp));
  e.scores_cast = static_cast<std::uint64_t>(std::max<std::int64_t>(0, get("eager_scores_cast") / tp));
  e.scores_bool = static_cast<std::uint64_t>(std::max<std::int64_t>(0, get("eager_scores_bool") / tp));
  return e;
}

}  // namespace

ActivationEstimate estimate_activations(const ShardPlan& plan, const ModuleTree& tree, const FsdpSettings& s,
                                        const MemoryOptions& opts) {
  ActivationEstimate a;
  if (!opts.seq_len || !opts.micro_batch) {
    a.why_not = "give --seq-len and --micro-batch to estimate activations";
    return a;
  }
  for (const char* field : {"layer", "layers", "checkpointed", "logits"})
    if (!tree.activations.count(field)) {
      a.why_not = fmt::format("the registry has no activation model for {} (rules/models/{}.yaml `activations`)",
                              tree.model_type, tree.model_type);
      return a;
    }
  a.available = true;
  a.attn_implementation = tree.attn_implementation;
  // Context parallelism: context_parallel (torch 2.14.1 _context_parallel/_attention.py) shards the
  // step's input_ids, labels and position_ids along the sequence (torch.chunk, head-and-tail chunks
  // when load balancing), so each rank's forward sees its piece and keeps its piece's activations.
  a.cp_size = s.context_parallel();
  a.tokens = rank_tokens(s, opts);
  a.dtype = activation_dtype(plan, s);
  a.checkpointing = s.activation_checkpointing.value;
  const std::uint64_t t = static_cast<std::uint64_t>(a.tokens);
  const std::uint64_t size = static_cast<std::uint64_t>(dtype_bits(a.dtype)) / 8;
  const auto field = [&](const char* name) {
    const auto it = tree.activations.find(name);
    return it == tree.activations.end() ? std::uint64_t{0} : static_cast<std::uint64_t>(it->second);
  };
  // Tensor parallelism cuts some saved tensors along their features (a colwise projection's output, the
  // attention heads, the MLP's intermediates): this TP rank keeps its torch.chunk piece of each width
  // the registry lists (transformers 5.12.1 get_tensor_shard: ceil pieces, the last ones smaller),
  // and the rest whole (the residual stream and the norms around rowwise outputs that are all-reduced).
  a.tp_size = plan.tensor_parallel ? s.tp_size.value : 1;
  // Elements per token of this TP rank's pieces of the widths listed under `name` (`piece`), or of
  // what the split removes from them (`!piece`).
  auto tp_widths = [&](const char* name, bool piece) {
    std::uint64_t sum = 0;
    if (a.tp_size <= 1) return sum;
    const auto it = tree.activation_tp_split.find(name);
    if (it == tree.activation_tp_split.end()) return sum;
    for (const std::int64_t w : it->second) {
      const std::int64_t mine = chunk_real(w, chunk_size(w, a.tp_size), plan.tp_rank);
      sum += static_cast<std::uint64_t>(piece ? mine : w - mine);
    }
    return sum;
  };
  a.tp_upper_bound = a.tp_size > 1 && !tree.activation_tp_split.count("tp_split");
  // One block's bytes per token: `layer` at the compute dtype, `layer_fp32` in float32 (RMSNorm's
  // upcast input and rsqrt, attention's logsumexp: docs/activations.md); under TP less what the split
  // removes, plus the pieces of tensors only TP creates (`tp_added`).
  std::uint64_t compute =
      field("layer") - std::min(field("layer"), tp_widths("tp_split", false)) + tp_widths("tp_added", true);
  std::uint64_t fp32 = field("layer_fp32") - std::min(field("layer_fp32"), tp_widths("tp_split_fp32", false));
  // A `.to(torch.float32)` is a copy at a narrower compute dtype and the tensor itself in a float32 run:
  // `layer_fp32_cast` counts the copies only a narrower run makes (DeepSeek-V3's router upcasts its input,
  // which the block keeps at the compute dtype as well), `layer_fp32_only` what only a float32 run keeps
  // (a no-op upcast of a view keeps its whole storage: DeepSeek's kv_a output beside kv_a_layernorm's input).
  fp32 += size == 4 ? field("layer_fp32_only") : field("layer_fp32_cast");
  // Eager attention (transformers 5.12.1 eager_attention_forward) keeps what SDPA does not: the
  // seq x seq probabilities of every head, repeat_kv's copies of keys and values (GQA), and no
  // logsumexp. The registry's `eager_attention` gives these beside the SDPA model (fixtures/oracle2/eager).
  std::uint64_t scores_per_layer = 0;
  if (tree.attn_implementation == "eager") {
    if (!tree.activations.count("eager_scores_fp32")) {
      a = ActivationEstimate{};
      a.why_not = fmt::format(
          "the registry has no eager-attention model for {} (rules/models/{}.yaml `eager_attention`): its seq x seq "
          "attention probabilities are not estimated",
          tree.model_type, tree.model_type);
      return a;
    }
    a.eager = true;
    const EagerTerms e = eager_terms(tree, a.tp_size, a.tp_upper_bound);
    compute = static_cast<std::uint64_t>(std::max<std::int64_t>(0, static_cast<std::int64_t>(compute) + e.compute));
    fp32 = static_cast<std::uint64_t>(std::max<std::int64_t>(0, static_cast<std::int64_t>(fp32) + e.fp32));
    const std::uint64_t s_len = static_cast<std::uint64_t>(chunk_size(*opts.seq_len, a.cp_size));
    scores_per_layer = static_cast<std::uint64_t>(opts.rows()) * s_len * s_len *
                       (e.scores_fp32 * 4 + e.scores * size + (size == 4 ? 0 : e.scores_cast * size) + e.scores_bool);
  }
  // `layer_bool`: one byte per element whatever the dtypes (masks: xIELU's, a fused dropout's).
  const std::uint64_t layer = compute * size + fp32 * 4 + field("layer_bool");
  // What a block keeps whatever the tokens: `layer_fixed_fp32` four-byte elements (int32 offsets), and
  // `layer_fixed_fp32_cast` float32 copies of weights only a narrower compute dtype makes (DeepSeek's router:
  // F.linear(x.float(), weight.float()) keeps the copy of its E x h weight for backward).
  a.fixed_per_block = (field("layer_fixed_fp32") + (size == 4 ? 0 : field("layer_fixed_fp32_cast"))) * 4;
  // accelerate applies checkpoint_wrapper to the auto-wrap policy's modules (accelerator.py
  // prepare_model, `apply_activation_checkpointing(..., auto_wrap_policy=fsdp_plugin.auto_wrap_policy)`):
  // each block then keeps only its input, and one block's activations exist again while it is
  // recomputed in backward.
  if (a.checkpointing) {
    a.blocks = t * field("checkpointed") * field("layers") * size;
    a.recompute = t * layer + a.fixed_per_block;
  } else {
    a.blocks = (t * layer + a.fixed_per_block) * field("layers");
  }
  // Sliding-window layers get an explicit mask once the sequence reaches the window (transformers
  // 5.12.1 masking_utils.py _ignore_causal_mask_sdpa; full-attention layers use is_causal), and SDPA
  // keeps each layer's own copy of it in the compute dtype, batch x seq x seq (real forwards,
  // fixtures/oracle2/masks). Context parallelism has none: accelerate's hook drops
  // the mask. Activation checkpointing keeps only the recomputed block's.
  // Only SDPA: flash_attention_2 gets no mask without padding, eager adds one shared mask (and keeps
  // its own seq x seq probabilities, not estimated).
  const std::uint64_t mask_layers = tree.attn_implementation == "sdpa" ? field("mask_layers") : 0;
  if (mask_layers && a.cp_size <= 1 && *opts.seq_len >= static_cast<std::int64_t>(field("mask_from_tokens"))) {
    const std::uint64_t s_len = static_cast<std::uint64_t>(*opts.seq_len);
    const std::uint64_t one = static_cast<std::uint64_t>(opts.rows()) * s_len * s_len * size;
    a.masks = a.checkpointing ? one : one * mask_layers;
  }
  // Every layer keeps its probabilities; with checkpointing only the block being recomputed.
  a.scores = a.checkpointing ? scores_per_layer : scores_per_layer * field("layers");
  // transformers loss_utils.py ForCausalLMLoss: `logits = logits.float()` before cross_entropy,
  // which saves its fp32 log-softmax: the head output (compute dtype) + two fp32 copies.
  a.logits = t * field("logits") * (size + 4 + 4);
  return a;
}

const char* reference_name(PreferenceReference r) {
  switch (r) {
    case PreferenceReference::none:
      return "none";
    case PreferenceReference::model:
      return "model";
    case PreferenceReference::adapter_disabled:
      return "adapter_disabled";
    case PreferenceReference::precomputed:
      return "precomputed";
  }
  return "none";
}

TrainingLoop training_loop(const MemoryOptions& opts, const FsdpSettings& s) {
  return opts.loop == TrainingLoop::trainer || s.trainer.value ? TrainingLoop::trainer : TrainingLoop::accelerate;
}

bool checkpointing_by_transformers(const FsdpSettings& s, const MemoryOptions& opts) {
  return !opts.recipe_checkpointing_source.empty() &&
         s.activation_checkpointing.source == opts.recipe_checkpointing_source;
}

std::uint64_t optimizer_state_bytes(const OptimizerModel& o, std::int64_t numel, DType d) {
  const auto n = static_cast<std::uint64_t>(numel);
  std::uint64_t b =
      static_cast<std::uint64_t>(o.states) * bytes(numel, d) + static_cast<std::uint64_t>(o.byte_states) * n;
  if (o.block > 0)
    b += static_cast<std::uint64_t>(o.byte_states) *
         ((n + static_cast<std::uint64_t>(o.block) - 1) / static_cast<std::uint64_t>(o.block)) * 4;
  return b;
}

const char* verdict_name(FitVerdict v) {
  switch (v) {
    case FitVerdict::fits:
      return "fits";
    case FitVerdict::fits_without_activations:
      return "fits_without_activations";
    case FitVerdict::does_not_fit:
      return "does_not_fit";
    case FitVerdict::withheld:
      return "withheld";
    case FitVerdict::may_not_fit:
      return "may_not_fit";
    case FitVerdict::not_estimated:
      return "not_estimated";
  }
  return "?";
}

MemoryEstimate estimate_memory(const ShardPlan& plan, const ModuleTree& tree, const FsdpSettings& s,
                               const MemoryOptions& opts) {
  MemoryEstimate est;
  est.gpu_memory = opts.gpu_memory;
  est.gpu_name = opts.gpu_name;
  est.gpu_assumed = opts.gpu_assumed;
  est.optimizer = opts.optimizer.name;
  const Transient transient = transient_peak(plan, s);
  const std::uint64_t buffers = buffer_bytes(tree);  // the same on every rank: one walk of the tree
  est.transient_note = transient.note;
  est.activations = estimate_activations(plan, tree, s, opts);
  const bool offload = s.offload_params.value;
  const bool orig = s.use_orig_params.value || plan.fsdp_version == 2;
  for (int r = 0; r < plan.shard_group; ++r) {
    RankMemory m;
    m.rank = r;
    std::uint64_t params = 0, grads = 0, optim = 0;
    for (const auto& u : plan.units) {
      if (u.params.empty()) continue;
      // A unit of a folded plan stands for that many identical ones (FSDP1 only: folded_plan_exact).
      const auto times = static_cast<std::uint64_t>(u.instances);
      if (plan.fsdp_version == 2) {
        // Per parameter (_fsdp_param.py): a padded local shard each, a padded sharded gradient for
        // those that train, and optimizer states over the unpadded local rows of those (a LoRA group
        // holds frozen base weights beside trainable adapters, possibly in another dtype).
        for (const auto& ps : u.shards) {
          const std::uint64_t local = bytes(ps.rows_per_rank * ps.row_numel, ps.dtype);
          params += local;
          if (!ps.gets_grad) continue;
          grads += local;
          optim += optimizer_state_bytes(opts.optimizer, real_rows_numel(ps, r), ps.dtype);
        }
        continue;
      }
      const DType p = u.dtype;
      params += times * bytes(u.shard_numel, p);
      // A FlatParameter with any trainable parameter requires grad and gets a whole sharded gradient
      // (torch warns of "higher than expected gradient memory" for frozen ones in it) -- when the
      // step's forward reaches one of them: a unit it never reaches keeps grad None, and AdamW skips
      // it (torch 2.14.1 oracle, llava-*: the vision layer after the feature layer).
      if (!u.gets_grad) continue;
      grads += times * bytes(u.shard_numel, p);
      std::int64_t opt_numel = u.shard_numel;
      // use_orig_params=True: the optimizer gets the original parameters that train, so its states
      // cover their elements on this rank and none of the alignment or world-size padding; NO_SHARD
      // (also a shard group of one) keeps every original whole (torch 2.14.1 oracles, *-noshard-orig-*,
      // fixtures/peft-oracle *-orig-accelerate-*).
      if (orig) opt_numel = plan.strategy == ShardingStrategy::no_shard ? trainable_numel(u) : trainable_in_rank(u, r);
      optim += times * optimizer_state_bytes(opts.optimizer, opt_numel, p);
    }
    if (offload) {
      m.cpu = params + grads + optim;
    } else {
      m.params = params;
      m.grads = grads;
      m.optimizer = optim;
    }
    m.buffers = buffers;
    m.quant_state = tree.quant_state_bytes;
    // Ignored parameters are plain tensors on every rank: FSDP neither shards nor offloads them.
    for (const auto& p : plan.ignored) {
      m.ignored += bytes(p.numel, p.dtype);
      if (p.requires_grad)
        m.ignored += bytes(p.numel, p.dtype) + optimizer_state_bytes(opts.optimizer, p.numel, p.dtype);
    }
    m.transient = transient.bytes;
    m.activations = est.activations.available ? est.activations.total() : 0;
    if (m.total() > est.peak) {
      est.peak = m.total();
      est.peak_rank = r;
    }
    est.ranks.push_back(m);
  }
  // The step replayed on the rank whose persistent state is the largest: every moment adds the same
  // state to what the step allocates, which is the same on every rank of the shard group.
  if (est.activations.available && !est.ranks.empty()) {
    const auto state = [](const RankMemory& m) {
      return m.params + m.optimizer + m.buffers + m.quant_state + m.ignored;
    };
    const auto largest =
        std::max_element(est.ranks.begin(), est.ranks.end(),
                         [&](const RankMemory& x, const RankMemory& y) { return state(x) < state(y); });
    est.step = replay_step(plan, tree, s, opts, est.activations, *largest);
    est.peak = est.step.peak.total();
    est.peak_rank = largest->rank;
  }
  decide_fit(est, opts);
  return est;
}

void decide_fit(MemoryEstimate& est, const MemoryOptions& opts) {
  est.headroom = static_cast<std::int64_t>(est.gpu_memory) - static_cast<std::int64_t>(est.peak);
  if (!est.step.available) {
    est.fits = est.peak <= est.gpu_memory;
    est.verdict = !est.fits                   ? FitVerdict::does_not_fit
                  : est.activations.available ? FitVerdict::fits
                                              : FitVerdict::fits_without_activations;
    return;
  }
  // The replayed peak is at most 10% above a real step's (fixtures/oracle2/peak), and a GPU holds more
  // than torch's tensors: the CUDA context, NCCL's buffers, cuBLAS workspaces and the caching
  // allocator's rounding (docs/step-peak.md "The margin").
  est.margin = kFixedOverhead + est.peak / 20;
  est.certain = est.peak - est.peak / 11;  // peak / 1.1: what a real step holds at least
  est.with_margin = est.peak + est.margin;
  est.fits = est.with_margin <= est.gpu_memory;
  est.verdict = !opts.optimizer.known          ? FitVerdict::not_estimated
                : est.fits                     ? FitVerdict::fits
                : est.certain > est.gpu_memory ? FitVerdict::does_not_fit
                                               : FitVerdict::may_not_fit;
}

CommVolume communication(const ShardPlan& plan, std::optional<double> bus_bandwidth,
                         std::optional<double> inter_node_bandwidth) {
  CommVolume cv;
  cv.bus_bandwidth = bus_bandwidth;
  cv.inter_node_bandwidth = inter_node_bandwidth;
  // Each group at its own bandwidth: the inter-node one for a group that crosses machines, when given.
  const auto ring = [&](std::uint64_t size, int n, double factor, bool spans_nodes) {
    return ring_seconds(size, n, factor, spans_nodes && inter_node_bandwidth ? inter_node_bandwidth : bus_bandwidth);
  };
  const bool ar_spans = plan.fsdp_version == 1 && plan.strategy == ShardingStrategy::no_shard
                            ? plan.shard_spans_nodes
                            : plan.replicate_spans_nodes;
  // NO_SHARD all-reduces over the shard group; HSDP all-reduces the shards over the replicas.
  const int ar_ranks =
      plan.fsdp_version == 1 && plan.strategy == ShardingStrategy::no_shard ? plan.shard_group : plan.replicate_group;
  // A folded plan's units once each; the totals add every instance in the materialised plan's order
  // (sums of seconds round as they did there).
  cv.units.reserve(plan.units.size());
  for (const auto& u : plan.units) {
    CollectiveBytes cb;
    cb.unit = u.path;
    if (!u.params.empty()) {
      const Dtypes d = dtypes_of(u);
      if (plan.fsdp_version == 1 && plan.strategy == ShardingStrategy::no_shard) {
        if (u.gets_grad) {
          cb.all_reduce += bytes(u.numel, d.r);
          cb.all_reduces += 1;
        }
      } else {
        // Forward all-gather; again in backward when the unit was freed after forward.
        const std::uint64_t ag = bytes(u.padded_numel, d.c);
        cb.all_gather += ag;
        cb.all_gathers += 1;
        const bool freed = plan.fsdp_version == 1 ? !is_root(u) && (plan.strategy == ShardingStrategy::full_shard ||
                                                                    plan.strategy == ShardingStrategy::hybrid_shard)
                                                  : u.reshard_after_forward.value_or(true);
        if (freed) {
          cb.all_gather += ag;
          cb.all_gathers += 1;
        }
        if (u.gets_grad) {
          cb.reduce_scatter += bytes(u.padded_numel, d.r);
          cb.reduce_scatters += 1;
          if (plan.replicate_group > 1) {
            cb.all_reduce += bytes(u.shard_numel, d.r);
            cb.all_reduces += 1;
          }
        }
      }
    }
    cb.seconds = ring(cb.all_gather, plan.shard_group, 1, plan.shard_spans_nodes) +
                 ring(cb.reduce_scatter, plan.shard_group, 1, plan.shard_spans_nodes) +
                 ring(cb.all_reduce, ar_ranks, 2, ar_spans);
    cv.units.push_back(std::move(cb));
  }
  plan.for_each_in_order([&](const ShardUnit& u, std::int64_t) {
    const CollectiveBytes& cb = cv.units[static_cast<std::size_t>(&u - plan.units.data())];
    cv.total.seconds += cb.seconds;
    cv.total.all_gather += cb.all_gather;
    cv.total.reduce_scatter += cb.reduce_scatter;
    cv.total.all_reduce += cb.all_reduce;
    cv.total.all_gathers += cb.all_gathers;
    cv.total.reduce_scatters += cb.reduce_scatters;
    cv.total.all_reduces += cb.all_reduces;
  });
  return cv;
}

TpTraffic tensor_parallel_traffic(const ShardPlan& plan, const ModuleTree& tree, const FsdpSettings& s,
                                  const MemoryOptions& opts, std::optional<double> bus_bandwidth,
                                  std::optional<double> inter_node_bandwidth) {
  if (plan.tp_spans_nodes && inter_node_bandwidth) bus_bandwidth = inter_node_bandwidth;
  TpTraffic t;
  t.tp_size = plan.tensor_parallel ? plan.tensor_parallel->tp_size : 1;
  if (!opts.seq_len || !opts.micro_batch) {
    t.why_not = "give --seq-len and --micro-batch to estimate tensor parallelism's activation all-reduces";
    return t;
  }
  t.estimated = true;
  t.tokens = rank_tokens(s, opts);
  const std::uint64_t act_bytes = static_cast<std::uint64_t>(dtype_bits(activation_dtype(plan, s))) / 8;
  // accelerate's activation checkpointing wraps the policy's blocks, whose forward runs again in backward.
  const auto recomputed = [&](int m) {
    if (!s.activation_checkpointing.value) return false;
    for (int a = tree.modules[static_cast<std::size_t>(m)].parent; a >= 0;
         a = tree.modules[static_cast<std::size_t>(a)].parent)
      for (const auto& cls : s.wrap_classes.value)
        if (tree.is_instance(tree.modules[static_cast<std::size_t>(a)], cls)) return true;
    return false;
  };
  // A hook's backward collective on a module's input (colwise's all-reduce of the input gradient) runs
  // only when that input requires grad: some trainable parameter runs before the module and feeds it.
  // With a frozen embedding (LoRA) the first layer's projections get none (real steps:
  // fixtures/oracle2/tp/traffic-*-lora.json). Modules run in pre-order, except that consecutive
  // siblings with the same style read the same input (q, k, v; gate, up), so one's adapters do not
  // feed another.
  const std::size_t n_modules = tree.modules.size();
  std::vector<std::size_t> trainable_before(n_modules + 1, 0);  // trainable parameters in modules [0, i)
  for (std::size_t i = 0; i < n_modules; ++i) {
    std::size_t own = 0;
    for (const auto& p : tree.modules[i].params) own += !p.buffer && p.requires_grad;
    trainable_before[i + 1] = trainable_before[i] + own;
  }
  // Unless the embedding's output is made to require grad: peft does so for a model with gradient
  // checkpointing (peft_model.py _prepare_model_for_gradient_checkpointing: enable_input_require_grads)
  // and prepare_model_for_kbit_training for a quantized one; then every input requires grad.
  const bool every_input = tree.peft && (s.activation_checkpointing.value || tree.quantized_4bit());
  const auto parallel = tree.activations.find("parallel_residual");
  const bool parallel_blocks = parallel != tree.activations.end() && parallel->second > 0;
  // A decoder block: a module of a class in _no_split_modules.
  const auto is_block = [&](int m) {
    for (const auto& cls : tree.no_split_modules)
      if (tree.is_instance(tree.modules[static_cast<std::size_t>(m)], cls)) return true;
    return false;
  };
  const auto input_requires_grad = [&](int m, const ModuleTree::TpEntry& entry) {
    if (every_input) return true;
    // A LoRA layer's base_layer reads the layer's input: it stands where the layer stands.
    while (tree.peft && tree.modules[static_cast<std::size_t>(m)].name == "base_layer" &&
           tree.modules[static_cast<std::size_t>(m)].parent >= 0)
      m = tree.modules[static_cast<std::size_t>(m)].parent;
    const Module& mod = tree.modules[static_cast<std::size_t>(m)];
    int first = m;  // the first of the run of same-style siblings that holds m
    if (mod.parent >= 0) {
      const std::vector<int>& sibs = tree.modules[static_cast<std::size_t>(mod.parent)].children;
      const auto at = std::find(sibs.begin(), sibs.end(), m);
      for (auto it = at; it != sibs.begin(); --it) {
        const ModuleTree::TpEntry* e =
            tp_module_entry(tree, tree.modules[static_cast<std::size_t>(*std::prev(it))].path);
        if (!e || e->style.name != entry.style.name) break;
        first = *std::prev(it);
      }
    }
    // What runs before the run's first module: every module before it in pre-order (a LoRA layer's
    // lora_A before its lora_B; ancestors hold no parameters of their own in these models).
    std::size_t feeding = trainable_before[static_cast<std::size_t>(first)];
    // In a parallel-residual block (registry `parallel_residual`: Cohere, GPT-NeoX, Phi) attention and
    // MLP both read the block's input, so the branches before this one (children of the block holding
    // TP-planned modules) do not feed it; the norms between do (real LoRA steps:
    // fixtures/oracle2/tp/traffic-cohere2_tp-t2-lora.json, traffic-gpt_neox_tp-t2-lora.json).
    if (parallel_blocks) {
      int branch = first, block = tree.modules[static_cast<std::size_t>(first)].parent;
      while (block >= 0 && !is_block(block)) {
        branch = block;
        block = tree.modules[static_cast<std::size_t>(block)].parent;
      }
      if (block >= 0) {
        const std::vector<int>& kids = tree.modules[static_cast<std::size_t>(block)].children;
        for (std::size_t k = 0; k + 1 < kids.size() && kids[k] != branch; ++k) {
          const auto from = static_cast<std::size_t>(kids[k]), to = static_cast<std::size_t>(kids[k + 1]);
          bool planned = false;
          for (std::size_t i = from; i < to && !planned; ++i) planned = tp_module_entry(tree, tree.modules[i].path);
          if (planned) feeding -= trainable_before[to] - trainable_before[from];
        }
      }
    }
    return feeding > 0;
  };
  CollectiveBytes& c = t.collectives;
  for (int m = 0; m < static_cast<int>(tree.modules.size()); ++m) {
    const Module& mod = tree.modules[static_cast<std::size_t>(m)];
    const ModuleTree::TpEntry* entry = tp_module_entry(tree, mod.path);
    if (!entry) continue;
    const TpStyle& st = entry->style;
    const ParamInfo* weight = nullptr;
    for (const auto& p : mod.params)
      if (!p.buffer && p.shape.size() >= 2) {
        weight = &p;
        break;
      }
    const auto features = [&](int dim) -> std::uint64_t {
      if (!weight) return 0;
      const int nd = static_cast<int>(weight->shape.size());
      const int d = dim < 0 ? dim + nd : dim;
      return d >= 0 && d < nd ? static_cast<std::uint64_t>(weight->shape[static_cast<std::size_t>(d)]) : 0;
    };
    const std::uint64_t tokens = static_cast<std::uint64_t>(t.tokens);
    // An activation cut into tp ceil pieces along its features and gathered: every rank's piece is
    // the first's size (transformers' _AllGather / _Split allocate empty_like of the local piece).
    const auto gathered = [&](int dim) {
      const std::uint64_t n = features(dim);
      return static_cast<std::uint64_t>(t.tp_size) *
             static_cast<std::uint64_t>(chunk_size(static_cast<std::int64_t>(n), t.tp_size));
    };
    const auto add = [&](std::uint64_t& bytes, int& calls, std::uint64_t per_call, int times) {
      bytes += static_cast<std::uint64_t>(times) * per_call;
      calls += times;
    };
    const int forwards = recomputed(m) ? 2 : 1;  // a checkpointed block's forward runs again in backward
    if (weight) {
      if (st.forward_all_reduce)
        add(c.all_reduce, c.all_reduces, tokens * features(*st.forward_all_reduce) * act_bytes, forwards);
      const bool grad_in = input_requires_grad(m, *entry);
      if (st.backward_all_reduce && grad_in)
        add(c.all_reduce, c.all_reduces, tokens * features(*st.backward_all_reduce) * act_bytes, 1);
      if (st.forward_all_gather)
        add(c.all_gather, c.all_gathers, tokens * gathered(*st.forward_all_gather) * act_bytes, forwards);
      if (st.backward_all_gather && grad_in)
        add(c.all_gather, c.all_gathers, tokens * gathered(*st.backward_all_gather) * act_bytes, 1);
    }
    if (st.routing_all_reduce) {
      const auto k = tree.activations.find("experts_per_token");
      if (k != tree.activations.end()) {
        c.all_reduce += tokens * static_cast<std::uint64_t>(k->second) * act_bytes;
        c.all_reduces += 1;
      }
    }
    if (st.grad_all_reduce) {
      for (const auto& p : mod.params) {
        if (p.buffer || !p.requires_grad) continue;
        // FSDP2 under mixed precision keeps trainable parameters (and so their gradients) in fp32.
        const DType grad = s.param_dtype() ? DType::F32 : p.dtype;
        c.all_reduce += static_cast<std::uint64_t>(p.numel) * (dtype_bits(grad) / 8);
        c.all_reduces += 1;
      }
    }
  }
  c.unit = "tensor parallel";
  t.bandwidth = bus_bandwidth;
  c.seconds =
      ring_seconds(c.all_reduce, t.tp_size, 2, bus_bandwidth) + ring_seconds(c.all_gather, t.tp_size, 1, bus_bandwidth);
  return t;
}

CpTraffic context_parallel_traffic(const ShardPlan& plan, const ModuleTree& tree, const FsdpSettings& s,
                                   const MemoryOptions& opts, std::optional<double> bus_bandwidth,
                                   std::optional<double> inter_node_bandwidth) {
  CpTraffic t;
  t.cp_size = s.context_parallel();
  t.strategy = s.cp_comm_strategy.value;
  // The CP group is rank 0's cp peers; accelerate's mesh puts cp inside dp_shard, outside tp.
  const std::vector<int> peers = s.mesh_group(0, {"cp"});
  if (s.num_machines.value > 1 && !peers.empty() && peers.back() >= s.gpus_per_node() && inter_node_bandwidth)
    bus_bandwidth = inter_node_bandwidth;
  if (!opts.seq_len || !opts.micro_batch) {
    t.why_not = "give --seq-len and --micro-batch to estimate context parallelism's key/value exchanges";
    return t;
  }
  const auto kv = tree.activation_tp_split.find("cp_kv");
  const auto layers = tree.activations.find("layers");
  if (kv == tree.activation_tp_split.end() || layers == tree.activations.end()) {
    t.why_not = fmt::format("the registry gives no key/value widths for {} (rules/models/{}.yaml activations `cp_kv`)",
                            tree.model_type, tree.model_type);
    return t;
  }
  t.estimated = true;
  t.tokens = rank_tokens(s, opts);
  // Per token, the K and V widths SDPA receives (transformers 5.12.1 sdpa_attention_forward passes
  // num_key_value_heads with enable_gqa=True: accelerate's hook drops the mask, so use_gqa_in_sdpa holds);
  // tensor parallelism leaves this rank its torch.chunk piece of each (colwise k_proj / v_proj).
  const int tp = plan.tensor_parallel ? plan.tensor_parallel->tp_size : 1;
  std::uint64_t width = 0;
  for (const std::int64_t w : kv->second)
    width += static_cast<std::uint64_t>(tp > 1 ? chunk_real(w, chunk_size(w, tp), plan.tp_rank) : w);
  const std::uint64_t act_bytes = static_cast<std::uint64_t>(dtype_bits(activation_dtype(plan, s))) / 8;
  const std::uint64_t n = static_cast<std::uint64_t>(t.tokens) * width;  // K and V elements of one layer
  t.kv_bytes = n * act_bytes;
  const int layer_count = static_cast<int>(layers->second);
  // accelerate's activation checkpointing runs each block's forward again in backward.
  const int forwards = s.activation_checkpointing.value ? 2 : 1;
  t.attention_calls = layer_count * forwards;
  const std::uint64_t cp = static_cast<std::uint64_t>(t.cp_size);
  CollectiveBytes& c = t.collectives;
  if (t.strategy == "alltoall") {
    // _AllToAllRotater: a permute (all_to_all_single to the next rank) before each of the cp - 1
    // later blocks, in every forward and again in backward.
    t.ring_sends = (t.cp_size - 1) * (layer_count * forwards + layer_count);
    t.ring_send = static_cast<std::uint64_t>(t.ring_sends) * t.kv_bytes;
  } else {
    // _AllGatherRotater: one all_gather_single of the concatenated K and V per call, forward and backward.
    c.all_gathers = layer_count * forwards + layer_count;
    c.all_gather = static_cast<std::uint64_t>(c.all_gathers) * cp * t.kv_bytes;
  }
  // Backward sends the K/V gradients around the ring, always by permute, cp times per layer, in float32
  // (_ContextParallelOptions.convert_to_f32).
  t.ring_sends += t.cp_size * layer_count;
  t.ring_send += static_cast<std::uint64_t>(t.cp_size * layer_count) * n * 4;
  c.unit = "context parallel";
  t.bandwidth = bus_bandwidth;
  // A permute sends a whole buffer to one peer and receives one: its bytes cross the link once.
  c.seconds =
      ring_seconds(c.all_gather, t.cp_size, 1, bus_bandwidth) +
      (bus_bandwidth && *bus_bandwidth > 0 && t.cp_size > 1 ? static_cast<double>(t.ring_send) / *bus_bandwidth : 0.0);
  return t;
}

std::vector<GlobalRank> mesh_ranks(const FsdpSettings& s) {
  std::vector<GlobalRank> out;
  const int world = std::max(1, s.world_size.value);
  out.reserve(static_cast<std::size_t>(world));
  const bool fsdp1_hybrid = s.fsdp_version.value == 1 && is_hybrid(s.sharding_strategy.value);
  const int per_node = std::max(1, s.gpus_per_node());
  for (int g = 0; g < world; ++g) {
    GlobalRank r;
    r.rank = g;
    if (s.fsdp_version.value == 1) {
      // FSDP1 shards over every process, or under a hybrid strategy over each node's.
      r.shard_rank = fsdp1_hybrid ? g % per_node : g;
      r.replica = fsdp1_hybrid ? g / per_node : 0;
    } else {
      // torch's dp_shard_cp flattens dp_shard and cp row-major.
      r.cp_rank = s.mesh_coordinate(g, "cp");
      r.shard_rank = s.mesh_coordinate(g, "dp_shard") * s.mesh_size("cp") + r.cp_rank;
      r.replica = s.mesh_coordinate(g, "dp_replicate");
      r.tp_rank = s.mesh_coordinate(g, "tp");
    }
    out.push_back(r);
  }
  return out;
}

std::string gpu_label(const MemoryEstimate& m) {
  std::string size = human_bytes(m.gpu_memory);
  if (m.gpu_name.empty()) return size;
  return fmt::format("{} ({}{})", size, m.gpu_name, m.gpu_assumed ? ", assumed: set --gpu or --gpu-memory" : "");
}

}  // namespace shardcheck
