// The shard plan as a table: one line per unit (FSDP1) or fully_shard group (FSDP2), identical
// consecutive units collapsed ("model.layers.{0-31}  32 x LlamaDecoderLayer").
#include <fmt/format.h>

#include <functional>
#include <map>
#include <string_view>
#include <unordered_map>

#include "shardcheck/report.hpp"

namespace shardcheck {
namespace {

// A collective time for people: seconds from 1 s up, else milliseconds.
std::string human_seconds(double seconds) {
  return seconds >= 1 ? fmt::format("{:.2f} s", seconds) : fmt::format("{:.3f} ms", seconds * 1e3);
}

std::string pads(const std::vector<std::int64_t>& v) {
  std::int64_t total = 0;
  for (auto x : v) total += x;
  if (total == 0) return "none";
  std::string s;
  for (std::size_t r = 0; r < v.size(); ++r)
    if (v[r]) s += fmt::format("{}r{}:{}", s.empty() ? "" : " ", r, v[r]);
  return s;
}

// "model.layers.0.mlp" .. "model.layers.31.mlp" -> "model.layers.{0-31}.mlp": the one numeric
// component that differs becomes a range.
std::vector<std::string> split_path(const std::string& p) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t dot; (dot = p.find('.', start)) != std::string::npos; start = dot + 1)
    parts.push_back(p.substr(start, dot - start));
  parts.push_back(p.substr(start));
  return parts;
}

std::string range_label(const std::string& first, const std::string& last) {
  auto a = split_path(first), b = split_path(last);
  if (a.size() == b.size()) {
    int diff = -1, count = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i]) {
        diff = static_cast<int>(i);
        ++count;
      }
    if (count == 1) {
      a[static_cast<std::size_t>(diff)] =
          fmt::format("{{{}-{}}}", a[static_cast<std::size_t>(diff)], b[static_cast<std::size_t>(diff)]);
      std::string out;
      for (const auto& part : a) out += (out.empty() ? "" : ".") + part;
      return out;
    }
  }
  return first + " .. " + last;
}

// What a unit's mark and row print of it: sizes, padding, dtype (or "-" without parameters) and
// whether it stays unsharded. Units equal in these print alike; compared and hashed in place, so
// keying ~2,000 units of a LoRA plan allocates nothing (a formatted key per unit was most of the
// time of a LoRA plan's render).
bool same_shape(const ShardUnit& a, const ShardUnit& b) {
  return a.numel == b.numel && a.shard_numel == b.shard_numel && a.rank_pad == b.rank_pad && a.dtype == b.dtype &&
         a.params.empty() == b.params.empty() && a.reshard_after_forward == b.reshard_after_forward;
}

std::size_t shape_hash(const ShardUnit& u) {
  std::size_t seed = std::hash<std::int64_t>{}(u.numel);
  auto mix = [&](std::size_t v) { seed ^= v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2); };
  mix(std::hash<std::int64_t>{}(u.shard_numel));
  mix(static_cast<std::size_t>(u.dtype));
  return seed;
}

// What makes rows collapsible: the path with its first numeric component (the layer index) as "*",
// the class, and the unit's shape; views into the path it was taken from.
struct UnitKey {
  std::string_view head;  // the path before its first numeric component (all of it when none)
  std::string_view tail;  // after that component
  bool starred = false;   // a numeric component was replaced
  const ShardUnit* unit = nullptr;

  bool operator==(const UnitKey& o) const {
    return head == o.head && tail == o.tail && starred == o.starred && unit->cls == o.unit->cls &&
           same_shape(*unit, *o.unit);
  }
};

struct UnitKeyHash {
  std::size_t operator()(const UnitKey& k) const {
    const std::hash<std::string_view> h;
    return shape_hash(*k.unit) ^ (h(k.head) * 31 + h(k.tail) * 7 + h(k.unit->cls));
  }
};

UnitKey unit_key(const ShardUnit& u, std::string_view path) {
  for (std::size_t start = 0; start <= path.size();) {
    std::size_t dot = path.find('.', start);
    if (dot == std::string_view::npos) dot = path.size();
    const std::string_view part = path.substr(start, dot - start);
    if (!part.empty() && part.find_first_not_of("0123456789") == std::string_view::npos)
      return {path.substr(0, start), path.substr(dot), true, &u};
    start = dot + 1;
  }
  return {path, {}, false, &u};
}

// Whether every instance of a folded unit has instance 0's key (its own path): when its only run's
// index is the first numeric component, the instances differ in that component alone, which the key
// stars. Then no instance's path need be written out to key it (a LoRA plan of a 405B model has
// 1,891 instances of 16 units).
bool key_shared_by_instances(const ShardUnit& u) {
  if (u.repeats.empty()) return true;
  if (u.repeats.size() > 1) return false;
  const UnitKey k = unit_key(u, u.path);
  return k.starred && k.head.size() == u.repeats[0].at;
}

// The materialised plan's rows, in its order, each with its key as a small number: equal numbers,
// collapsible rows.
class UnitRows {
 public:
  explicit UnitRows(const ShardPlan& plan) : plan_(plan) {
    if (plan.sequence.empty())
      for (std::size_t u = 0; u < plan.units.size(); ++u) rows_.push_back({static_cast<int>(u), 0});
    else
      rows_ = plan.sequence;
    // Instances whose keys differ by instance get their paths written out, all before any is viewed.
    std::vector<char> shared(plan.units.size());
    for (std::size_t u = 0; u < plan.units.size(); ++u) shared[u] = key_shared_by_instances(plan.units[u]) ? 1 : 0;
    std::vector<std::size_t> ends(rows_.size(), 0);
    for (std::size_t i = 0; i < rows_.size(); ++i) {
      if (shared[static_cast<std::size_t>(rows_[i].unit)]) continue;
      append_unit_instance_path(names_, unit(i), rows_[i].instance);
      ends[i] = names_.size();
    }
    std::unordered_map<UnitKey, int, UnitKeyHash> ids;
    std::vector<int> shared_id(plan.units.size(), -1);
    keys_.reserve(rows_.size());
    std::size_t start = 0;
    for (std::size_t i = 0; i < rows_.size(); ++i) {
      const auto u = static_cast<std::size_t>(rows_[i].unit);
      auto id_of = [&](std::string_view path) {
        return ids.try_emplace(unit_key(plan.units[u], path), static_cast<int>(ids.size())).first->second;
      };
      if (shared[u]) {
        if (shared_id[u] < 0) shared_id[u] = id_of(plan.units[u].path);
        keys_.push_back(shared_id[u]);
      } else {
        keys_.push_back(id_of(std::string_view(names_).substr(start, ends[i] - start)));
        start = ends[i];
      }
    }
  }

  std::size_t size() const { return rows_.size(); }
  const std::vector<int>& keys() const { return keys_; }
  const ShardUnit& unit(std::size_t i) const { return plan_.units[static_cast<std::size_t>(rows_[i].unit)]; }
  std::string path(std::size_t i) const { return unit_instance_path(unit(i), rows_[i].instance); }

 private:
  const ShardPlan& plan_;
  std::vector<UnitInstance> rows_;
  std::string names_;
  std::vector<int> keys_;
};

// The longest repetition starting at i of a block of `period` units (a decoder layer followed by its
// LoRA units repeats with period 1 + adapters per layer): {period, repetitions}.
std::pair<std::size_t, std::size_t> repetition_at(const std::vector<int>& keys, std::size_t i) {
  std::size_t best_p = 1, best_r = 1;
  for (std::size_t p = 1; p <= 64 && i + 2 * p <= keys.size(); ++p) {
    std::size_t r = 1;
    while (i + (r + 1) * p <= keys.size() &&
           std::equal(keys.begin() + static_cast<std::ptrdiff_t>(i), keys.begin() + static_cast<std::ptrdiff_t>(i + p),
                      keys.begin() + static_cast<std::ptrdiff_t>(i + r * p)))
      ++r;
    if (r >= 2 && r * p > best_r * best_p) {
      best_p = p;
      best_r = r;
    }
  }
  return {best_p, best_r};
}

// The replayed step's peak: the moment, and what is alive at it.
std::string render_step_peak(const StepPeak& step) {
  std::string out = fmt::format("  {:<34} {:>14}   at {} (rank {})\n", "peak of a training step",
                                human_bytes(step.peak.total()), step.peak.name, step.rank);
  for (const StepPart& p : step.peak.parts) out += fmt::format("    {:<44} {:>14}\n", p.what, human_bytes(p.bytes));
  return out;
}

}  // namespace

std::string render_plan_tree_text(const ModuleTree& tree, const ShardPlan& plan, const TextStyle& style) {
  std::vector<std::string> marks(tree.modules.size());
  // A LoRA plan has ~2,000 units in a few dozen shapes: each mark is formatted once per shape.
  struct Shape {
    const ShardUnit* u;
    bool operator==(const Shape& o) const { return same_shape(*u, *o.u); }
  };
  struct ShapeHash {
    std::size_t operator()(const Shape& k) const { return shape_hash(*k.u); }
  };
  std::unordered_map<Shape, std::string, ShapeHash> formatted;
  const std::string what = plan.fsdp_version == 1 ? "FSDP unit" : "fully_shard";
  for (const auto& u : plan.units) {
    const bool kept = u.reshard_after_forward && !*u.reshard_after_forward;
    auto [at, fresh] = formatted.try_emplace(Shape{&u}, std::string());
    if (fresh)
      at->second = fmt::format("<{} {} -> {}/rank, pad {}, {}{}>", what, fmt::group_digits(u.numel),
                               fmt::group_digits(u.shard_numel), pads(u.rank_pad),
                               u.params.empty() ? "-" : dtype_name(u.dtype), kept ? ", kept after forward" : "");
    const std::string& mark = at->second;
    // A fully_shard([a, b]) group is marked on every module it lists.
    if (u.modules.size() > 1) {
      for (std::size_t k = 0; k < tree.modules.size(); ++k)
        for (std::size_t j = 0; j < u.modules.size(); ++j)
          if (tree.modules[k].path == u.modules[j])
            marks[k] = j == 0 ? mark : fmt::format("<in the fully_shard group of {}>", u.modules[0]);
    } else if (u.module >= 0) {
      marks[static_cast<std::size_t>(u.module)] = mark;
    }
  }
  return render_marked_tree_text(tree, marks, style);
}

namespace {

std::string plan_text_bold(const TextStyle& style, const std::string& x) {
  return style.color ? "\x1b[1m" + x + "\x1b[0m" : x;
}

// The plan's first lines: FSDP version and strategy, the mesh, the wrap policy, the adapter.
void plan_text_header(std::string& out, const ShardPlan& plan, const FsdpSettings& s, const TextStyle& style,
                      const PeftSummary* peft) {
  auto bold = [&](const std::string& x) { return plan_text_bold(style, x); };
  out += bold(fmt::format("FSDP{} {}: {} {} over {} rank(s) per shard group", plan.fsdp_version,
                          strategy_name(plan.strategy), plan.unit_count(), plan.fsdp_version == 1 ? "units" : "groups",
                          plan.shard_group));
  if (plan.replicate_group > 1) out += fmt::format(" x {} replicas", plan.replicate_group);
  if (plan.fsdp_version == 2)
    out +=
        fmt::format(" (torch {}, fully_shard calls as {} makes them{})\n", plan.torch_version.str(),
                    s.fsdp2_caller.value == Fsdp2Caller::accelerate ? "accelerate " + s.accelerate_version.value.str()
                                                                    : std::string(caller_name(s.fsdp2_caller.value)),
                    plan.replicate_group > 1 ? ", HSDP 2-D mesh" : "");
  else
    out += fmt::format(" (torch {}, accelerate {}, use_orig_params={})\n", plan.torch_version.str(),
                       s.accelerate_version.value.str(), s.use_orig_params.value ? "True" : "False");
  if (plan.mesh.size() > 1 || plan.tensor_parallel) {
    std::string dims;
    for (const MeshDim& d : plan.mesh) dims += fmt::format("{}{} {}", dims.empty() ? "" : " x ", d.name, d.size);
    out += fmt::format("mesh {}", dims);
    if (plan.tensor_parallel) {
      const TensorParallelLayout& tp = *plan.tensor_parallel;
      out += fmt::format(
          ": tensor parallelism splits {} of {} parameters (transformers {} layout{}); the units below "
          "hold TP rank {}'s pieces",
          tp.split, tp.params.size(), s.transformers_version.value.str(),
          s.expert_parallel.value ? ", expert-parallel plan: whole experts per rank" : "", plan.tp_rank);
    }
    out += "\n";
    const auto ranks = [](const std::vector<int>& v) {
      std::string t;
      for (std::size_t i = 0; i < v.size() && i < 8; ++i) t += fmt::format("{}{}", i ? ", " : "", v[i]);
      return v.size() > 8 ? fmt::format("{}, ... ({} ranks)", t, v.size()) : t;
    };
    out += fmt::format("  rank 0 shards parameters with ranks {}", ranks(plan.shard_peers));
    if (!plan.tp_peers.empty()) out += fmt::format(" and splits tensors with ranks {}", ranks(plan.tp_peers));
    out += "\n";
  }
  std::string classes;
  for (const auto& c : s.wrap_classes.value) classes += (classes.empty() ? "" : ",") + c;
  out +=
      fmt::format("policy {}{} [{}]\n", policy_name(s.policy.value),
                  s.policy.value == WrapPolicyKind::transformer ? " " + classes
                  : s.policy.value == WrapPolicyKind::size ? fmt::format(" min_num_params={}", s.min_num_params.value)
                                                           : std::string(),
                  s.policy.value == WrapPolicyKind::transformer ? s.wrap_classes.source : s.policy.source);
  if (peft) out += peft_trainable_line(peft->adapter, peft->trainable, peft->total) + "\n";
  out += "\n";
}

// One row per unit; identical consecutive units, or a repeated block of them, collapse into one.
void plan_text_units(std::string& out, const ShardPlan& plan) {
  out += fmt::format("  {:<34} {:<30} {:>15} {:>15}  {:<6} {}\n", "unit", "class", "numel", "shard/rank", "dtype",
                     "padding by rank");
  const UnitRows rows(plan);
  const std::vector<int>& keys = rows.keys();
  auto row = [&](std::size_t first, std::size_t last, std::size_t run) {
    const ShardUnit& u = rows.unit(first);
    const std::string label = run > 1 ? range_label(rows.path(first), rows.path(last)) : module_label(rows.path(first));
    std::string cls = run > 1 ? fmt::format("{} x {}", run, u.cls) : u.cls;
    if (u.modules.size() > 1) {
      cls.clear();
      for (const auto& m : u.modules) cls += (cls.empty() ? "[" : ", ") + m;
      cls += "]";
    }
    out += fmt::format("  {:<34} {:<30} {:>15} {:>15}  {:<6} {}{}\n", label, cls, fmt::group_digits(u.numel),
                       fmt::group_digits(u.shard_numel), u.params.empty() ? "-" : dtype_name(u.dtype), pads(u.rank_pad),
                       u.reshard_after_forward && !*u.reshard_after_forward ? "  (kept after forward)" : "");
  };
  for (std::size_t i = 0; i < rows.size();) {
    // Identical consecutive units, or a repeated block of them (a layer and its LoRA units), collapse.
    std::size_t run = 1;
    while (i + run < rows.size() && keys[i + run] == keys[i]) ++run;
    const auto [period, reps] = repetition_at(keys, i);
    if (reps >= 2 && period > 1 && period * reps > run) {
      for (std::size_t k = 0; k < period; ++k) row(i + k, i + (reps - 1) * period + k, reps);
      i += period * reps;
      continue;
    }
    row(i, i + run - 1, run);
    i += run;
  }
}

// The activations line of the memory table.
std::string plan_text_activations(const RankMemory& r, const ActivationEstimate& act) {
  const std::string blocks = act.checkpointing ? fmt::format("checkpointed block inputs {} + one recomputed block {}",
                                                             human_bytes(act.blocks), human_bytes(act.recompute))
                                               : fmt::format("blocks {}", human_bytes(act.blocks));
  const std::string tp = act.tp_size <= 1 ? ""
                         : act.tp_upper_bound
                             ? fmt::format(
                                   " (tp {}: the unsplit model's, an upper bound: no TP model for this "
                                   "architecture)",
                                   act.tp_size)
                             : fmt::format(" (this TP rank's pieces of {} ranks)", act.tp_size);
  const std::string cp =
      act.cp_size > 1 ? fmt::format(" (this rank's piece of the sequence over {} CP ranks)", act.cp_size) : "";
  const std::string masks =
      act.masks ? fmt::format("; sliding-window masks {}", human_bytes(act.masks)) : std::string();
  const std::string scores =
      act.eager ? fmt::format("; eager attention's seq x seq probabilities {}", human_bytes(act.scores))
                : std::string();
  const std::string attn = act.attn_implementation.empty() ? "" : " with " + act.attn_implementation + " attention";
  return fmt::format("  {:<34} {:>14}   estimate: {} tokens{} in {}{}; {}; logits {}{}{}{}\n", "activations",
                     human_bytes(r.activations), fmt::group_digits(act.tokens), cp, dtype_name(act.dtype), attn, blocks,
                     human_bytes(act.logits), masks, scores, tp);
}

// The fit verdict under the memory table.
void plan_text_verdict(std::string& out, const MemoryEstimate& mem, const TextStyle& style) {
  auto bold = [&](const std::string& x) { return plan_text_bold(style, x); };
  const auto headroom = static_cast<std::uint64_t>(mem.headroom < 0 ? -mem.headroom : mem.headroom);
  switch (mem.verdict) {
    case FitVerdict::fits:
      out += bold(mem.step.available
                      ? fmt::format("fits in {} with {} headroom ({} of it kept as the margin for the CUDA "
                                    "context, NCCL and the allocator)\n",
                                    gpu_label(mem), human_bytes(headroom), human_bytes(mem.margin))
                      : fmt::format("fits in {} with {} headroom\n", gpu_label(mem), human_bytes(headroom)));
      break;
    case FitVerdict::fits_without_activations:
      out +=
          bold(fmt::format("parameters, gradients and optimizer states fit in {} with {} headroom; activations "
                           "not estimated (give --seq-len and --micro-batch for a fit verdict)\n",
                           gpu_label(mem), human_bytes(headroom)));
      break;
    case FitVerdict::does_not_fit:
      out += bold(fmt::format("DOES NOT FIT in {}: {} short\n", gpu_label(mem), human_bytes(headroom)));
      break;
    case FitVerdict::may_not_fit:
      out += bold(
          fmt::format("MAY NOT FIT in {}: a real step holds {} to {} with the margin of {} for the CUDA "
                      "context, NCCL and the allocator\n",
                      gpu_label(mem), human_bytes(mem.certain), human_bytes(mem.with_margin), human_bytes(mem.margin)));
      break;
    case FitVerdict::not_estimated:
      out +=
          bold(fmt::format("fit not estimated: the optimizer {} is not modelled (rules/optimizers.yaml); "
                           "counted as adamw_torch\n",
                           mem.optimizer));
      break;
    case FitVerdict::withheld:
      out += bold(fmt::format("no fit verdict: {}; the figures above are what FSDP would hold once that is fixed\n",
                              mem.verdict_reason));
      break;
  }
}

// Memory per rank of the rank with the largest peak, and the verdict.
void plan_text_memory(std::string& out, const ShardPlan& plan, const MemoryEstimate& mem, const TextStyle& style) {
  if (mem.ranks.empty()) return;
  const RankMemory& r = mem.ranks[static_cast<std::size_t>(mem.peak_rank)];
  if (mem.tp_ranks.empty()) {
    out += fmt::format("\nmemory per rank (rank {}, the largest):\n", r.rank);
  } else {
    std::string each;
    for (const auto& t : mem.tp_ranks)
      each += fmt::format("{}TP rank {} (rank {}) {}", each.empty() ? "" : ", ", t.tp_rank, t.global_rank,
                          human_bytes(t.memory.total()));
    out += fmt::format("\nlargest per rank of each TP rank's group: {}\n", each);
    out += fmt::format("memory per rank (rank {} of TP rank {}'s group, the largest):\n", r.rank, plan.tp_rank);
  }
  out += fmt::format("  {:<34} {:>14}\n", "sharded parameters", human_bytes(r.params));
  out += fmt::format("  {:<34} {:>14}\n", "sharded gradients", human_bytes(r.grads));
  out +=
      fmt::format("  {:<34} {:>14}\n", fmt::format("optimizer states ({})", mem.optimizer), human_bytes(r.optimizer));
  out += fmt::format("  {:<34} {:>14}\n", "buffers", human_bytes(r.buffers));
  if (r.quant_state)
    out += fmt::format("  {:<34} {:>14}   absmax and codes of the 4-bit weights, whole on every rank\n",
                       "4-bit quantization state", human_bytes(r.quant_state));
  out += fmt::format("  {:<34} {:>14}   estimate: {}\n", "unsharded params + grad buffers", human_bytes(r.transient),
                     mem.transient_note);
  const ActivationEstimate& act = mem.activations;
  if (act.available) out += plan_text_activations(r, act);
  if (r.ignored)
    out += fmt::format("  {:<34} {:>14}   {} parameters of ignored modules, whole on every rank\n",
                       "ignored modules (not sharded)", human_bytes(r.ignored), plan.ignored.size());
  if (r.cpu) out += fmt::format("  {:<34} {:>14}\n", "pinned CPU memory (offload)", human_bytes(r.cpu));
  if (mem.step.available) {
    out += fmt::format("  {:<34} {:>14}   each at its own largest; the step's peak is what is alive at once:\n",
                       "sum of the categories above", human_bytes(r.total()));
    out += render_step_peak(mem.step);
  } else {
    out += fmt::format("  {:<34} {:>14}{}\n", "total", human_bytes(r.total()),
                       act.available ? "" : fmt::format("   (activations not included: {})", act.why_not));
  }
  plan_text_verdict(out, mem, style);
}

// FSDP's collectives per step, and their time at the given bandwidths.
void plan_text_fsdp_traffic(std::string& out, const ShardPlan& plan, const CommVolume& comm) {
  out += fmt::format("\ncommunication per step per rank: all-gather {} ({} calls), reduce-scatter {} ({} calls)",
                     human_bytes(comm.total.all_gather), comm.total.all_gathers, human_bytes(comm.total.reduce_scatter),
                     comm.total.reduce_scatters);
  if (comm.total.all_reduces)
    out += fmt::format(", all-reduce {} ({} calls)", human_bytes(comm.total.all_reduce), comm.total.all_reduces);
  out += "\n";
  if (comm.bus_bandwidth || comm.inter_node_bandwidth) {
    std::string at = comm.bus_bandwidth ? fmt::format("a bus bandwidth of {:.1f} GB/s", *comm.bus_bandwidth / 1e9)
                                        : std::string("no bus bandwidth within a machine");
    std::string across;
    if (plan.shard_spans_nodes) across += "the shard group";
    if (plan.replicate_spans_nodes) across += across.empty() ? "the replicas" : " and the replicas";
    if (comm.inter_node_bandwidth)
      at += fmt::format(" ({:.1f} GB/s across machines{})", *comm.inter_node_bandwidth / 1e9,
                        across.empty() ? ": no group crosses them" : ", for " + across);
    out += fmt::format("  at {}: {} of collectives per step (before any overlap with compute)\n", at,
                       human_seconds(comm.total.seconds));
  }
}

void plan_text_tp_traffic(std::string& out, const TpTraffic& tp) {
  if (!tp.estimated) {
    out +=
        fmt::format("tensor parallelism's all-reduces (over {} TP ranks) not estimated: {}\n", tp.tp_size, tp.why_not);
  } else {
    out += fmt::format("tensor parallelism per step per rank: all-reduce {} ({} calls)",
                       human_bytes(tp.collectives.all_reduce), tp.collectives.all_reduces);
    if (tp.collectives.all_gathers)
      out +=
          fmt::format(", all-gather {} ({} calls)", human_bytes(tp.collectives.all_gather), tp.collectives.all_gathers);
    out += fmt::format(" over the {} ranks of its TP group, for {} tokens", tp.tp_size, fmt::group_digits(tp.tokens));
    if (tp.bandwidth)
      out += fmt::format("; {} at {:.1f} GB/s", human_seconds(tp.collectives.seconds), *tp.bandwidth / 1e9);
    out += "\n";
  }
}

void plan_text_cp_traffic(std::string& out, const CpTraffic& cp) {
  if (!cp.estimated) {
    out += fmt::format("context parallelism's key/value exchanges (over {} CP ranks) not estimated: {}\n", cp.cp_size,
                       cp.why_not);
  } else {
    out += fmt::format("context parallelism per step per rank ({}, {} tokens each of {} CP ranks): ", cp.strategy,
                       fmt::group_digits(cp.tokens), cp.cp_size);
    if (cp.collectives.all_gathers)
      out +=
          fmt::format("all-gather {} ({} calls), ", human_bytes(cp.collectives.all_gather), cp.collectives.all_gathers);
    out += fmt::format("ring sends {} ({} calls) of keys and values ({} per layer) and their gradients",
                       human_bytes(cp.ring_send), cp.ring_sends, human_bytes(cp.kv_bytes));
    if (cp.bandwidth)
      out += fmt::format("; {} at {:.1f} GB/s", human_seconds(cp.collectives.seconds), *cp.bandwidth / 1e9);
    out += "\n";
  }
}

}  // namespace

std::string render_plan_text(const ShardPlan& plan, const FsdpSettings& s, const MemoryEstimate& mem,
                             const CommVolume& comm, const TextStyle& style, const PeftSummary* peft) {
  std::string out;
  plan_text_header(out, plan, s, style, peft);
  plan_text_units(out, plan);
  plan_text_memory(out, plan, mem, style);
  plan_text_fsdp_traffic(out, plan, comm);
  if (comm.tensor_parallel) plan_text_tp_traffic(out, *comm.tensor_parallel);
  if (comm.context_parallel) plan_text_cp_traffic(out, *comm.context_parallel);
  return out;
}

}  // namespace shardcheck
