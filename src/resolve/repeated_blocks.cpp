// Folding a module tree's runs of identical numbered siblings into one instance each, and back
// (shardcheck/repeated_blocks.hpp). The runs are what torch's ModuleList repr collapses into
// "(0-125): 126 x LlamaDecoderLayer" (torch/nn/modules/container.py ModuleList.__repr__), with a
// stricter test: every field a later stage reads must agree, not only what the repr prints.
#include "shardcheck/repeated_blocks.hpp"

#include <algorithm>
#include <charconv>

namespace shardcheck {
namespace {

// A ModuleList child's name is str(index): digits, no sign, no leading zero but for "0".
bool index_of(std::string_view name, long long& value) {
  if (name.empty() || (name.size() > 1 && name[0] == '0')) return false;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), value);
  return ec == std::errc() && end == name.data() + name.size();
}

bool same_param(const ParamInfo& p, const ParamInfo& q) {
  // A tie names a full path, which differs between instances: a run holds no tied parameter.
  return p.tied_to.empty() && q.tied_to.empty() && p.name == q.name && p.shape == q.shape && p.dtype == q.dtype &&
         p.numel == q.numel && p.buffer == q.buffer && p.in_checkpoint == q.in_checkpoint &&
         p.requires_grad == q.requires_grad && p.unreached == q.unreached && p.fused_from == q.fused_from &&
         p.unpacked_shape == q.unpacked_shape;
}

class Folder {
 public:
  Folder(const ModuleTree& tree, std::span<const std::uint64_t> marks) : tree_(tree), marks_(marks) {
    // What names a module from outside it: ties (full parameter names), the embeddings
    // transformers' get_input/output_embeddings return, and the plans' keys.
    for (const Module& m : tree.modules)
      for (const ParamInfo& p : m.params)
        if (!p.tied_to.empty()) refs_.emplace_back(p.tied_to);
    for (const TiedWeight& t : tree.tied) {
      refs_.emplace_back(t.alias);
      refs_.emplace_back(t.target);
    }
    refs_.emplace_back(tree.input_embeddings);
    refs_.emplace_back(tree.output_embeddings);
    for (const auto& entry : tree.fsdp_plan) refs_.emplace_back(entry.first);
    if (tree.tp_plan)
      for (const auto& entry : *tree.tp_plan) refs_.emplace_back(entry.pattern);
    for (const auto& entry : tree.ep_plan) refs_.emplace_back(entry.pattern);
  }

  // Whether the subtrees at a and b are interchangeable (b's own name aside).
  bool identical(int a, int b) const {
    const Module& x = tree_.modules[static_cast<std::size_t>(a)];
    const Module& y = tree_.modules[static_cast<std::size_t>(b)];
    if (x.cls != y.cls || x.repeat != y.repeat || x.params.size() != y.params.size() ||
        x.children.size() != y.children.size())
      return false;
    if (!marks_.empty() && marks_[static_cast<std::size_t>(a)] != marks_[static_cast<std::size_t>(b)]) return false;
    for (std::size_t k = 0; k < x.params.size(); ++k)
      if (!same_param(x.params[k], y.params[k])) return false;
    for (std::size_t k = 0; k < x.children.size(); ++k) {
      const int c = x.children[k];
      const int d = y.children[k];
      if (tree_.modules[static_cast<std::size_t>(c)].name != tree_.modules[static_cast<std::size_t>(d)].name ||
          !identical(c, d))
        return false;
    }
    return true;
  }

  // Whether something outside names module b or a module or parameter below it.
  bool referenced(int b) const {
    const std::string& path = tree_.modules[static_cast<std::size_t>(b)].path;
    for (std::string_view r : refs_)
      if (r.starts_with(path) && (r.size() == path.size() || r[path.size()] == '.')) return true;
    return false;
  }

 private:
  const ModuleTree& tree_;
  std::span<const std::uint64_t> marks_;
  std::vector<std::string_view> refs_;
};

}  // namespace

std::vector<int> fold_repeated_blocks(ModuleTree& tree, std::span<const std::uint64_t> marks) {
  const std::size_t n = tree.modules.size();
  std::vector<int> new_index(n);
  for (std::size_t i = 0; i < n; ++i) new_index[i] = static_cast<int>(i);
  if (tree.folded || n == 0 || (!marks.empty() && marks.size() != n)) return new_index;

  // Decide, in pre-order: a kept module's children form runs; the instances after a run's first are
  // dropped with their subtrees (parents precede children, so a dropped parent drops its child).
  const Folder folder(tree, marks);
  std::vector<char> dropped(n, 0);
  std::vector<int> repeat(n, 1);
  bool any = false;
  for (std::size_t i = 0; i < n; ++i) {
    const Module& m = tree.modules[i];
    if (dropped[i]) continue;
    if (i > 0 && dropped[static_cast<std::size_t>(m.parent)]) {
      dropped[i] = 1;
      continue;
    }
    for (std::size_t k = 0; k < m.children.size();) {
      const int first = m.children[k];
      long long index = 0;
      std::size_t run = 1;
      if (index_of(tree.modules[static_cast<std::size_t>(first)].name, index))
        while (k + run < m.children.size()) {
          const int next = m.children[k + run];
          long long next_index = 0;
          if (!index_of(tree.modules[static_cast<std::size_t>(next)].name, next_index) ||
              next_index != index + static_cast<long long>(run) || !folder.identical(first, next) ||
              folder.referenced(next))
            break;
          dropped[static_cast<std::size_t>(next)] = 1;
          ++run;
        }
      repeat[static_cast<std::size_t>(first)] = static_cast<int>(run);
      any = any || run > 1;
      k += run;
    }
  }
  if (!any) return new_index;

  int kept = 0;
  for (std::size_t i = 0; i < n; ++i) new_index[i] = dropped[i] ? -1 : kept++;
  std::vector<Module> out;
  out.reserve(static_cast<std::size_t>(kept));
  for (std::size_t i = 0; i < n; ++i) {
    if (dropped[i]) continue;
    Module& m = out.emplace_back(std::move(tree.modules[i]));
    if (m.parent >= 0) m.parent = new_index[static_cast<std::size_t>(m.parent)];
    std::size_t w = 0;
    for (const int c : m.children)
      if (!dropped[static_cast<std::size_t>(c)]) m.children[w++] = new_index[static_cast<std::size_t>(c)];
    m.children.resize(w);
    m.repeat = repeat[i];
  }
  tree.modules = std::move(out);
  tree.folded = true;  // the counts were taken over every instance and stay as they are
  return new_index;
}

void expand_repeated_blocks(ModuleTree& tree, std::vector<int>* origin) {
  if (origin) {
    origin->resize(tree.modules.size());
    for (std::size_t i = 0; i < origin->size(); ++i) (*origin)[i] = static_cast<int>(i);
  }
  if (!tree.folded) return;
  if (origin) origin->clear();
  const std::vector<std::int64_t> mult = module_multiplicity(tree);
  std::int64_t total = 0;
  for (const std::int64_t k : mult) total += k;
  std::vector<Module> out;
  out.reserve(static_cast<std::size_t>(total));
  // Module `old` as instance `name` under new module `parent`, and its subtree, every run unrolled.
  auto emit = [&](auto& self, int old, int parent, std::string name) -> void {
    const Module& src = tree.modules[static_cast<std::size_t>(old)];
    Module m;
    m.path = parent < 0 ? std::string() : qualified_name(out[static_cast<std::size_t>(parent)].path, name);
    m.name = std::move(name);
    m.cls = src.cls;
    m.parent = parent;
    m.params = src.params;
    m.own_numel = src.own_numel;
    m.total_numel = src.total_numel;
    const int idx = static_cast<int>(out.size());
    out.push_back(std::move(m));
    if (origin) origin->push_back(old);
    if (parent >= 0) out[static_cast<std::size_t>(parent)].children.push_back(idx);
    for (const int c : src.children) {
      const Module& child = tree.modules[static_cast<std::size_t>(c)];
      for (int k = 0; k < child.repeat; ++k) self(self, c, idx, repeat_instance_name(child, k));
    }
  };
  emit(emit, 0, -1, tree.modules[0].name);
  tree.modules = std::move(out);
  tree.folded = false;
}

std::vector<std::int64_t> module_multiplicity(const ModuleTree& tree) {
  std::vector<std::int64_t> mult(tree.modules.size(), 1);
  for (std::size_t i = 0; i < tree.modules.size(); ++i) {
    const Module& m = tree.modules[i];
    mult[i] = (m.parent >= 0 ? mult[static_cast<std::size_t>(m.parent)] : 1) * m.repeat;
  }
  return mult;
}

namespace {

// The child of module m that the path component `part` names: by name, or an instance of a run.
int child_instance(const ModuleTree& tree, int m, std::string_view part) {
  long long index = -1;
  const bool numbered = index_of(part, index);
  for (const int c : tree.modules[static_cast<std::size_t>(m)].children) {
    const Module& child = tree.modules[static_cast<std::size_t>(c)];
    long long first = 0;
    if (child.name == part ||
        (numbered && child.repeat > 1 && index_of(child.name, first) && index >= first && index < first + child.repeat))
      return c;
  }
  return -1;
}

}  // namespace

int ModuleInstanceFinder::find(std::string_view path) {
  if (tree_.modules.empty()) return -1;
  // The deepest component of the previous walk that this path shares.
  const std::size_t common = static_cast<std::size_t>(
      std::mismatch(path.begin(), path.end(), last_.begin(), last_.end()).first - path.begin());
  std::size_t kept = 0;
  while (kept < steps_.size() && steps_[kept].first <= common &&
         (steps_[kept].first == path.size() || path[steps_[kept].first] == '.'))
    ++kept;
  steps_.resize(kept);
  int m = kept ? steps_.back().second : 0;
  std::size_t start = kept ? steps_.back().first + 1 : 0;
  last_.assign(path);
  while (!path.empty() && start <= path.size()) {
    std::size_t dot = path.find('.', start);
    if (dot == std::string_view::npos) dot = path.size();
    m = child_instance(tree_, m, path.substr(start, dot - start));
    if (m < 0) return -1;  // the steps so far stay valid prefixes of last_
    steps_.emplace_back(dot, m);
    start = dot + 1;
  }
  return m;
}

int find_module_instance(const ModuleTree& tree, std::string_view path) {
  return ModuleInstanceFinder(tree).find(path);
}

std::string repeat_instance_name(const Module& m, int k) {
  if (k == 0) return m.name;
  long long index = 0;
  index_of(m.name, index);
  return std::to_string(index + k);
}

}  // namespace shardcheck
