// FSDP2 (`fully_shard`): the groups accelerate's fsdp2_prepare_model creates
// (accelerate src/accelerate/utils/fsdp_utils.py, v1.6–v1.13 and v1.14+), each group's parameters
// in post-order, and per-parameter dim-0 sharding with torch.chunk padding
// (torch/distributed/fsdp/_fully_shard/_fsdp_param.py).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <unordered_set>

#include "shardcheck/finding_codes.hpp"
#include "simulate/plan_internal.hpp"
#include "simulate/unit_diagnostics.hpp"

namespace shardcheck {
namespace {

struct Group {
  std::vector<int> roots;  // modules passed to fully_shard (one, or a list)
  std::optional<bool> reshard_after_forward;
  bool is_root = false;
};

class Fsdp2Planner {
 public:
  Fsdp2Planner(const ModuleTree& tree, const FsdpSettings& s, const ParamTable& params)
      : tree_(tree),
        s_(s),
        params_(params),
        has_state_(tree.modules.size(), false),
        managing_group_(tree.modules.size(), -1) {}

  // The first error torch raises inside a fully_shard call; the caller stops there, so no later
  // call is simulated.
  const std::optional<Diagnostic>& wrap_error() const { return wrap_error_; }

  std::vector<std::pair<Group, std::vector<int>>> run() {
    switch (s_.fsdp2_caller.value) {
      case Fsdp2Caller::torchtitan:
        return run_torchtitan();
      case Fsdp2Caller::transformers:
        return run_transformers();
      case Fsdp2Caller::accelerate:
        break;
    }
    return run_accelerate();
  }

 private:
  std::vector<std::pair<Group, std::vector<int>>> run_accelerate() {
    const Version acc = s_.accelerate_version.value;
    const std::optional<bool> user_raf = s_.reshard_after_forward.value.value_or(true);
    // (a) the policy, bottom-up over every module but the root (get_module_children_bottom_up[:-1]).
    if (s_.policy.value != WrapPolicyKind::none) {
      std::vector<int> post;
      post_order(0, post);
      post.pop_back();
      for (int m : post)
        if (!has_state_[m] && wants(m)) shard({m}, user_raf, false);
    }
    if (acc >= Version{1, 14, 0}) {
      // (b) untied input embeddings get their own group; (c) the tail [final norm, head] (or the
      // tied embedding) is one group that keeps its parameters after forward (PR #4015).
      const int in = find(tree_.input_embeddings);
      const int out = find(tree_.output_embeddings);
      const bool tied = !tree_.tied.empty();
      if (!tied && in >= 0 && !has_state_[in]) shard({in}, user_raf, false);
      std::vector<int> tail;
      if (const int norm = final_norm(); norm >= 0 && !has_state_[norm]) tail.push_back(norm);
      const int head = tied ? in : out;
      if (head >= 0 && !has_state_[head]) tail.push_back(head);
      if (!tail.empty()) shard(tail, false, false);
      // (d) the root with torch's default reshard_after_forward (None).
      shard({0}, std::nullopt, true);
    } else {
      // v1.6–v1.13: the root gets the user's (default True) reshard_after_forward explicitly.
      shard({0}, user_raf, true);
    }
    return std::move(groups_);
  }

  // torchtitan v0.2.x `apply_fsdp` (torchtitan/models/llama3/infra/parallelize.py), default
  // reshard policy, no pipeline parallelism: the input embedding, then every block, each
  // resharding after forward; [final norm, output] kept after forward; then the root. With tied
  // embeddings (torchtitan HEAD, enable_weight_tying) the embedding joins the kept tail group.
  std::vector<std::pair<Group, std::vector<int>>> run_torchtitan() {
    const int in = find(tree_.input_embeddings);
    const int out = find(tree_.output_embeddings);
    const int norm = final_norm();
    const bool tied = !tree_.tied.empty();
    if (in >= 0 && !tied) shard({in}, true, false);
    std::vector<int> post;
    post_order(0, post);
    post.pop_back();
    for (int m : post)
      if (!has_state_[m] && is_block(m)) shard({m}, true, false);
    std::vector<int> tail;
    if (tied && in >= 0) tail.push_back(in);
    if (norm >= 0 && !has_state_[norm]) tail.push_back(norm);
    if (out >= 0 && !has_state_[out] && out != in) tail.push_back(out);
    if (!tail.empty()) shard(tail, false, false);
    shard({0}, std::nullopt, true);
    return std::move(groups_);
  }

  // transformers (main) distributed/fsdp.py apply_fully_sharded_data_parallelism: the model's
  // `_fsdp_plan` (tree.fsdp_plan), with a tied embedding folded into the head's entry; modules
  // matched in named_modules() order, "free_full_weight" ones first (reshard after forward), then
  // the "keep_full_weight" ones (a final norm + head pair as one group), then the root.
  std::vector<std::pair<Group, std::vector<int>>> run_transformers() {
    std::vector<std::pair<std::string, std::string>> plan = tree_.fsdp_plan;
    auto find_key = [&](const std::string& k) {
      return std::find_if(plan.begin(), plan.end(), [&](const auto& e) { return e.first == k; });
    };
    if (!tree_.tied.empty() && !tree_.input_embeddings.empty() && !tree_.output_embeddings.empty()) {
      // _resolve_tied_embed_lm_head_plan
      const bool head_keeps = find_key(tree_.output_embeddings) != plan.end() &&
                              find_key(tree_.output_embeddings)->second == "keep_full_weight";
      if (auto it = find_key(tree_.input_embeddings); it != plan.end()) plan.erase(it);
      if (head_keeps) {
        plan.erase(find_key(tree_.output_embeddings));
        plan.emplace_back(tree_.input_embeddings, "keep_full_weight");
      }
    }
    std::vector<int> free, keep;
    for (int m = 0; m < static_cast<int>(tree_.modules.size()); ++m) {  // pre-order = named_modules()
      const std::string& name = tree_.modules[m].path;
      auto it = find_key(name);
      if (it == plan.end()) it = find_key(layer_numbers_to_wildcard(name));
      if (it == plan.end()) continue;
      (it->second == "keep_full_weight" ? keep : free).push_back(m);
    }
    for (int m : free) shard({m}, true, false);
    if (is_norm_and_head_pair(keep)) {
      shard(keep, false, false);
    } else {
      for (int m : keep) shard({m}, false, false);
    }
    shard({0}, std::nullopt, true);
    return std::move(groups_);
  }

  // tensor_parallel.py replace_layer_number_by_wildcard: ".<digits>" followed by "." or the end
  // becomes ".*" ("model.layers.3.mlp" -> "model.layers.*.mlp").
  static std::string layer_numbers_to_wildcard(const std::string& name) {
    std::string out;
    std::size_t i = 0;
    while (i < name.size()) {
      if (name[i] == '.' && i + 1 < name.size() && std::isdigit(static_cast<unsigned char>(name[i + 1]))) {
        std::size_t j = i + 1;
        while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
        if (j == name.size() || name[j] == '.') {
          out += ".*";
          if (j < name.size()) out += '.';
          i = j + (j < name.size() ? 1 : 0);
          continue;
        }
      }
      out += name[i++];
    }
    return out;
  }

  bool is_norm_and_head_pair(const std::vector<int>& keep) const {
    if (keep.size() != 2) return false;
    bool norm = false, head = false;
    for (int m : keep) {
      const std::string& p = tree_.modules[m].path;
      norm = norm || p == "norm" || p.ends_with(".norm");
      head = head || p == tree_.input_embeddings || p == tree_.output_embeddings;
    }
    return norm && head;
  }

  bool is_block(int m) const {
    for (const auto& cls : s_.wrap_classes.value)
      if (tree_.is_instance(tree_.modules[m], cls)) return true;
    return false;
  }

  const ModuleTree& tree_;
  const FsdpSettings& s_;
  const ParamTable& params_;
  // has_state_: the module was passed to fully_shard, so it is an FSDPModule with an FSDP state
  // (what accelerate's isinstance(m, FSDPModule) and torch's _get_module_fsdp_state see).
  // managing_group_: the group whose fully_shard call manages the module (its parameters are
  // DTensors from then on), -1 for none. Only the first marks a subtree off for later calls.
  std::vector<bool> has_state_;
  std::vector<int> managing_group_;
  std::vector<std::pair<Group, std::vector<int>>> groups_;
  std::optional<Diagnostic> wrap_error_;

  int find(const std::string& path) const {
    if (path.empty()) return -1;
    for (int i = 0; i < static_cast<int>(tree_.modules.size()); ++i)
      if (tree_.modules[i].path == path) return i;
    return -1;
  }

  // fsdp_utils.py: the last direct child of model.<base_model_prefix> whose class name has "Norm".
  int final_norm() const {
    const int base = tree_.base_model_path.empty() ? 0 : find(tree_.base_model_path);
    if (base < 0) return -1;
    int found = -1;
    for (int c : tree_.modules[base].children)
      if (tree_.modules[c].cls.find("Norm") != std::string::npos) found = c;
    return found;
  }

  void post_order(int m, std::vector<int>& out) const {
    for (int c : tree_.modules[m].children) post_order(c, out);
    out.push_back(m);
  }

  std::int64_t subtree_numel(int m) const {
    // sum(p.numel() for p in module.parameters()): every storage once, DTensors at global size.
    std::unordered_set<int> seen;
    std::int64_t n = 0;
    std::vector<int> stack{m};
    while (!stack.empty()) {
      const int cur = stack.back();
      stack.pop_back();
      for (int pidx : params_.by_module(cur))
        if (seen.insert(params_[pidx].storage).second) n += params_[pidx].numel;
      for (int c : tree_.modules[cur].children) stack.push_back(c);
    }
    return n;
  }

  bool wants(int m) const {
    const Module& mod = tree_.modules[m];
    if (s_.policy.value == WrapPolicyKind::transformer) {
      for (const auto& cls : s_.wrap_classes.value)
        if (tree_.is_instance(mod, cls)) return true;
      return false;
    }
    // fsdp2_prepare_auto_wrap_policy (size): strict >, whole subtree (not a remainder).
    return s_.policy.value == WrapPolicyKind::size && subtree_numel(m) > s_.min_num_params.value;
  }

  // fully_shard(roots) (torch/distributed/fsdp/_fully_shard/_fully_shard.py, _fsdp_init.py
  // _get_managed_modules / _get_managed_states, torch 2.14.1): managed modules = post-order DFS from
  // each root that does not enter a module already holding an FSDP state; parameters per module in
  // registration order, deduplicated. After the first error torch raises, nothing more happens.
  void shard(const std::vector<int>& roots, std::optional<bool> raf, bool is_root) {
    if (wrap_error_) return;
    for (int r : roots)
      if (is_container(r)) return container_error(r);
    std::vector<int> managed;
    for (int r : roots) collect(r, managed, true);
    // A module some earlier call manages (without being passed to it) holds DTensor parameters
    // already; fully_shard on it again tries to shard a DTensor over a second mesh.
    for (int m : managed)
      if (managing_group_[m] >= 0 && !params_.by_module(m).empty()) return overlap_error(roots.front(), m);
    std::vector<int> owned;
    std::unordered_set<int> seen;
    for (int m : managed)
      for (int pidx : params_.by_module(m))
        // accelerate passes the ignored modules' parameters as fully_shard(ignored_params=...).
        if (!params_[pidx].ignored && seen.insert(params_[pidx].storage).second) owned.push_back(pidx);
    const int gi = static_cast<int>(groups_.size());
    for (int m : managed)
      if (managing_group_[m] < 0) managing_group_[m] = gi;
    for (int r : roots) has_state_[r] = true;
    Group g;
    g.roots = roots;
    g.reshard_after_forward = raf;
    g.is_root = is_root;
    groups_.emplace_back(std::move(g), std::move(owned));
  }

  void collect(int m, std::vector<int>& out, bool top) const {
    if (!top && has_state_[m]) return;
    for (int c : tree_.modules[m].children) collect(c, out, false);
    out.push_back(m);
  }

  // _fsdp_init.py _validate_module: nn.ModuleList / nn.ModuleDict whose class keeps
  // nn.Module.forward (the registry's containers never define one).
  bool is_container(int m) const {
    return tree_.is_instance(tree_.modules[m], "ModuleList") || tree_.is_instance(tree_.modules[m], "ModuleDict");
  }

  std::string who_calls(int m) const {
    if (s_.fsdp2_caller.value != Fsdp2Caller::accelerate) return "fully_shard";
    if (m == find(tree_.input_embeddings) || m == find(tree_.output_embeddings) || m == final_norm())
      return "accelerate's fsdp2_prepare_model (v1.14+ carves the embeddings and the final norm into their own "
             "groups)";
    if (s_.policy.value == WrapPolicyKind::size)
      return fmt::format(
          "accelerate's SIZE_BASED_WRAP (fully_shard on every module with more than {} parameters, "
          "containers included)",
          s_.min_num_params.value);
    return "accelerate's auto-wrap policy";
  }

  void container_error(int m) {
    const Module& mod = tree_.modules[m];
    Diagnostic d = finding(
        "PLAN017", model_location(tree_, mod.path),
        fmt::format("ValueError: fully_shard does not support containers that do not implement forward: {}(...) "
                    "at '{}', which {} passes to fully_shard",
                    mod.cls, mod.path, who_calls(m)),
        s_.policy.value == WrapPolicyKind::size
            ? "under FSDP2 accelerate's size policy also selects the ModuleList holding the layers; use "
              "fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP (the decoder layer classes) instead"
            : "wrap the modules inside the container, not the container itself");
    wrap_error_ = std::move(d);
  }

  void overlap_error(int root, int managed) {
    const Module& mod = tree_.modules[root];
    const int owner = managing_group_[managed];
    const std::string& owner_path = tree_.modules[groups_[static_cast<std::size_t>(owner)].first.roots.front()].path;
    // Without an accelerate mesh (one process, or DeepSpeed's sp dropping it) fully_shard builds a
    // mesh with no dim names, and torch 2.14.1's DeviceMesh._concatenate (device_mesh.py) fails on
    // not_none(mesh_dim_names) before it tests for overlap (fuzz seed 1).
    const bool unnamed_mesh =
        (s_.world_size.value == 1 || s_.mesh_dropped_for_sp()) && s_.torch_version.value >= Version{2, 14, 0};
    Diagnostic d =
        finding("PLAN018", model_location(tree_, mod.path),
                fmt::format("{}: {} calls fully_shard on '{}', whose parameters the earlier fully_shard group of '{}' "
                            "already sharded (it is managed by that group without being an FSDPModule itself)",
                            unnamed_mesh ? "TypeError: Invariant encountered: value was None when it should not be "
                                           "(DeviceMesh._concatenate on a mesh without dim names)"
                                         : "RuntimeError: Cannot concatenate overlapping meshes",
                            who_calls(root), mod.path, owner_path.empty() ? "<root>" : owner_path),
                s_.policy.value == WrapPolicyKind::size
                    ? "accelerate checks only isinstance(module, FSDPModule) before sharding the embeddings and the "
                      "final norm; use fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP so that the size policy does "
                      "not wrap a module above them"
                    : "do not wrap a module that contains the input embeddings or the final norm");
    wrap_error_ = std::move(d);
  }
};

// Whether a group frees its unsharded parameters after forward, given torch's rules for the root.
std::optional<bool> effective_reshard(const Group& g, const Version& torch) {
  if (!g.is_root) return g.reshard_after_forward.value_or(true);
  // 2.4–2.7: the root never reshards after forward, whatever was passed. 2.8+ (#154704): None
  // means False for the root; an explicit True is respected.
  if (torch < Version{2, 8, 0}) return false;
  return g.reshard_after_forward.value_or(false);
}

// FSDPParamGroup._init_mp_dtypes (torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py), run at
// lazy init, i.e. the first forward: a group holds one original dtype. Up to 2.7 every parameter
// counts; from 2.8 only those that require grad (pytorch PR #154103, May 2025), so frozen weights
// may differ. (FSDP2 in 2.4/2.5 first raised "Mixed dtype not supported yet" from the all-gather.)
void check_uniform_dtype(const ModuleTree& tree, const ShardUnit& unit, const std::vector<int>& owned,
                         const ParamTable& params, const FsdpSettings& s, DiagnosticSink& sink) {
  const bool trainable_only = s.torch_version.value >= Version{2, 8, 0};
  std::set<std::string> names;
  std::vector<DType> dtypes;
  std::vector<std::string> fqns;
  for (int pidx : owned) {
    const ParamEntry& p = params[pidx];
    if (trainable_only && !p.requires_grad) continue;
    fqns.emplace_back(p.fqn);
    if (std::find(dtypes.begin(), dtypes.end(), p.dtype) == dtypes.end()) dtypes.push_back(p.dtype);
    names.insert(torch_dtype_name(p.dtype));
  }
  if (dtypes.size() < 2) return;
  std::string set;
  for (const auto& n : names) set += (set.empty() ? "" : ", ") + n;
  Diagnostic d =
      finding("PLAN006", model_location(tree, unit.path),
              fmt::format("AssertionError: FSDP expects uniform original parameter dtype but got {{{}}} (raised at the "
                          "first forward by this fully_shard group{})",
                          set, trainable_only ? ", over its parameters that require grad" : ""),
              mixed_dtype_help(tree, dtypes, fqns));
  sink.report(std::move(d));
}

// FSDPState._validate_no_duplicate_params (torch/distributed/fsdp/_fully_shard/_fsdp_state.py, read in
// 2.14.1; users report it from 2.12): at the root's lazy init, i.e. the first forward, the states are
// visited in root.named_modules() order (the root first, a group at the first of its modules) and each
// group's parameters in order; an original parameter met a second time raises.
bool validates_duplicates(const FsdpSettings& s) { return s.torch_version.value >= Version{2, 12, 0}; }

void check_no_duplicate_params(const ModuleTree& tree, const std::vector<std::pair<Group, std::vector<int>>>& groups,
                               const ParamTable& params, DiagnosticSink& sink) {
  std::vector<std::size_t> order(groups.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto first_module = [&](std::size_t g) {
    return *std::min_element(groups[g].first.roots.begin(), groups[g].first.roots.end());
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return first_module(a) < first_module(b); });
  std::unordered_map<int, std::size_t> first_group;
  for (std::size_t gi : order)
    for (int pidx : groups[gi].second) {
      const ParamEntry& p = params[pidx];
      auto [it, fresh] = first_group.emplace(p.storage, gi);
      if (fresh) continue;
      auto paths = [&](std::size_t g) {
        std::string out;
        for (int r : groups[g].first.roots) out += (out.empty() ? "" : ", ") + tree.modules[r].path;
        return out.empty() ? std::string("<root>") : out;
      };
      sink.report(finding(
          "PLAN019", model_location(tree, std::string(p.fqn)),
          fmt::format("ValueError: Parameter '{}' is shared with a parameter already managed by another FSDP "
                      "group. For shared/tied parameters, use fully_shard([module_a, module_b]) to place them "
                      "in the same FSDP group. (raised at the first forward: the group of [{}] and the group of "
                      "[{}] both hold it)",
                      p.fqn, paths(it->second), paths(gi)),
          "a tied embedding and LM head must share one fully_shard group, which accelerate 1.14's "
          "fsdp2_prepare_model does not do (it groups [final norm, embedding] and leaves the head to the root): "
          "train with fsdp_version: 1 (TRANSFORMER_BASED_WRAP leaves both in the root unit), or untie the head "
          "before accelerator.prepare (model.lm_head.weight = nn.Parameter(model.lm_head.weight.clone()))"));
      return;
    }
}

}  // namespace

ShardPlan plan_fsdp2(const ModuleTree& tree, const FsdpSettings& s, DiagnosticSink& sink) {
  ShardPlan plan = plan_header(s, 2);
  const ParamTable params(tree, s);
  Fsdp2Planner planner(tree, s, params);
  auto groups = planner.run();
  if (planner.wrap_error()) sink.report(*planner.wrap_error());
  const int w = plan.shard_group;

  // A parameter owned by two groups (a tie split across groups) is sharded twice.
  std::unordered_map<int, std::size_t> holder;
  for (std::size_t gi = 0; gi < groups.size(); ++gi)
    for (int pidx : groups[gi].second) holder.emplace(params[pidx].storage, gi);

  std::vector<std::size_t> order(groups.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return groups[a].first.roots.front() < groups[b].first.roots.front();
  });
  UnitDiagnostics unit_diagnostics;  // repeated blocks failing alike are reported once
  DiagnosticSink scratch;
  for (std::size_t gi : order) {
    const auto& [g, owned] = groups[gi];
    ShardUnit unit;
    unit.module = g.roots.front();
    unit.path = tree.modules[unit.module].path;
    unit.cls = tree.modules[unit.module].cls;
    for (int r : g.roots) unit.modules.push_back(tree.modules[r].path);
    unit.reshard_after_forward = effective_reshard(g, s.torch_version.value);
    unit.rank_pad.assign(static_cast<std::size_t>(w), 0);
    unit.requires_grad = false;
    unit.gets_grad = false;
    unit.dtype = owned.empty() ? DType::F32 : params[owned.front()].dtype;
    set_collective_dtypes(unit, s);
    for (int pidx : owned) {
      const ParamEntry& p = params[pidx];
      if (holder.at(p.storage) != gi) unit.duplicated.emplace_back(p.fqn);
      if (p.shape.empty()) {
        Diagnostic d =
            finding("PLAN005", model_location(tree, std::string(p.fqn)),
                    fmt::format("ValueError: fully_shard doesn't support scalar parameters. Change {} to a 1D tensor "
                                "with numel equal to 1.",
                                p.fqn));
        scratch.report(std::move(d));
        continue;
      }
      ParamShard ps;
      ps.fqn = p.fqn;
      ps.shape.assign(p.shape.begin(), p.shape.end());
      ps.dtype = p.dtype;
      ps.requires_grad = p.requires_grad;
      ps.gets_grad = p.requires_grad && !p.unreached;
      const std::int64_t d0 = p.shape.front();
      ps.row_numel = d0 > 0 ? p.numel / d0 : 0;
      if (d0 == 0) {
        ps.row_numel = 1;
        for (std::size_t k = 1; k < p.shape.size(); ++k) ps.row_numel *= p.shape[k];
      }
      ps.rows_per_rank = chunk_size(d0, w);  // chunks[0].size(0)
      for (int r = 0; r < w; ++r)
        unit.rank_pad[static_cast<std::size_t>(r)] +=
            (ps.rows_per_rank - chunk_real(d0, ps.rows_per_rank, r)) * ps.row_numel;
      unit.shard_numel += ps.rows_per_rank * ps.row_numel;
      unit.params.emplace_back(p.fqn);
      unit.param_numels.push_back(p.numel);
      unit.numel += p.numel;
      unit.requires_grad = unit.requires_grad || p.requires_grad;
      unit.gets_grad = unit.gets_grad || ps.gets_grad;
      unit.shards.push_back(std::move(ps));
    }
    unit.padded_numel = unit.shard_numel * w;
    check_uniform_dtype(tree, unit, owned, params, s, scratch);
    // From torch 2.12 a tie split across groups is an error at lazy init (below), not a silent copy.
    if (!unit.duplicated.empty() && !validates_duplicates(s)) report_duplicated_tie(tree, unit, s, scratch);
    unit_diagnostics.add_all(unit.path, scratch);
    plan.units.push_back(std::move(unit));
  }
  unit_diagnostics.flush(sink);
  if (!planner.wrap_error() && validates_duplicates(s)) check_no_duplicate_params(tree, groups, params, sink);
  plan.ignored = ignored_params(params);
  return plan;
}

}  // namespace shardcheck
