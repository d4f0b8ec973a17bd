// The peak of live bytes in one steady-state training step, replayed unit by unit (docs/step-peak.md).
//
// What is alive at each moment follows torch 2.14.1's FSDP runtimes and the loop around them:
//  - FSDP2 (_fully_shard/_fsdp_param_group.py): an all-gather's flat output stays until the next
//    group's wait_for_unshard frees it (comm_ctx.all_gather_state), the last one until backward starts;
//    post_backward reshards before it reduces; backward prefetches the next group in backward order;
//    groups with reshard_after_forward=False (accelerate 1.14's [final norm, head] group, the root)
//    stay unsharded from their forward to their backward.
//  - FSDP1 (_runtime_utils.py): the root unit and SHARD_GRAD_OP units stay unsharded from forward to
//    backward; BACKWARD_PRE prefetches the next unit's all-gather before this unit's gradients exist.
//  - The loss (transformers 5.12.1 loss/loss_utils.py ForCausalLMLoss): logits.float() (a copy at a
//    narrower compute dtype), cross_entropy's saved log-softmax, and in backward the two dense
//    T x V gradients of nll_loss and log_softmax, beside the logits while `outputs` holds them.
//  - The optimizer step (optim/adamw.py _multi_tensor_adamw): the states, every sharded gradient and
//    the sqrt of exp_avg_sq as a temporary; zero_grad(set_to_none=True) frees the gradients after it.
// Checked against real steps (fixtures/oracle2/peak, scripts/oracle/peak_oracle.py).
#include <fmt/format.h>

#include <algorithm>

#include "shardcheck/memory.hpp"
#include "shardcheck/repeated_blocks.hpp"
#include "unit_bytes.hpp"

namespace shardcheck {

std::uint64_t StepMoment::total() const {
  std::uint64_t t = 0;
  for (const auto& p : parts) t += p.bytes;
  return t;
}

namespace {

using unit_bytes::of;

// One unit of the materialised plan, in forward order, as the step sees it.
struct UnitStep {
  std::string label;
  std::uint64_t unsharded = 0;       // its all-gathered parameters
  std::uint64_t flat = 0;            // FSDP2's flat all-gather output beside them
  std::uint64_t temps = 0;           // post-backward gradient and reduce-scatter buffers
  std::uint64_t unsharded_grad = 0;  // its gradient, unsharded, in the compute dtype
  std::uint64_t grad = 0;            // its sharded gradient on this rank, kept until zero_grad
  std::uint64_t held_grad = 0;       // no_sync: its unsharded gradient, kept between micro-batches
  std::uint64_t acts = 0;            // what its forward keeps for backward
  std::uint64_t recompute = 0;       // activation checkpointing: what its backward computes again
  bool kept = false;                 // unsharded from its forward to its backward
};

// Live bytes at one moment, by kind.
struct Live {
  std::uint64_t params = 0, optimizer = 0, buffers = 0;  // the persistent state
  std::uint64_t grads = 0;                               // sharded gradients already reduced
  std::uint64_t held_grads = 0;                          // unsharded gradients no_sync keeps
  std::uint64_t acts = 0;                                // saved activations
  std::uint64_t recompute = 0;
  std::uint64_t unsharded = 0;  // unsharded parameters: kept units, the computing one, the prefetched one
  std::uint64_t comm = 0;       // flat all-gather outputs, gradient and reduce-scatter buffers
  std::uint64_t held = 0;       // the loop's `outputs`: logits and KV cache
  std::uint64_t logits = 0;     // the loss's T x V tensors of this micro-batch
  std::uint64_t optim_temp = 0;
  std::uint64_t reference = 0;       // a preference trainer's reference forward: its parameters and logits
  std::uint64_t reference_kept = 0;  // DPO's reference model between its forwards (sharded, FSDP1's root)
  std::uint64_t total() const {
    return params + optimizer + buffers + grads + held_grads + acts + recompute + unsharded + comm + held + logits +
           optim_temp + reference + reference_kept;
  }
};

// The decoder blocks each unit of `plan.units` runs (one instance of a folded unit): a block belongs
// to the nearest unit at or above it. A tree without blocks gives the root all of them.
std::vector<std::int64_t> blocks_per_unit(const ShardPlan& plan, const ModuleTree& tree) {
  std::vector<int> unit_of(tree.modules.size(), -1);
  for (std::size_t i = 0; i < plan.units.size(); ++i)
    if (plan.units[i].module >= 0) unit_of[static_cast<std::size_t>(plan.units[i].module)] = static_cast<int>(i);
  const std::vector<std::int64_t> mult = tree.folded ? module_multiplicity(tree) : std::vector<std::int64_t>();
  std::vector<std::int64_t> blocks(plan.units.size(), 0);
  std::int64_t found = 0;
  for (std::size_t m = 0; m < tree.modules.size(); ++m) {
    const Module& mod = tree.modules[m];
    bool block = false;
    for (const auto& cls : tree.no_split_modules) block = block || tree.is_instance(mod, cls);
    if (!block) continue;
    int at = static_cast<int>(m);
    while (at >= 0 && unit_of[static_cast<std::size_t>(at)] < 0) at = tree.modules[static_cast<std::size_t>(at)].parent;
    if (at < 0) continue;
    const std::int64_t n = mult.empty() ? 1 : mult[m];
    blocks[static_cast<std::size_t>(unit_of[static_cast<std::size_t>(at)])] += n;
    found += n;
  }
  for (std::size_t i = 0; i < plan.units.size(); ++i)
    blocks[i] = plan.units[i].instances > 0 ? blocks[i] / plan.units[i].instances : blocks[i];
  if (found == 0 && !plan.units.empty()) blocks[0] = -1;  // the root runs every block
  return blocks;
}

// The children of one decoder block: accelerate 1.14's fsdp2_apply_ac checkpoints each child of a
// module the wrap policy picks (fsdp_utils.py), so a block keeps each child's input.
std::int64_t block_children(const ModuleTree& tree) {
  for (const Module& m : tree.modules)
    for (const auto& cls : tree.no_split_modules)
      if (tree.is_instance(m, cls)) return static_cast<std::int64_t>(m.children.size());
  return 1;
}

struct Activations {
  std::uint64_t per_block = 0;  // kept per block through forward
  std::uint64_t recompute = 0;  // one block computed again in its backward
  std::uint64_t outside = 0;    // the embedding output, the final norm's tensors, rotary cos/sin
  std::int64_t layers = 0;
};

Activations activations_of(const ShardPlan& plan, const ModuleTree& tree, const FsdpSettings& s,
                           const MemoryOptions& opts, const ActivationEstimate& act) {
  Activations a;
  const auto field = [&](const char* name) {
    const auto it = tree.activations.find(name);
    return it == tree.activations.end() ? std::int64_t{0} : it->second;
  };
  a.layers = std::max<std::int64_t>(1, field("layers"));
  const auto layers = static_cast<std::uint64_t>(a.layers);
  const auto t = static_cast<std::uint64_t>(act.tokens);
  const auto d = static_cast<std::uint64_t>(dtype_bits(act.dtype) / 8);
  const auto h = static_cast<std::uint64_t>(field("checkpointed"));
  if (!act.checkpointing) {
    a.per_block = (act.blocks + act.masks + act.scores) / layers;
  } else if (plan.fsdp_version == 2 && !checkpointing_by_transformers(s, opts)) {
    // fsdp2_apply_ac checkpoints a block's children: each keeps its own input (a Llama block: the
    // residual, both norms' outputs and the residual after attention).
    a.per_block = t * static_cast<std::uint64_t>(block_children(tree)) * h * d;
    a.recompute = act.recompute + act.masks + act.scores;
  } else {
    a.per_block = act.blocks / layers;
    a.recompute = act.recompute + act.masks + act.scores;
  }
  // Around the blocks: the embedding output (or the last block's), the final norm's normalized value
  // and output with its float32 upcast and rsqrt, and the rotary cos and sin.
  a.outside = t * (5 * h * d + (d < 4 ? 4 * h : 0) + 16);
  return a;
}

std::vector<UnitStep> unit_steps(const ShardPlan& plan, const ModuleTree& tree, const FsdpSettings& s,
                                 const MemoryOptions& opts, const Activations& a) {
  const std::vector<std::int64_t> blocks = blocks_per_unit(plan, tree);
  const bool zero2 =
      plan.strategy == ShardingStrategy::shard_grad_op || plan.strategy == ShardingStrategy::hybrid_shard_zero2;
  const bool offload = s.offload_params.value;
  std::vector<UnitStep> steps;
  plan.for_each_in_order([&](const ShardUnit& u, std::int64_t instance) {
    UnitStep st;
    st.label = module_label(instance == 0 ? u.path : unit_instance_path(u, instance));
    st.unsharded = unit_bytes::unsharded(plan, u);
    st.flat = plan.fsdp_version == 2 && plan.shard_group > 1 ? st.unsharded : 0;
    st.temps = unit_bytes::grad_temps(plan, u);
    st.unsharded_grad = unit_bytes::unsharded_grad(plan, u);
    st.grad = offload ? 0 : unit_bytes::sharded_grad(plan, u);
    st.held_grad = opts.gradient_accumulation > 1 ? unit_bytes::unsharded_grad(plan, u) : 0;
    st.kept = plan.fsdp_version == 1 ? (unit_bytes::is_root(u) || zero2) : !u.reshard_after_forward.value_or(true);
    const auto index = static_cast<std::size_t>(&u - plan.units.data());
    const std::int64_t n = blocks[index] < 0 ? a.layers : blocks[index];
    st.acts = static_cast<std::uint64_t>(n) * a.per_block;
    st.recompute = n > 0 ? a.recompute : 0;
    steps.push_back(std::move(st));
  });
  return steps;
}

// One block's keys and values as SDPA receives them (the registry's `cp_kv` widths), per micro-batch.
std::uint64_t kv_per_block(const ModuleTree& tree, const ActivationEstimate& act) {
  const auto it = tree.activation_tp_split.find("cp_kv");
  if (it == tree.activation_tp_split.end()) return 0;
  std::uint64_t width = 0;
  for (const std::int64_t w : it->second) width += static_cast<std::uint64_t>(w);
  return static_cast<std::uint64_t>(act.tokens) * width * static_cast<std::uint64_t>(dtype_bits(act.dtype) / 8);
}

// The loss's T x V tensors (transformers 5.12.1 ForCausalLMLoss).
struct LossTensors {
  std::uint64_t logits = 0;  // the head's output, in the compute dtype
  std::uint64_t upcast = 0;  // logits.float() at a narrower compute dtype
  std::uint64_t fp32 = 0;    // one float32 T x V tensor: the log-softmax, each of its two gradients
};

LossTensors loss_tensors(const ModuleTree& tree, const ActivationEstimate& act, const MemoryOptions& opts) {
  LossTensors l;
  const auto it = tree.activations.find("logits");
  if (opts.fused_loss || it == tree.activations.end()) return l;
  const auto tv = static_cast<std::uint64_t>(act.tokens) * static_cast<std::uint64_t>(it->second);
  const auto d = static_cast<std::uint64_t>(dtype_bits(act.dtype) / 8);
  l.logits = tv * d;
  l.upcast = d < 4 ? tv * 4 : 0;
  l.fp32 = tv * 4;
  return l;
}

// TRL's DPO (v1.9.0 trainer/dpo_trainer.py _compute_loss): the model is called without labels, so the
// logits stay in the compute dtype and no cross-entropy runs; selective_log_softmax (trainer/utils.py)
// takes each row's log-probs in turn: float32 logits through a gather and each row's logsumexp (a T x V
// temporary per row, nothing kept but the logits), narrower logits through each row's log_softmax, whose
// outputs backward needs (a second logits-sized tensor). The reference model's forward follows under
// no_grad, with its own logits. Checked against fixtures/oracle2/peak/*-dpo-*.json.
struct PreferenceTensors {
  std::uint64_t logits = 0;    // the policy's (and the reference's) logits, every row
  std::uint64_t saved = 0;     // the per-row log_softmax outputs kept for backward (narrow dtypes)
  std::uint64_t row = 0;       // one row's T x V temporary while its log-probs are taken
  std::uint64_t backward = 0;  // backward's first ops: its T x V tensors, and the logits if still kept
  std::uint64_t ref_row = 0;   // one row's temporary of the reference's log-probs (nothing is kept)
};

PreferenceTensors preference_tensors(const ModuleTree& tree, const ActivationEstimate& act, const MemoryOptions& opts) {
  PreferenceTensors p;
  const auto it = tree.activations.find("logits");
  if (opts.fused_loss || it == tree.activations.end()) return p;
  const auto tv = static_cast<std::uint64_t>(act.tokens) * static_cast<std::uint64_t>(it->second);
  const auto rows = static_cast<std::uint64_t>(std::max<std::int64_t>(1, opts.rows()));
  const auto d = static_cast<std::uint64_t>(dtype_bits(act.dtype) / 8);
  p.logits = tv * d;
  p.saved = d < 4 ? tv * d : 0;
  p.row = d < 4 ? 0 : tv / rows * 4;
  // Backward: logsumexp saved its input, so float32 logits live on beside three float32 T x V tensors
  // (the gather's zeros and scatter, the rows' logsumexp gradients); log_softmax saved only its output,
  // so narrower logits are freed once the loss returns and the logits' gradient takes their place.
  p.backward = d < 4 ? p.saved + tv * d : p.logits + 3 * tv * 4;
  p.ref_row = tv / rows * d;
  return p;
}

// The largest moment of one phase: its live bytes and which unit it was at (formatted only at the end).
struct Best {
  Live live;
  const char* what = "";
  std::size_t unit = 0;
  bool set = false;
  void offer(const Live& l, const char* w, std::size_t u = 0) {
    if (set && l.total() <= live.total()) return;
    live = l;
    what = w;
    unit = u;
    set = true;
  }
};

// A preference trainer's loss (PreferenceTensors): the policy's log-probs, the reference's forward
// under no_grad, and backward's first ops. `f` is what the policy's forward left alive.
//  - Reference `model`: a second copy sharded by trl/models/utils.py prepare_fsdp (v1.9.0): under FSDP2
//    ONE fully_shard on its root, so its forward all-gathers the whole model at once (the unsharded
//    parameters and the flat all-gather output beside them); under FSDP1 the plugin's auto-wrap
//    policy, so one unit at a time beside the root unit, which stays unsharded through forward.
//  - `adapter_disabled`: the policy itself runs again with its adapter off, unit by unit.
void replay_preference_loss(const ShardPlan& plan, const std::vector<UnitStep>& units, const MemoryOptions& opts,
                            const PreferenceTensors& p, const Live& f, std::uint64_t last_flat, Best& loss_fwd,
                            Best& reference, Best& loss_bwd) {
  Live at = f;
  at.comm += last_flat;
  at.logits += p.logits + p.saved + p.row;
  loss_fwd.offer(at, "loss forward (the policy's log-probs)");
  if (opts.reference == PreferenceReference::model || opts.reference == PreferenceReference::adapter_disabled) {
    // FSDP2's one-group reference all-gathers everything at once; otherwise one unit at a time (FSDP1's
    // reference root is already counted as kept in replay_step, and a PEFT policy's root is unsharded
    // through its own forward and backward anyway).
    const bool one_group = opts.reference == PreferenceReference::model && plan.fsdp_version == 2;
    std::uint64_t all = 0, largest = 0;
    for (std::size_t i = 0; i < units.size(); ++i) {
      const UnitStep& u = units[i];
      all += u.unsharded + u.flat;
      const bool root = i == 0 && unit_bytes::is_root(plan.units.front());
      if (!root) largest = std::max(largest, u.unsharded + u.flat);
    }
    Live r = f;
    r.comm += last_flat;
    r.logits += p.logits + p.saved;
    // Its forward: at its head with its logits (and, in one group, all of it unsharded), or at its
    // largest unit before them.
    Live head = r;
    head.reference = p.logits + (one_group ? all : 0);
    Live unit = r;
    unit.reference = one_group ? 0 : largest;
    reference.offer(head.total() >= unit.total() ? head : unit, "reference forward");
    // Then its log-probs, row by row, once its parameters are freed.
    Live logps = r;
    logps.reference = p.logits + p.ref_row;
    loss_fwd.offer(logps, "loss forward (the reference's log-probs)");
  }
  Live bwd = f;
  bwd.logits += p.backward;
  loss_bwd.offer(bwd, "loss backward (gradient of the log-probs)");
}

StepMoment moment_of(const Best& b, const std::vector<UnitStep>& units, const char* optimizer) {
  StepMoment m;
  m.name = fmt::format(fmt::runtime(b.what), units.empty() ? std::string() : units[b.unit].label);
  const Live& l = b.live;
  const auto add = [&](std::string what, std::uint64_t bytes) {
    if (bytes) m.parts.push_back({std::move(what), bytes});
  };
  add("sharded parameters", l.params);
  add(fmt::format("optimizer states ({})", optimizer), l.optimizer);
  add("buffers and unsharded extras", l.buffers);
  add("sharded gradients", l.grads);
  add("unsharded gradients kept by no_sync", l.held_grads);
  add("saved activations", l.acts);
  add("recomputed block", l.recompute);
  add("unsharded parameters", l.unsharded);
  add("all-gather and reduce-scatter buffers", l.comm);
  add("outputs held by the loop (logits, KV cache)", l.held);
  add("logits and loss tensors", l.logits);
  add("optimizer step temporaries", l.optim_temp);
  add("reference forward (unsharded parameters, logits)", l.reference);
  add("reference model between forwards", l.reference_kept);
  return m;
}

}  // namespace

StepPeak replay_step(const ShardPlan& plan, const ModuleTree& tree, const FsdpSettings& s, const MemoryOptions& given,
                     const ActivationEstimate& act, const RankMemory& state) {
  // A PEFT model's DPO reference is the policy with its adapter off (DPOTrainer.__init__: no ref_model
  // is built for a PEFT model).
  MemoryOptions opts = given;
  if (opts.reference == PreferenceReference::model && tree.peft) opts.reference = PreferenceReference::adapter_disabled;
  StepPeak out;
  out.rank = state.rank;
  if (!act.available) {
    out.why_not = act.why_not;
    return out;
  }
  out.available = true;
  const Activations a = activations_of(plan, tree, s, opts, act);
  const std::vector<UnitStep> units = unit_steps(plan, tree, s, opts, a);
  const LossTensors loss = loss_tensors(tree, act, opts);
  const bool held = training_loop(opts, s) == TrainingLoop::accelerate;
  // The loop's `outputs` also holds the KV cache transformers builds in training (use_cache defaults to
  // true; DynamicLayer.update concatenates each layer's keys and values): the tensors SDPA saves, which
  // outlive backward, and the previous micro-batch's, which live on through this forward. With
  // activation checkpointing the cache must be off (a recomputed attention appends to it again and
  // torch.utils.checkpoint raises CheckpointError).
  const std::uint64_t kv_block = held && !act.checkpointing ? kv_per_block(tree, act) : 0;
  const BackwardPrefetch prefetch = plan.fsdp_version == 2 ? BackwardPrefetch::pre : s.backward_prefetch.value;

  Live base;
  base.params = state.params;
  base.optimizer = state.optimizer;
  base.buffers = state.buffers + state.quant_state + state.ignored;
  // DPO's reference model (trl/models/utils.py prepare_fsdp): sharded like the policy, in the dtype it
  // was loaded in; no gradients, no optimizer states.
  // Under FSDP1 its root unit never reshards after forward (torch 2.14.1 fsdp/_runtime_utils.py
  // _post_forward_reshard keeps the root's parameters for a backward that never comes): from its first
  // forward on, its unsharded root stays on every rank.
  if (opts.reference == PreferenceReference::model) {
    base.reference_kept = state.params;
    if (plan.fsdp_version == 1 && !units.empty() && unit_bytes::is_root(plan.units.front()))
      base.reference_kept += units.front().unsharded;
  }
  std::uint64_t held_grads = 0;  // the last micro-batch finds every unit's unsharded gradient
  for (const auto& u : units) held_grads += u.held_grad;
  base.held_grads = held_grads;

  Best forward, loss_fwd, reference, loss_bwd, backward, optimizer;
  // Forward, unit by unit: what earlier units keep, then this unit's all-gather and its activations.
  Live f = base;
  f.acts = a.outside;
  // The previous micro-batch's outputs until this forward returns.
  f.held = held ? loss.logits + kv_block * static_cast<std::uint64_t>(a.layers) : 0;
  for (std::size_t i = 0; i < units.size(); ++i) {
    const UnitStep& u = units[i];
    Live at = f;
    at.acts += u.acts;
    at.unsharded += u.unsharded;
    at.comm += u.flat;
    forward.offer(at, "forward of {}", i);
    f.acts += u.acts;
    if (u.kept) f.unsharded += u.unsharded;
  }
  const std::uint64_t last_flat = units.empty() ? 0 : units.back().flat;
  Live b = f;
  if (opts.preference()) {
    replay_preference_loss(plan, units, opts, preference_tensors(tree, act, opts), f, last_flat, loss_fwd, reference,
                           loss_bwd);
  } else {
    // The loss in forward: log_softmax of the (upcast) logits, the last all-gather output still held.
    Live at = f;
    at.comm += last_flat;
    at.logits += loss.logits + loss.upcast + loss.fp32;
    loss_fwd.offer(at, "loss forward (log-softmax of the logits)");
    // Backward's first ops: nll_loss's and log_softmax's gradients beside the saved log-softmax.
    b.held = held ? loss.logits : 0;
    Live bwd = b;
    bwd.logits += 3 * loss.fp32;
    loss_bwd.offer(bwd, "loss backward (gradient of the log-softmax)");
  }
  // Backward, unit by unit in reverse: its parameters again (kept ones still are), the next unit's
  // prefetch, recomputation; then post-backward frees its parameters and reduces its gradient.
  for (std::size_t k = units.size(); k-- > 0;) {
    const UnitStep& u = units[k];
    const std::uint64_t next = k > 0 && !units[k - 1].kept ? units[k - 1].unsharded : 0;
    Live start = b;
    if (!u.kept) start.unsharded += u.unsharded;
    if (prefetch == BackwardPrefetch::pre) start.unsharded += next;
    start.recompute = u.recompute;
    backward.offer(start, "backward of {}", k);
    if (plan.fsdp_version == 1 && u.temps) {
      // FSDP1 ends a unit's backward with its parameters still unsharded, each original parameter's
      // gradient and their concatenation into the FlatParameter's (the backward of the views it split
      // into); the post-backward hook then reshards and reduces.
      Live cat = start;
      cat.acts -= std::min(cat.acts, u.acts);
      cat.recompute = 0;
      cat.comm += 2 * u.unsharded_grad;
      backward.offer(cat, "backward of {} (flat gradient)", k);
    }
    b.acts -= std::min(b.acts, u.acts);
    b.held += u.acts && a.per_block ? (u.acts / a.per_block) * kv_block : 0;  // its keys and values stay in the cache
    if (u.kept) b.unsharded -= std::min(b.unsharded, u.unsharded);
    Live post = b;
    if (prefetch == BackwardPrefetch::pre) post.unsharded += next;
    post.comm += u.temps;
    post.held_grads -= std::min(post.held_grads, u.held_grad);
    backward.offer(post, "backward of {} (reduce-scatter)", k);
    b.held_grads -= std::min(b.held_grads, u.held_grad);
    b.grads += u.grad;
  }
  // The optimizer step: every sharded gradient, the states and foreach AdamW's temporary.
  {
    Live at = base;
    at.held_grads = 0;
    at.grads = b.grads;
    at.held = b.held;
    // One state's bytes is the trainable elements' bytes in their own dtype.
    const std::uint64_t one_state =
        opts.optimizer.states > 0 ? state.optimizer / static_cast<std::uint64_t>(opts.optimizer.states) : 0;
    at.optim_temp = one_state * static_cast<std::uint64_t>(opts.optimizer.temporaries);
    optimizer.offer(at, "optimizer step");
  }
  const char* optimizer_name = opts.optimizer.name.c_str();
  const Best* peak = nullptr;
  for (const Best* phase : {&forward, &loss_fwd, &reference, &loss_bwd, &backward, &optimizer}) {
    if (!phase->set) continue;
    out.moments.push_back(moment_of(*phase, units, optimizer_name));
    if (!peak || phase->live.total() > peak->live.total()) peak = phase;
  }
  if (peak) out.peak = moment_of(*peak, units, optimizer_name);
  return out;
}

}  // namespace shardcheck
