// `plan --format json`: the contract CI jobs and the smoke runner read. Keep the names stable.
#include "report/json_writer.hpp"
#include "shardcheck/report.hpp"

namespace shardcheck {
namespace {

template <class T, class F>
void setting(JsonWriter& w, const char* name, const Setting<T>& s, F&& write_value) {
  w.key(name).begin_object();
  w.key("value");
  write_value(s.value);
  w.key("source").value(s.source);
  w.end_object();
}

void settings_json(JsonWriter& w, const FsdpSettings& s) {
  w.key("settings").begin_object();
  auto integer = [&](std::int64_t v) { w.value(v); };
  auto boolean = [&](bool v) { w.value(v); };
  auto text = [&](const std::string& v) { w.value(v); };
  auto version = [&](const Version& v) { w.value(v.str()); };
  setting(w, "world_size", s.world_size, integer);
  setting(w, "num_machines", s.num_machines, integer);
  setting(w, "fsdp_version", s.fsdp_version, integer);
  setting(w, "sharding_strategy", s.sharding_strategy, [&](ShardingStrategy v) { w.value(strategy_name(v)); });
  setting(w, "auto_wrap_policy", s.policy, [&](WrapPolicyKind v) { w.value(policy_name(v)); });
  setting(w, "transformer_layer_cls_to_wrap", s.wrap_classes, [&](const std::vector<std::string>& v) { w.array(v); });
  setting(w, "min_num_params", s.min_num_params, integer);
  setting(w, "use_orig_params", s.use_orig_params, boolean);
  setting(w, "mixed_precision", s.mixed_precision, [&](MixedPrecision v) { w.value(mixed_precision_name(v)); });
  setting(w, "offload_params", s.offload_params, boolean);
  setting(w, "reshard_after_forward", s.reshard_after_forward, [&](const std::optional<bool>& v) {
    if (v)
      w.value(*v);
    else
      w.null();
  });
  setting(w, "activation_checkpointing", s.activation_checkpointing, boolean);
  setting(w, "backward_prefetch", s.backward_prefetch, [&](BackwardPrefetch v) { w.value(prefetch_name(v)); });
  setting(w, "fsdp2_caller", s.fsdp2_caller, [&](Fsdp2Caller v) { w.value(caller_name(v)); });
  setting(w, "dp_replicate", s.dp_replicate, integer);
  setting(w, "tp_size", s.tp_size, integer);
  setting(w, "expert_parallel", s.expert_parallel, boolean);
  setting(w, "cp_size", s.cp_size, integer);
  setting(w, "cp_comm_strategy", s.cp_comm_strategy, text);
  setting(w, "sp_size", s.sp_size, integer);
  setting(w, "frozen", s.frozen, text);
  setting(w, "ignored_modules", s.ignored_modules, text);
  setting(w, "torch_version", s.torch_version, version);
  setting(w, "accelerate_version", s.accelerate_version, version);
  setting(w, "transformers_version", s.transformers_version, version);
  w.end_object();
}

void moment_json(JsonWriter& w, const StepMoment& moment) {
  w.begin_object();
  w.key("moment").value(moment.name);
  w.key("bytes").value(moment.total());
  w.key("parts").begin_array();
  for (const StepPart& p : moment.parts) {
    w.begin_object();
    w.key("what").value(p.what);
    w.key("bytes").value(p.bytes);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

// "step": the replayed step's peak, the moment it happens and what is alive then, and each phase's largest.
void step_json(JsonWriter& w, const StepPeak& step) {
  w.key("step").begin_object();
  w.key("replayed").value(step.available);
  if (!step.available) {
    w.key("why_not").value(step.why_not);
    w.end_object();
    return;
  }
  w.key("rank").value(step.rank);
  w.key("peak");
  moment_json(w, step.peak);
  w.key("phases").begin_array();
  for (const StepMoment& m : step.moments) moment_json(w, m);
  w.end_array();
  w.end_object();
}

// "global_ranks": every rank of the job with its place on the mesh and its total. `ranks` above is per
// index of the shard group (their `rank`); here `rank` is the global rank. With tensor parallelism the
// estimate holds each TP rank's largest shard rank, so a rank's total is that bound.
void global_ranks_json(JsonWriter& w, const MemoryEstimate& m) {
  w.key("global_ranks").begin_array();
  for (const GlobalRank& g : m.global_ranks) {
    const RankMemory* mem = nullptr;
    if (!m.tp_ranks.empty()) {
      for (const auto& t : m.tp_ranks)
        if (t.tp_rank == g.tp_rank) mem = &t.memory;
    } else if (static_cast<std::size_t>(g.shard_rank) < m.ranks.size()) {
      mem = &m.ranks[static_cast<std::size_t>(g.shard_rank)];
    }
    w.begin_object();
    w.key("rank").value(g.rank);
    w.key("shard_rank").value(g.shard_rank);
    w.key("replica").value(g.replica);
    w.key("cp_rank").value(g.cp_rank);
    w.key("tp_rank").value(g.tp_rank);
    if (mem)
      w.key("total").value(mem->total());
    else
      w.key("total").null();
    if (!m.tp_ranks.empty()) w.key("total_is_bound").value(true);
    w.end_object();
  }
  w.end_array();
}

void memory_json(JsonWriter& w, const MemoryEstimate& m) {
  auto rank = [&](const RankMemory& r) {
    w.begin_object();
    w.key("rank").value(r.rank);
    w.key("params").value(r.params);
    w.key("grads").value(r.grads);
    w.key("optimizer").value(r.optimizer);
    w.key("buffers").value(r.buffers);
    if (r.quant_state) w.key("quant_state").value(r.quant_state);
    w.key("transient").value(r.transient);
    w.key("activations").value(r.activations);
    w.key("ignored").value(r.ignored);
    w.key("total").value(r.total());
    w.key("cpu").value(r.cpu);
    w.end_object();
  };
  w.key("memory").begin_object();
  w.key("per_rank_bytes");
  if (m.ranks.empty())
    w.null();
  else
    rank(m.ranks[static_cast<std::size_t>(m.peak_rank)]);
  w.key("ranks").begin_array();
  for (const auto& r : m.ranks) rank(r);
  w.end_array();
  global_ranks_json(w, m);
  w.key("peak_bytes").value(m.peak);
  w.key("peak_rank").value(m.peak_rank);
  w.key("gpu_memory_bytes").value(m.gpu_memory);
  if (!m.gpu_name.empty()) w.key("gpu").value(m.gpu_name);
  w.key("gpu_assumed").value(m.gpu_assumed);
  if (m.verdict == FitVerdict::withheld)
    w.key("fits").null();  // no verdict for a job that fails first
  else
    w.key("fits").value(m.fits);
  w.key("verdict").value(verdict_name(m.verdict));
  if (!m.verdict_reason.empty()) w.key("verdict_reason").value(m.verdict_reason);
  w.key("headroom_bytes").value(m.headroom);
  w.key("transient_is_estimate").value(true);
  w.key("transient_note").value(m.transient_note);
  step_json(w, m.step);
  const ActivationEstimate& a = m.activations;
  w.key("activations").begin_object();
  w.key("estimated").value(a.available);
  if (a.available) {
    w.key("is_estimate").value(true);
    w.key("tokens").value(a.tokens);
    if (a.cp_size > 1) w.key("cp_size").value(a.cp_size);
    w.key("dtype").value(dtype_name(a.dtype));
    w.key("attn_implementation").value(a.attn_implementation);
    w.key("checkpointing").value(a.checkpointing);
    w.key("blocks_bytes").value(a.blocks);
    w.key("recompute_bytes").value(a.recompute);
    w.key("logits_bytes").value(a.logits);
    w.key("masks_bytes").value(a.masks);
    if (a.eager) w.key("eager_scores_bytes").value(a.scores);
    w.key("total_bytes").value(a.total());
    if (a.tp_size > 1) {
      w.key("tp_size").value(a.tp_size);
      w.key("tp_upper_bound").value(a.tp_upper_bound);
    }
  } else {
    w.key("why_not").value(a.why_not);
  }
  w.end_object();
  w.end_object();
}

// "mesh": FSDP2's device mesh, the dims of size above 1 in accelerate's order.
void mesh_json(JsonWriter& w, const ShardPlan& plan) {
  w.key("mesh").begin_object();
  w.key("dims").begin_array();
  for (const MeshDim& d : plan.mesh) {
    w.begin_object();
    w.key("name").value(d.name);
    w.key("size").value(d.size);
    w.end_object();
  }
  w.end_array();
  w.key("rank0_shard_group").array(plan.shard_peers);
  if (!plan.tp_peers.empty()) w.key("rank0_tp_group").array(plan.tp_peers);
  w.end_object();
}

// The units of a plan (`key`: "units"), or of one TP rank's plan: what `smoke --plan` reads back
// (src/smoke/plan_reader.cpp).
void units_json(JsonWriter& w, const char* key, const std::vector<ShardUnit>& units) {
  w.key(key).begin_array();
  for (const auto& u : units) {
    w.begin_object();
    w.key("path").value(u.path);
    w.key("class").value(u.cls);
    if (!u.modules.empty()) w.key("modules").array(u.modules);
    w.key("numel").value(u.numel);
    w.key("padded_numel").value(u.padded_numel);
    w.key("shard_numel").value(u.shard_numel);
    w.key("dtype").value(dtype_name(u.dtype));
    w.key("compute_dtype").value(dtype_name(u.compute_dtype));
    w.key("reduce_dtype").value(dtype_name(u.reduce_dtype));
    w.key("requires_grad").value(u.requires_grad);
    if (u.reshard_after_forward) w.key("reshard_after_forward").value(*u.reshard_after_forward);
    w.key("params").array(u.params);
    w.key("param_numels").array(u.param_numels);
    w.key("rank_pad").array(u.rank_pad);
    if (!u.layout.empty()) {
      w.key("layout").begin_array();
      for (const auto& slot : u.layout) {
        w.begin_object();
        w.key("param").value(slot.padding ? std::string() : slot.fqn);
        w.key("offset").value(slot.offset);
        w.key("numel").value(slot.numel);
        w.end_object();
      }
      w.end_array();
    }
    if (!u.shards.empty()) {
      w.key("param_shards").begin_array();
      for (const auto& ps : u.shards) {
        w.begin_object();
        w.key("param").value(ps.fqn);
        w.key("rows_per_rank").value(ps.rows_per_rank);
        w.key("row_numel").value(ps.row_numel);
        w.end_object();
      }
      w.end_array();
    }
    if (!u.duplicated.empty()) w.key("duplicated").array(u.duplicated);
    w.end_object();
  }
  w.end_array();
}

// "tensor_parallel": which TP rank's local tensors the units hold, every parameter's placement with its
// local shape per TP rank, and the largest per-rank memory of each TP rank.
void tensor_parallel_json(JsonWriter& w, const ShardPlan& plan, const MemoryEstimate& m) {
  const TensorParallelLayout& tp = *plan.tensor_parallel;
  w.key("tensor_parallel").begin_object();
  w.key("tp_size").value(tp.tp_size);
  w.key("plan_tp_rank").value(plan.tp_rank);
  w.key("ranks").begin_array();
  for (const auto& r : m.tp_ranks) {
    w.begin_object();
    w.key("tp_rank").value(r.tp_rank);
    w.key("global_rank").value(r.global_rank);
    w.key("params").value(r.memory.params);
    w.key("grads").value(r.memory.grads);
    w.key("optimizer").value(r.memory.optimizer);
    w.key("total").value(r.memory.total());
    if (static_cast<std::size_t>(r.tp_rank) < plan.tp_unit_set.size())
      w.key("unit_set").value(plan.tp_unit_set[static_cast<std::size_t>(r.tp_rank)]);
    w.end_object();
  }
  w.end_array();
  // Every TP rank's units, once per distinct set (ranks[].unit_set says whose): smoke --plan verifies each.
  w.key("unit_sets").begin_array();
  for (const auto& units : plan.tp_unit_sets) {
    w.begin_object();
    units_json(w, "units", units);
    w.end_object();
  }
  w.end_array();
  w.key("params").begin_array();
  for (const auto& p : tp.params) {
    w.begin_object();
    w.key("name").value(p.fqn);
    if (p.style.empty())
      w.key("style").null();
    else
      w.key("style").value(p.style);
    if (p.dim)
      w.key("dim").value(*p.dim);
    else
      w.key("dim").null();
    w.key("local_shapes").begin_array();
    for (const auto& shape : p.shapes) w.array(shape);
    w.end_array();
    if (p.blocks > 1) w.key("blocks").value(p.blocks);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

void comm_json(JsonWriter& w, const CommVolume& c) {
  auto bytes = [&](const CollectiveBytes& b) {
    w.key("all_gather_bytes").value(b.all_gather);
    w.key("reduce_scatter_bytes").value(b.reduce_scatter);
    w.key("all_reduce_bytes").value(b.all_reduce);
    w.key("all_gathers").value(b.all_gathers);
    w.key("reduce_scatters").value(b.reduce_scatters);
    w.key("all_reduces").value(b.all_reduces);
    if (c.bus_bandwidth || c.inter_node_bandwidth) w.key("seconds").value(b.seconds);
  };
  w.key("comm").begin_object();
  if (c.bus_bandwidth) w.key("bus_bandwidth_bytes_per_s").value(*c.bus_bandwidth);
  if (c.inter_node_bandwidth) w.key("inter_node_bandwidth_bytes_per_s").value(*c.inter_node_bandwidth);
  w.key("per_step").begin_object();
  bytes(c.total);
  w.end_object();
  w.key("units").begin_array();
  for (const auto& u : c.units) {
    w.begin_object();
    w.key("path").value(u.unit);
    bytes(u);
    w.end_object();
  }
  w.end_array();
  if (c.tensor_parallel) {
    const TpTraffic& tp = *c.tensor_parallel;
    w.key("tensor_parallel").begin_object();
    w.key("tp_size").value(tp.tp_size);
    w.key("estimated").value(tp.estimated);
    if (tp.estimated) {
      w.key("tokens").value(tp.tokens);
      bytes(tp.collectives);
    } else {
      w.key("why_not").value(tp.why_not);
    }
    w.end_object();
  }
  if (c.context_parallel) {
    const CpTraffic& cp = *c.context_parallel;
    w.key("context_parallel").begin_object();
    w.key("cp_size").value(cp.cp_size);
    w.key("strategy").value(cp.strategy);
    w.key("estimated").value(cp.estimated);
    if (cp.estimated) {
      w.key("tokens").value(cp.tokens);
      w.key("attention_calls").value(cp.attention_calls);
      w.key("kv_bytes_per_layer").value(cp.kv_bytes);
      w.key("ring_send_bytes").value(cp.ring_send);
      w.key("ring_sends").value(cp.ring_sends);
      bytes(cp.collectives);
    } else {
      w.key("why_not").value(cp.why_not);
    }
    w.end_object();
  }
  w.end_object();
}

}  // namespace

std::string render_plan_json(const ShardPlan& plan, const FsdpSettings& settings, const MemoryEstimate& memory,
                             const CommVolume& comm, const std::vector<Diagnostic>& diagnostics,
                             const PeftSummary* peft) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("world_size").value(plan.world_size);
  w.key("shard_group_size").value(plan.shard_group);
  w.key("replicate_group_size").value(plan.replicate_group);
  w.key("fsdp_version").value(plan.fsdp_version);
  w.key("torch_version").value(plan.torch_version.str());
  w.key("sharding_strategy").value(strategy_name(plan.strategy));
  settings_json(w, settings);
  if (!plan.mesh.empty()) mesh_json(w, plan);
  if (plan.tensor_parallel) tensor_parallel_json(w, plan, memory);
  if (peft) {
    w.key("peft").begin_object();
    w.key("adapter").value(peft->adapter);
    w.key("trainable_params").value(peft->trainable);
    w.key("all_params").value(peft->total);
    w.key("targeted").array(peft->targeted);
    w.key("saved").array(peft->saved);
    w.end_object();
  }
  units_json(w, "units", plan.units);
  w.key("ignored_params").begin_array();
  for (const auto& p : plan.ignored) {
    w.begin_object();
    w.key("param").value(p.fqn);
    w.key("numel").value(p.numel);
    w.key("dtype").value(dtype_name(p.dtype));
    w.end_object();
  }
  w.end_array();
  memory_json(w, memory);
  comm_json(w, comm);
  write_diagnostics(w, diagnostics);
  w.end_object();
  out += '\n';
  return out;
}

}  // namespace shardcheck
