// Fallback for a model_type the registry does not know: the module tree is inferred from tensor
// names. Numbered containers ("model.blocks.0", "model.blocks.1", ...) become a ModuleList of
// repeated blocks; leaf classes are guessed from their parameters. Every class name is marked as a
// guess, and the order is the checkpoint's (natural sort), which may differ from __init__ order.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <unordered_map>

#include "resolve/tree_internal.hpp"

namespace shardcheck {
namespace {

bool is_number(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// "layers.10" sorts after "layers.9".
bool natural_less(std::string_view a, std::string_view b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      std::size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      const std::string_view x(a.data() + i, i2 - i), y(b.data() + j, j2 - j);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = i2;
      j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

std::string camel(std::string_view s) {
  std::string out;
  bool up = true;
  for (char c : s) {
    if (c == '_' || c == '-') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return out;
}

std::string guess_leaf_class(const Module& m) {
  const ParamInfo* weight = nullptr;
  bool has_bias = false;
  for (const auto& p : m.params) {
    if (p.name == "weight") weight = &p;
    if (p.name == "bias") has_bias = true;
  }
  if (!weight) return "Module";
  if (weight->shape.size() == 2) {
    const std::string& n = m.name;
    if (n.find("embed") != std::string::npos || n == "wte" || n == "wpe" || n.find("tok") != std::string::npos)
      return "Embedding";
    return "Linear";
  }
  if (weight->shape.size() == 1) return has_bias ? "LayerNorm" : "RMSNorm";
  return "Module";
}

}  // namespace

ModuleTree infer_module_tree(const ModelConfig& config, const CheckpointMeta& ckpt, DiagnosticSink& /*sink*/) {
  ModuleTree tree;
  tree.model_type = config.model_type;
  tree.architecture = config.architectures.empty() ? "Model" : config.architectures.front();
  tree.classes_guessed = true;
  tree.from_checkpoint = true;

  std::vector<const TensorInfo*> tensors;
  for (const auto& f : ckpt.files)
    for (const auto& t : f.tensors) tensors.push_back(&t);
  std::sort(tensors.begin(), tensors.end(), [](auto* a, auto* b) { return natural_less(a->name, b->name); });

  tree.modules.push_back(Module{});
  tree.modules[0].cls = tree.architecture;
  std::unordered_map<std::string, int> index{{"", 0}};
  auto ensure = [&](const std::string& path) {
    int parent = 0;
    std::size_t start = 0;
    while (start <= path.size() && !path.empty()) {
      const std::size_t dot = path.find('.', start);
      const std::string prefix = path.substr(0, dot);
      auto it = index.find(prefix);
      if (it == index.end()) {
        Module m;
        m.path = prefix;
        m.name = prefix.substr(start);
        m.parent = parent;
        const int idx = static_cast<int>(tree.modules.size());
        tree.modules.push_back(std::move(m));
        tree.modules[parent].children.push_back(idx);
        it = index.emplace(prefix, idx).first;
      }
      parent = it->second;
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    return parent;
  };
  for (const TensorInfo* t : tensors) {
    const std::string_view name = t->name;
    const auto dot = name.rfind('.');
    const int mod = ensure(dot == std::string::npos ? std::string() : std::string(name.substr(0, dot)));
    ParamInfo p;
    p.name = dot == std::string::npos ? name : name.substr(dot + 1);
    p.shape.assign(t->shape.begin(), t->shape.end());
    p.dtype = t->dtype;
    p.numel = t->numel();
    p.in_checkpoint = true;
    tree.modules[mod].params.push_back(std::move(p));
  }

  // Modules were appended in first-seen order, which is pre-order only if parents came first;
  // they always do, since ensure() creates every prefix before the module itself.
  std::string best_block;
  std::int64_t best_numel = -1;
  std::vector<std::int64_t> subtree(tree.modules.size(), 0);
  for (std::size_t i = tree.modules.size(); i-- > 0;) {
    for (const auto& p : tree.modules[i].params) subtree[i] += p.numel;
    if (i > 0) subtree[tree.modules[i].parent] += subtree[i];
  }
  for (std::size_t i = 1; i < tree.modules.size(); ++i) {
    Module& m = tree.modules[i];
    const bool numbered_children = !m.children.empty() && std::all_of(m.children.begin(), m.children.end(), [&](int c) {
      return is_number(tree.modules[c].name);
    });
    if (numbered_children) {
      m.cls = "ModuleList";
      const std::string block = "Guessed" + camel(m.name) + "Block";
      for (int c : m.children) tree.modules[c].cls = block;
      if (subtree[i] > best_numel) {
        best_numel = subtree[i];
        best_block = block;
      }
    } else if (m.cls.empty()) {
      m.cls = m.children.empty() ? guess_leaf_class(m) : "Module";
    }
  }
  if (!best_block.empty()) tree.no_split_modules.push_back(best_block);
  for (const auto& m : tree.modules) tree.class_chains.emplace(m.cls, std::vector<std::string>{m.cls});
  return tree;
}

}  // namespace shardcheck
