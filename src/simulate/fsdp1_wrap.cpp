// FSDP1 auto wrap: which modules become FullyShardedDataParallel units and which parameters each
// flattens. Reproduces torch/distributed/fsdp/wrap.py `_recursive_wrap` (identical logic in 1.13
// and 2.x), the policies accelerate builds (utils/dataclasses.py `set_auto_wrap_policy`: transformer
// or size, never combined), the 2.1+ mixed-precision OR-policy of _wrap_utils.py, and parameter
// ownership/order of flat_param.py.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <regex>

#include "shardcheck/finding_codes.hpp"
#include "shardcheck/repeated_blocks.hpp"
#include "simulate/plan_internal.hpp"
#include "simulate/unit_diagnostics.hpp"

namespace shardcheck {
namespace {

class Fsdp1Wrapper {
 public:
  Fsdp1Wrapper(const ModuleTree& tree, const FsdpSettings& s, const ParamTable& params, int shard_group, bool sharded,
               int rank)
      : tree_(tree),
        s_(s),
        params_(params),
        shard_group_(shard_group),
        rank_(rank),
        unit_of_(tree.modules.size(), -1),
        flattened_(params.size(), 0),
        visible_numel_(params.size(), 0),
        counted_in_(params.size(), 0) {
    const Version& tv = s.torch_version.value;
    // Mixed precision + auto wrap: BatchNorm modules become their own units (with mixed precision
    // disabled). 1.13/2.0 (fully_sharded_data_parallel.py): only when the model has a _BatchNorm,
    // OR(_wrap_batchnorm_individually, policy). 2.1+ (_wrap_utils.py _auto_wrap): always, with
    // OR(policy, _wrap_module_cls_individually(_BatchNorm)). Either OR answers True to every
    // recurse question, so even force-leaf modules (MultiheadAttention) are entered.
    if (s.param_dtype() && s.policy.value != WrapPolicyKind::none) {
      bool has_bn = false;
      for (const auto& m : tree.modules) has_bn = has_bn || is_batchnorm(m);
      bn_override_ = tv >= Version{2, 1, 0} || has_bn;
    }
    orig_params_ = s.use_orig_params.value && tv >= Version{2, 0, 0};
    sharded_views_ = orig_params_ && sharded;
    // isinstance(module, wrap classes): the few class names that are instances, compared with each
    // module's class (a PeftModel has ~10k modules of ~30 classes).
    std::vector<std::string> wrapping;
    for (const auto& cls : s.wrap_classes.value)
      for (auto& c : tree.subclasses_of(cls)) wrapping.push_back(std::move(c));
    wrap_class_.reserve(tree.modules.size());
    for (const Module& m : tree.modules)
      wrap_class_.push_back(std::find(wrapping.begin(), wrapping.end(), m.cls) != wrapping.end());
  }

  std::vector<std::vector<int>> run() {
    if (s_.policy.value != WrapPolicyKind::none) recursive_wrap(0, /*only_wrap_children=*/true);
    make_unit(0);  // the root is always a unit (fully_sharded_data_parallel.py __init__)
    return std::move(unit_params_);
  }
  const std::vector<int>& unit_modules() const { return unit_modules_; }
  // A size policy counted a tied weight through the rank's slice (visible_numel), so other ranks may
  // decide otherwise.
  bool counted_rank_slices() const { return counted_rank_slices_; }

 private:
  const ModuleTree& tree_;
  const FsdpSettings& s_;
  const ParamTable& params_;
  int shard_group_ = 1;
  int rank_ = 0;  // within the shard group: whose slices a size policy counts
  bool bn_override_ = false;
  bool orig_params_ = false;
  bool sharded_views_ = false;  // use_orig_params=True under a sharded strategy
  mutable bool counted_rank_slices_ = false;
  std::vector<int> unit_of_;                   // module -> unit index or -1
  std::vector<int> unit_modules_;              // creation order (post-order)
  std::vector<std::vector<int>> unit_params_;  // param-table indices per unit, flat order
  std::vector<char> flattened_;                // storage -> use_orig_params=True: _fsdp_flattened mark
  std::vector<std::int64_t> visible_numel_;    // storage -> numel() of the Parameter once flattened
  std::vector<char> wrap_class_;               // module -> an instance of one of the wrap classes
  // Storage -> the last walk that counted it, so that one walk counts a shared storage once
  // without a set per walk (recursive_wrap walks every subtree it asks about: DeepSeek-V3's ~1.2k
  // modules cost a hash set and its allocations each; now a compare per parameter).
  mutable std::vector<std::uint32_t> counted_in_;
  mutable std::uint32_t walk_ = 0;

  bool is_flattened(int storage) const { return orig_params_ && flattened_[static_cast<std::size_t>(storage)]; }
  // True the first time a walk meets `storage`.
  bool first_in_walk(int storage) const {
    std::uint32_t& seen = counted_in_[static_cast<std::size_t>(storage)];
    if (seen == walk_) return false;
    seen = walk_;
    return true;
  }

  bool is_batchnorm(const Module& m) const { return tree_.is_instance(m, "_BatchNorm"); }

  bool policy(int m, bool recurse, std::int64_t n) const {
    if (bn_override_ && (recurse || is_batchnorm(tree_.modules[m]))) return true;
    return base_policy(m, recurse, n);
  }

  bool base_policy(int m, bool recurse, std::int64_t n) const {
    const Module& mod = tree_.modules[m];
    switch (s_.policy.value) {
      case WrapPolicyKind::none:
        return false;
      case WrapPolicyKind::peft: {
        // peft utils/other.py fsdp_auto_wrap_policy: _or_policy(lambda_auto_wrap_policy(leaf with a
        // trainable `weight`), transformer_auto_wrap_policy(classes)); both answer True to recurse.
        if (recurse) return true;
        if (mod.children.empty())
          for (int pidx : params_.by_module(m)) {
            // Its own `weight`: the fqn is the module's path and ".weight" (or "weight" at the root).
            const std::string_view fqn = params_[pidx].fqn;
            if (fqn.size() == mod.path.size() + (mod.path.empty() ? 6 : 7) && fqn.ends_with("weight") &&
                params_[pidx].requires_grad)
              return true;
          }
        return wrap_class_[static_cast<std::size_t>(m)] != 0;
      }
      case WrapPolicyKind::transformer:
        // transformer_auto_wrap_policy: recurse always; wrap iff isinstance(module, classes).
        return recurse || wrap_class_[static_cast<std::size_t>(m)] != 0;
      case WrapPolicyKind::size: {
        // size_based_auto_wrap_policy: is_large = n >= min_num_params; never recurse into
        // FORCE_LEAF_MODULES (MultiheadAttention), never wrap EXCLUDE_WRAP_MODULES (containers).
        const bool large = n >= s_.min_num_params.value;
        if (recurse) return large && !tree_.is_instance(mod, "MultiheadAttention");
        return large && !tree_.is_instance(mod, "ModuleList") && !tree_.is_instance(mod, "ModuleDict");
      }
    }
    return false;
  }

  // wrap.py _recursive_wrap: nonwrapped_numel = sum(p.numel() for p in module.parameters() if p not
  // in ignored_params), taken before the module's own subtree is wrapped ("assuming none of them are
  // already wrapped"): every storage once. A tied alias whose target an earlier unit already took
  // still counts, because the alias's module keeps the original Parameter whatever use_orig_params
  // is (False: the other unit de-registers only its own subtree's; True: FSDP only marks it
  // flattened), so a size policy can still make that module a unit (torch 2.14.1 oracle,
  // gpt2-fsdp1-size300-noshard-orig-w3: an empty lm_head unit).
  //
  // Under a sharded strategy with use_orig_params=True, though, FSDP has already pointed that
  // Parameter's data at the rank's slice of the flat shard (_flat_param.py _use_sharded_views, at
  // the end of the earlier unit's construction): p.numel() is the slice, empty on ranks whose shard
  // holds none of it (torch 2.14.1, fuzz seed 1). NO_SHARD's slice is the whole tensor.
  std::int64_t available_numel(int m) const {
    ++walk_;
    std::int64_t n = 0;
    visit_registrations(m, [&](int pidx) {
      const int storage = params_[pidx].storage;
      if (!first_in_walk(storage)) return;
      if (sharded_views_ && flattened_[static_cast<std::size_t>(storage)]) {
        n += visible_numel_[static_cast<std::size_t>(storage)];
        counted_rank_slices_ = true;
      } else {
        n += params_[pidx].numel;
      }
    });
    return n;
  }

  // Each owned Parameter's part of this rank's shard, laid out as flat_unit lays out the unit
  // (alignment padding under use_orig_params, the world-size padding of torch >= 2.1).
  void record_rank_slices(const std::vector<int>& owned) {
    if (owned.empty()) return;
    const std::int64_t align = flat_alignment_numel(s_, params_[owned.front()].dtype);
    std::vector<std::int64_t> offsets;
    std::int64_t total = 0;
    for (int pidx : owned) {
      if (total % align != 0) total += align - total % align;
      offsets.push_back(total);
      total += params_[pidx].numel;
    }
    const int w = shard_group_;
    if (s_.torch_version.value >= Version{2, 1, 0} && total % w != 0) total += w - total % w;
    const std::int64_t shard = chunk_size(total, w);
    const std::int64_t lo = shard * rank_, hi = lo + shard;
    for (std::size_t i = 0; i < owned.size(); ++i) {
      const std::int64_t begin = offsets[i], end = begin + params_[owned[i]].numel;
      visible_numel_[static_cast<std::size_t>(params_[owned[i]].storage)] =
          std::max<std::int64_t>(0, std::min(end, hi) - std::max(begin, lo));
    }
  }

  // Pre-order walk of parameter registrations below m, skipping subtrees already wrapped.
  template <class F>
  void visit_registrations(int m, F&& f) const {
    // Ignored modules' parameters are in no flat parameter and in no numel count (wrap.py
    // `_recursive_wrap` subtracts ignored_params; _init_utils.py `_get_ignored_params`).
    // A Parameter is ignored as an object: a tied weight whose other name sits under an ignored
    // module is skipped here too.
    if (params_.ignored_module(m)) return;
    for (int pidx : params_.by_module(m))
      if (!params_[pidx].ignored) f(pidx);
    for (int c : tree_.modules[m].children)
      if (unit_of_[c] < 0) visit_registrations(c, f);
  }

  std::int64_t recursive_wrap(int m, bool only_wrap_children) {
    // Only the size policy reads nonwrapped_numel; for the others torch's sum changes nothing, and
    // on a PeftModel (tens of thousands of modules) walking every subtree at every level would be
    // most of the simulation.
    const std::int64_t n = s_.policy.value == WrapPolicyKind::size ? available_numel(m) : 0;
    if (!policy(m, /*recurse=*/true, n)) return 0;
    std::int64_t wrapped = 0;
    for (int c : tree_.modules[m].children)
      if (!params_.ignored_module(c)) wrapped += recursive_wrap(c, false);  // `if child in ignored_modules: continue`
    const std::int64_t remainder = n - wrapped;
    if (!only_wrap_children && policy(m, /*recurse=*/false, remainder)) {
      make_unit(m);
      return n;
    }
    return wrapped;
  }

  void make_unit(int m) {
    std::vector<int> owned;
    ++walk_;
    visit_registrations(m, [&](int pidx) {
      const int storage = params_[pidx].storage;
      if (is_flattened(storage)) return;
      if (!first_in_walk(storage)) return;  // shared within the unit: stored once (SharedParamInfo)
      owned.push_back(pidx);
    });
    for (int pidx : owned) flattened_[static_cast<std::size_t>(params_[pidx].storage)] = 1;
    if (sharded_views_) record_rank_slices(owned);
    unit_of_[m] = static_cast<int>(unit_modules_.size());
    unit_modules_.push_back(m);
    unit_params_.push_back(std::move(owned));
  }
};

// use_orig_params=True keeps every original parameter registered, its data a view into the unit's
// sharded flat parameter (torch/distributed/fsdp/_flat_param.py _use_sharded_views). When the owning
// unit unshards, it re-points only the registrations inside its own module subtree
// (_use_unsharded_views sets the attribute on each (module, name) of its _param_infos); a tied alias
// on a module of another unit keeps the original Parameter and so the rank's 1-D shard, under every
// sharded strategy. Real torch 2.14.1 raises "RuntimeError: size mismatch, got input (5), mat (5x20),
// vec (148)" in the tied LM head's F.linear at the first forward with FULL_SHARD and SHARD_GRAD_OP;
// NO_SHARD's "shard" is the whole parameter and runs (fixtures/oracle2/*-size300-*orig-*). With
// use_orig_params=False the outer unit flattens the parameter again instead (PLAN004).
void check_tied_views(const ModuleTree& tree, const FsdpSettings& s, const ShardPlan& plan, const ParamTable& params,
                      const std::vector<int>& unit_modules, const std::vector<int>& holder, DiagnosticSink& sink) {
  if (!s.use_orig_params.value || plan.strategy == ShardingStrategy::no_shard) return;
  std::vector<int> unit_at(tree.modules.size(), -1);
  for (std::size_t u = 0; u < unit_modules.size(); ++u)
    unit_at[static_cast<std::size_t>(unit_modules[u])] = static_cast<int>(u);
  auto managing_unit = [&](int m) {
    while (m >= 0 && unit_at[static_cast<std::size_t>(m)] < 0) m = tree.modules[static_cast<std::size_t>(m)].parent;
    return m < 0 ? -1 : unit_at[static_cast<std::size_t>(m)];
  };
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ParamEntry& p = params[static_cast<int>(i)];
    if (p.ignored || p.storage == static_cast<int>(i)) continue;  // only a tied alias can sit elsewhere
    const int owner = holder[static_cast<std::size_t>(p.storage)];
    if (owner < 0) continue;
    const int owner_module = unit_modules[static_cast<std::size_t>(owner)];
    const int user = managing_unit(p.module);
    if (user == owner) continue;
    const ParamEntry& target = params[p.storage];
    std::int64_t shard = 0;
    for (const auto& u : plan.units)
      if (u.module == owner_module) shard = u.shard_numel;
    const Module& mod = tree.modules[static_cast<std::size_t>(p.module)];
    const std::string& owner_path = tree.modules[static_cast<std::size_t>(owner_module)].path;
    sink.report(finding(
        "PLAN020", model_location(tree, mod.path),
        fmt::format(
            "RuntimeError: size mismatch, got input (tokens), mat (tokens x {}), vec ({}) at the first forward: '{}' "
            "uses "
            "'{}', the tied parameter '{}' that unit '{}' flattened; with use_orig_params=True that unit unshards only "
            "its own modules' registrations, so '{}' runs on the rank's 1-D shard",
            target.shape.size() > 1 ? target.shape.back() : target.numel, shard, mod.path, p.fqn, target.fqn,
            owner_path, mod.path),
        fmt::format("keep '{}' and '{}' in one unit: TRANSFORMER_BASED_WRAP leaves a tied embedding and head in the "
                    "root unit; or use_orig_params: false (the head then gets its own flattened copy, PLAN004); "
                    "NO_SHARD is not affected",
                    owner_path, mod.path)));
    return;  // torch stops at the first one
  }
}

// A unit of a folded tree: how many it stands for, and where its path names repeated modules.
void set_instances(const ModuleTree& tree, ShardUnit& unit) {
  for (int m = unit.module; m > 0; m = tree.modules[static_cast<std::size_t>(m)].parent) {
    const Module& mod = tree.modules[static_cast<std::size_t>(m)];
    if (mod.repeat == 1) continue;
    ShardUnit::RepeatIndex r;
    r.at = mod.path.size() - mod.name.size();
    r.len = mod.name.size();
    r.first = std::stoll(mod.name);
    r.count = mod.repeat;
    unit.instances *= mod.repeat;
    unit.repeats.insert(unit.repeats.begin(), r);
  }
}

// The materialised plan's units in their order (pre-order of the materialised tree), walking each
// run as often as it repeats, through the subtrees that hold units only.
std::vector<UnitInstance> materialised_order(const ModuleTree& tree, const ShardPlan& plan) {
  const std::size_t n = tree.modules.size();
  std::vector<int> unit_at(n, -1);
  std::vector<char> holds(n, 0);
  for (std::size_t u = 0; u < plan.units.size(); ++u) {
    unit_at[static_cast<std::size_t>(plan.units[u].module)] = static_cast<int>(u);
    holds[static_cast<std::size_t>(plan.units[u].module)] = 1;
  }
  for (std::size_t i = n; i-- > 1;)
    if (holds[i]) holds[static_cast<std::size_t>(tree.modules[i].parent)] = 1;
  std::vector<std::int64_t> visits(n, 0);
  std::vector<UnitInstance> order;
  std::size_t total = 0;
  for (const ShardUnit& u : plan.units) total += static_cast<std::size_t>(u.instances);
  order.reserve(total);
  auto walk = [&](auto& self, int m) -> void {
    const std::int64_t k = visits[static_cast<std::size_t>(m)]++;
    if (unit_at[static_cast<std::size_t>(m)] >= 0) order.push_back({unit_at[static_cast<std::size_t>(m)], k});
    for (const int c : tree.modules[static_cast<std::size_t>(m)].children)
      if (holds[static_cast<std::size_t>(c)])
        for (int r = 0; r < tree.modules[static_cast<std::size_t>(c)].repeat; ++r) self(self, c);
  };
  walk(walk, 0);
  return order;
}

}  // namespace

void append_unit_instance_path(std::string& out, const ShardUnit& u, std::int64_t k) {
  std::size_t pos = 0;
  for (std::size_t i = 0; i < u.repeats.size(); ++i) {
    std::int64_t inner = 1;  // instances of the runs inside this one, per step of its index
    for (std::size_t j = i + 1; j < u.repeats.size(); ++j) inner *= u.repeats[j].count;
    out.append(u.path, pos, u.repeats[i].at - pos);
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, u.repeats[i].first + k / inner % u.repeats[i].count);
    out.append(digits, end.ptr);
    pos = u.repeats[i].at + u.repeats[i].len;
  }
  out.append(u.path, pos);
}

std::string unit_instance_path(const ShardUnit& u, std::int64_t k) {
  std::string out;
  append_unit_instance_path(out, u, k);
  return out;
}

// An FSDP1 unit unshards in its module's forward (fully_sharded_data_parallel.py forward ->
// _pre_forward). A ModuleList or ModuleDict has no forward its parent calls: the parent iterates it
// and calls the layers directly, so the unit never all-gathers and the layers run on the rank's
// sharded views. Real torch 2.14.1 (fuzz seed 2, use_orig_params=True, SHARD_GRAD_OP): "RuntimeError:
// The size of tensor a (0) must match the size of tensor b (20) at non-singleton dimension 2" in the
// first layer's norm; use_orig_params=False (fuzz seed 3, cwm): "Output 0 of View is a view and its
// base ... has been modified inplace". A shard group of one rank holds everything and runs.
static void check_uncalled_containers(const ModuleTree& tree, const FsdpSettings& s, const ShardPlan& plan,
                                      DiagnosticSink& sink) {
  if (plan.strategy == ShardingStrategy::no_shard || plan.shard_group <= 1) return;
  for (const ShardUnit& u : plan.units) {
    if (u.module <= 0 || u.params.empty()) continue;
    const Module& mod = tree.modules[static_cast<std::size_t>(u.module)];
    if (!tree.is_instance(mod, "ModuleList") && !tree.is_instance(mod, "ModuleDict")) continue;
    sink.report(finding(
        "PLAN037", model_location(tree, u.path),
        fmt::format("RuntimeError at the first forward (torch 2.14.1: \"{}\" in the first layer): the FSDP unit '{}' "
                    "wraps a {}, whose forward nobody calls (its parent iterates it), so FSDP never all-gathers it "
                    "and its layers run on each rank's shard",
                    // use_orig_params=True: the parameters are 1-D views of the rank's shard; False: views of
                    // the flat parameter FSDP never unsharded (fuzz seed 3, cwm).
                    s.use_orig_params.value ? "The size of tensor a (0) must match the size of tensor b (...)"
                                            : "Output 0 of View is a view and its base or another view of its base has "
                                              "been modified inplace. This view is the output of a function that "
                                              "returns multiple views.",
                    u.path, mod.cls),
        "wrap the layers, not their container: name the decoder layer class in "
        "fsdp_transformer_layer_cls_to_wrap (not ModuleList)"));
    return;  // the first forward stops at the first one
  }
}

// When a size policy counted a tied weight through rank 0's slice, every rank of the shard group
// decides for itself; ranks that build different units run different collectives.
static void check_ranks_wrap_alike(const ModuleTree& tree, const FsdpSettings& s, const ParamTable& params,
                                   const ShardPlan& plan, const std::vector<int>& rank0_units, DiagnosticSink& sink) {
  for (int r = 1; r < plan.shard_group; ++r) {
    Fsdp1Wrapper other(tree, s, params, plan.shard_group, true, r);
    other.run();
    if (other.unit_modules() == rank0_units) continue;
    const auto path_of = [&](const std::vector<int>& units) {
      std::string out;
      for (int m : units) out += (out.empty() ? "'" : ", '") + tree.modules[static_cast<std::size_t>(m)].path + "'";
      return out;
    };
    sink.report(finding(
        "PLAN035", model_location(tree, ""),
        fmt::format("ranks 0 and {} wrap different FSDP units: the size policy counts a tied weight that an earlier "
                    "unit flattened through each rank's own slice of it (use_orig_params=True), so rank 0 builds "
                    "units at {} and rank {} at {}; their collectives do not match",
                    r, path_of(rank0_units), r, path_of(other.unit_modules())),
        "use TRANSFORMER_BASED_WRAP (a tied embedding and head stay in the root unit), use_orig_params: false, or a "
        "min_num_params that no tied module's size is near"));
    return;
  }
}

ShardPlan plan_fsdp1(const ModuleTree& tree, const FsdpSettings& s, DiagnosticSink& sink) {
  ShardPlan plan = plan_header(s, 1);
  const ParamTable params(tree, s);
  const bool sharded = plan.strategy != ShardingStrategy::no_shard;
  Fsdp1Wrapper wrapper(tree, s, params, plan.shard_group, sharded, 0);
  const std::vector<std::vector<int>> owned = wrapper.run();
  if (wrapper.counted_rank_slices()) check_ranks_wrap_alike(tree, s, params, plan, wrapper.unit_modules(), sink);
  const std::vector<int>& modules = wrapper.unit_modules();

  // Units are created bottom-up but listed like root.named_modules(): pre-order, root first.
  std::vector<int> order(modules.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return modules[a] < modules[b]; });

  std::vector<int> holder(params.size(), -1);  // storage -> first unit (creation order) that flattened it
  for (std::size_t u = 0; u < owned.size(); ++u)
    for (int pidx : owned[u]) {
      int& first = holder[static_cast<std::size_t>(params[pidx].storage)];
      if (first < 0) first = static_cast<int>(u);
    }

  UnitDiagnostics unit_diagnostics;  // repeated blocks failing alike are reported once
  DiagnosticSink scratch;
  std::vector<std::vector<Diagnostic>> findings(order.size());  // a folded plan's, per unit
  plan.units.reserve(order.size());
  for (int u : order) {
    ShardUnit unit = flat_unit(tree, s, plan, params, modules[u], owned[u], scratch);
    for (int pidx : owned[u])
      if (holder[static_cast<std::size_t>(params[pidx].storage)] != u) unit.duplicated.emplace_back(params[pidx].fqn);
    if (!unit.duplicated.empty()) report_duplicated_tie(tree, unit, s, scratch);
    if (tree.folded) {
      set_instances(tree, unit);
      findings[plan.units.size()] = std::move(scratch.items());
      scratch.items().clear();
    } else {
      unit_diagnostics.add_all(unit.path, scratch);
    }
    plan.units.push_back(std::move(unit));
  }
  if (tree.folded) {
    plan.sequence = materialised_order(tree, plan);
    // Each instance's findings as the materialised plan has them, in its order: the first instance's
    // with the path of this one.
    for (const UnitInstance& ui : plan.sequence) {
      const ShardUnit& unit = plan.units[static_cast<std::size_t>(ui.unit)];
      const std::string path = ui.instance == 0 ? unit.path : unit_instance_path(unit, ui.instance);
      for (const Diagnostic& d : findings[static_cast<std::size_t>(ui.unit)])
        unit_diagnostics.add(path, ui.instance == 0 ? d : UnitDiagnostics::for_instance(d, unit.path, path));
    }
  }
  unit_diagnostics.flush(sink);
  check_tied_views(tree, s, plan, params, modules, holder, sink);
  check_uncalled_containers(tree, s, plan, sink);
  plan.ignored = ignored_params(params);
  return plan;
}

bool folded_plan_exact(const ModuleTree& tree, const FsdpSettings& s, const ShardPlan& plan) {
  if (!tree.folded) return true;
  if (plan.fsdp_version != 1 || plan.tensor_parallel) return false;  // FSDP1's units are what this reads
  // A size policy counts subtrees' elements; ignored modules and frozen parameters are named by regex.
  if (s.policy.value == WrapPolicyKind::size || !s.ignored_modules.value.empty() || !s.frozen.value.empty() ||
      !plan.ignored.empty())
    return false;
  const std::vector<std::int64_t> mult = module_multiplicity(tree);
  std::vector<int> owner(tree.modules.size(), -1);  // module -> its innermost unit's module
  for (const ShardUnit& u : plan.units)
    if (u.module >= 0) owner[static_cast<std::size_t>(u.module)] = u.module;
  for (std::size_t i = 1; i < tree.modules.size(); ++i) {
    int& o = owner[i];
    if (o < 0) o = owner[static_cast<std::size_t>(tree.modules[i].parent)];
    // A module held once for several instances but flattened by a unit that stands for fewer.
    if (o >= 0 && !tree.modules[i].params.empty() && mult[i] != mult[static_cast<std::size_t>(o)]) return false;
  }
  return true;
}

}  // namespace shardcheck
