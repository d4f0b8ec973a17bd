// Tensor parallelism as transformers 5.12.1 applies it at load: integrations/tensor_parallel.py
// (replace_layer_number_by_wildcard, _get_parameter_tp_plan, get_tensor_shard, get_packed_weights and
// each style's shard_tensor). The style table itself is data: rules/models/_tensor_parallel.yaml.
#include "shardcheck/tensor_parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <unordered_map>

#include "resolve/tree_internal.hpp"
#include "shardcheck/finding_codes.hpp"
#include "shardcheck/shard_plan.hpp"

namespace shardcheck {

std::string tp_generic_name(std::string_view fqn) {
  // re.sub(r"\.\d+(\.|$)", ".*\1", name): a match consumes the dot after the digits, so in "a.0.1.b"
  // only ".0." is replaced ("a.*.1.b"), as Python does.
  std::string out;
  out.reserve(fqn.size());
  std::size_t i = 0;
  while (i < fqn.size()) {
    if (fqn[i] == '.') {
      std::size_t j = i + 1;
      while (j < fqn.size() && std::isdigit(static_cast<unsigned char>(fqn[j]))) ++j;
      if (j > i + 1 && (j == fqn.size() || fqn[j] == '.')) {
        out += ".*";
        if (j < fqn.size()) out += '.';
        i = j == fqn.size() ? j : j + 1;
        continue;
      }
    }
    out += fqn[i++];
  }
  return out;
}

namespace {

const ModuleTree::TpEntry* find_entry(const ModuleTree& tree, std::string_view generic) {
  if (!tree.tp_plan) return nullptr;
  for (const auto& e : *tree.tp_plan)
    if (e.pattern == generic) return &e;
  return nullptr;
}

}  // namespace

const ModuleTree::TpEntry* tp_entry_for(const ModuleTree& tree, std::string_view fqn) {
  if (const auto* e = find_entry(tree, tp_generic_name(fqn))) return e;
  if (const auto dot = fqn.rfind('.'); dot != std::string_view::npos) return tp_module_entry(tree, fqn.substr(0, dot));
  return nullptr;
}

const ModuleTree::TpEntry* tp_module_entry(const ModuleTree& tree, std::string_view module_path) {
  if (module_path.empty()) return nullptr;
  if (tree.peft) {
    // A LoRA layer (peft 0.20 tuners/lora/model.py _create_and_replace, with transformers 5.4 or later)
    // keeps the loaded module as its base_layer, cut and hooked as transformers loaded it; peft gives a
    // colwise base's lora_B the colwise plan (its rows cut, hooks added) and a rowwise base's lora_A the
    // rowwise plan (its columns cut); the other adapter matrix stays whole on every TP rank.
    constexpr std::string_view base = ".base_layer";
    if (module_path.ends_with(base))
      return find_entry(tree, tp_generic_name(module_path.substr(0, module_path.size() - base.size())));
    for (const auto& [part, style] : {std::pair{std::string_view(".lora_B."), std::string_view("colwise")},
                                      std::pair{std::string_view(".lora_A."), std::string_view("rowwise")}}) {
      const auto at = module_path.rfind(part);
      if (at == std::string_view::npos || module_path.find('.', at + part.size()) != std::string_view::npos) continue;
      const ModuleTree::TpEntry* e = find_entry(tree, tp_generic_name(module_path.substr(0, at)));
      return e && e->style.name == style ? e : nullptr;
    }
  }
  return find_entry(tree, tp_generic_name(module_path));
}

namespace {

// Rank r's share of n items cut into tp torch.chunk pieces of ceil(n / tp) (get_tensor_shard).
std::int64_t piece(std::int64_t n, int tp, int r) { return chunk_real(n, chunk_size(n, tp), r); }

}  // namespace

TensorParallelLayout tensor_parallel_layout(const ModuleTree& tree, const FsdpSettings& s, DiagnosticSink& sink) {
  const int tp = std::max(1, s.tp_size.value);
  TensorParallelLayout layout;
  layout.tp_size = tp;
  std::set<std::string> reported;  // one finding per plan entry, not one per layer
  for (const Module& m : tree.modules)
    for (const ParamInfo& p : m.params) {
      if (p.buffer) continue;
      TpPlacement pl;
      pl.fqn = qualified_name(m.path, p.name);
      pl.shapes.assign(static_cast<std::size_t>(tp), p.shape);
      const ModuleTree::TpEntry* entry = p.tied_to.empty() ? tp_entry_for(tree, pl.fqn) : nullptr;
      if (entry) {
        pl.style = entry->style.name;
        const int ndim = static_cast<int>(p.shape.size());
        const std::optional<int> d = ndim == 1 ? entry->style.vector_dim : entry->style.matrix_dim;
        if (d && ndim > 0) pl.dim = *d < 0 ? *d + ndim : *d;
        if (pl.dim && (*pl.dim < 0 || *pl.dim >= ndim)) pl.dim.reset();
        if (pl.dim && entry->style.packed > 1) pl.blocks = entry->style.packed;
      }
      if (pl.dim) {
        const std::size_t d = static_cast<std::size_t>(*pl.dim);
        const std::int64_t n = p.shape[d];
        const TpStyle& st = entry->style;
        // The model's parameter is allocated at the style's expected shape: ceil pieces of the whole
        // dimension (get_expected_sharded_shape). A packed style fills it from the checkpoint's blocks,
        // each cut on its own (the loader's per-expert gate and up tensors through get_tensor_shard);
        // when that gives another row count, the load stops with a size mismatch.
        bool mismatch = false;
        for (int r = 0; r < tp; ++r) {
          const std::int64_t local = st.exact ? n / tp : piece(n, tp, r);
          if (st.packed > 1 && n % st.packed == 0 && st.packed * piece(n / st.packed, tp, r) != local) mismatch = true;
          pl.shapes[static_cast<std::size_t>(r)][d] = local;
        }
        const bool first = reported.insert(entry->pattern).second;
        if (first && st.exact && n % tp != 0)
          sink.report(model_setting_finding(
              "PLAN022", s.tp_size.source, tree.config_path,
              fmt::format("ValueError while loading {} ({}): Global number of experts must be divisible by number of "
                          "devices: {} % {} != 0",
                          pl.fqn, st.name, n, tp),
              fmt::format("use a tp_size that divides {}", n)));
        if (first && mismatch)
          sink.report(model_setting_finding(
              "PLAN022", s.tp_size.source, tree.config_path,
              fmt::format("RuntimeError while loading: You set `ignore_mismatched_sizes` to `False`: {} ({}) holds {} "
                          "blocks of {} rows, cut into {} rows per block on TP rank 0, but the model expects {} rows",
                          pl.fqn, st.name, st.packed, n / st.packed, chunk_size(n / st.packed, tp), chunk_size(n, tp)),
              fmt::format("use a tp_size that divides {}", n / st.packed)));
      }
      layout.split += pl.dim.has_value();
      layout.params.push_back(std::move(pl));
    }
  return layout;
}

ModuleTree tp_local_tree(const ModuleTree& tree, const TensorParallelLayout& layout, int rank) {
  ModuleTree local = tree;
  std::unordered_map<std::string_view, const TpPlacement*> by_name;
  for (const auto& pl : layout.params) by_name.emplace(pl.fqn, &pl);
  auto local_shape = [&](const std::string& fqn) -> const std::vector<std::int64_t>* {
    const auto it = by_name.find(fqn);
    return it == by_name.end() ? nullptr : &it->second->shapes[static_cast<std::size_t>(rank)];
  };
  for (Module& m : local.modules)
    for (ParamInfo& p : m.params) {
      if (p.buffer) continue;
      const std::string fqn = qualified_name(m.path, p.name);
      const auto* shape = local_shape(p.tied_to.empty() ? fqn : p.tied_to);
      if (!shape) continue;
      p.shape = *shape;
      p.numel = 1;
      for (auto x : p.shape) p.numel *= x;
    }
  finalize_counts(local);
  return local;
}

}  // namespace shardcheck
