// The module tree as text, shaped like PyTorch's print(model) (torch/nn/modules/module.py
// Module.__repr__ and ModuleList's "(0-31): 32 x Layer" collapsing of identical repeated items),
// with parameter counts, shapes and dtypes.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "shardcheck/repeated_blocks.hpp"
#include "shardcheck/report.hpp"

namespace shardcheck {
namespace {

std::string shape_str(const std::vector<std::int64_t>& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Instance k of numbered module m and instance l of n have the same name ("3" + 2 == "5" + 0).
bool same_instance_name(const Module& m, int k, const Module& n, int l) {
  if (k == 0 && l == 0) return m.name == n.name;
  return repeat_instance_name(m, k) == repeat_instance_name(n, l);
}

// Whether modules a and b have identical subtrees (class, mark, parameters with their names,
// shapes, dtypes, ties and buffer flags, children with their names), as PyTorch's ModuleList repr
// compares the repr strings of consecutive items. A walk of both subtrees, no allocation. In a folded
// tree (shardcheck/repeated_blocks.hpp) the children are compared instance by instance, as the
// materialised tree would be.
bool same_structure(const ModuleTree& tree, const std::vector<std::string>* marks, int a, int b) {
  const Module& x = tree.modules[static_cast<std::size_t>(a)];
  const Module& y = tree.modules[static_cast<std::size_t>(b)];
  if (x.cls != y.cls || x.params.size() != y.params.size()) return false;
  if (!tree.folded && x.children.size() != y.children.size()) return false;
  if (marks && (*marks)[static_cast<std::size_t>(a)] != (*marks)[static_cast<std::size_t>(b)]) return false;
  for (std::size_t k = 0; k < x.params.size(); ++k) {
    const ParamInfo& p = x.params[k];
    const ParamInfo& q = y.params[k];
    if (p.name != q.name || p.shape != q.shape || p.dtype != q.dtype || p.tied_to.empty() != q.tied_to.empty() ||
        p.buffer != q.buffer)
      return false;
  }
  // Both children lists unrolled: instance ki of x.children[i] against instance kj of y.children[j],
  // a stretch of instances at a time (numbered on alike from equal names, they stay equal).
  std::size_t i = 0, j = 0;
  int ki = 0, kj = 0;
  while (i < x.children.size() && j < y.children.size()) {
    const int c = x.children[i];
    const int d = y.children[j];
    const Module& cm = tree.modules[static_cast<std::size_t>(c)];
    const Module& dm = tree.modules[static_cast<std::size_t>(d)];
    if (!same_instance_name(cm, ki, dm, kj) || !same_structure(tree, marks, c, d)) return false;
    const int step = std::min(cm.repeat - ki, dm.repeat - kj);
    if ((ki += step) == cm.repeat) {
      ++i;
      ki = 0;
    }
    if ((kj += step) == dm.repeat) {
      ++j;
      kj = 0;
    }
  }
  return i == x.children.size() && j == y.children.size();
}

class TextTree {
 public:
  TextTree(const ModuleTree& tree, const TextStyle& style, const std::vector<std::string>* marks = nullptr)
      : tree_(tree), style_(style), marks_(marks) {}

  std::string render() {
    header();
    module(0, "", 0, 1);
    footer();
    return out_;
  }

  // Only the module lines, each FSDP unit followed by its mark (no per-parameter detail).
  std::string render_marked() {
    module(0, "", 0, 1);
    return out_;
  }

 private:
  const ModuleTree& tree_;
  const TextStyle& style_;
  const std::vector<std::string>* marks_;
  std::string out_;

  std::string bold(const std::string& s) const { return style_.color ? "\x1b[1m" + s + "\x1b[0m" : s; }
  std::string dim(const std::string& s) const { return style_.color ? "\x1b[2m" + s + "\x1b[0m" : s; }

  void header() {
    out_ += fmt::format("{} ({}), transformers {} layout{}\n", bold(tree_.architecture), tree_.model_type,
                        tree_.transformers.str(), tree_.classes_guessed ? ", CLASS NAMES GUESSED" : "");
    out_ += fmt::format("{} parameters ({}) in {} tensors", fmt::group_digits(tree_.num_params),
                        human_count(tree_.num_params), tree_.num_tensors);
    std::string dtypes;
    for (const auto& [dt, n] : tree_.dtype_numel)
      dtypes += fmt::format("{}{} {}", dtypes.empty() ? "" : ", ", dtype_name(dt), fmt::group_digits(n));
    out_ += fmt::format("; {}\n", dtypes.empty() ? "no parameters" : dtypes);
    if (tree_.peft) out_ += peft_trainable_line(tree_.peft->adapter, tree_.peft->trainable, tree_.peft->total) + "\n";
    out_ += fmt::format(
        "source: {}{}\n", tree_.from_checkpoint ? "safetensors headers" : "config.json only (shapes from the registry)",
        tree_.dequantized ? "; quantised weights loaded dequantised (quantization_config.dequantize)" : "");
    std::string ns;
    for (const auto& c : tree_.no_split_modules) ns += (ns.empty() ? "" : ", ") + c;
    out_ += fmt::format("_no_split_modules: [{}]\n\n", ns);
  }

  void footer() {
    if (!tree_.tied.empty()) {
      out_ += "\ntied weights (one storage, counted once):\n";
      for (const auto& t : tree_.tied) out_ += fmt::format("  {} -> {}\n", t.alias, t.target);
    }
    if (tree_.checkpoint_only_tensors > 0)
      out_ += fmt::format("\ncheckpoint also holds {} tensors ({} elements) that transformers {} on load\n",
                          tree_.checkpoint_only_tensors, fmt::group_digits(tree_.checkpoint_only_numel),
                          tree_.dequantized ? "drops, or folds into their weights (scales)," : "drops");
  }

  std::string params_str(const Module& m) const {
    std::string s;
    for (const auto& p : m.params) {
      if (!s.empty()) s += ", ";
      if (!p.tied_to.empty())
        s += fmt::format("{} -> {}", p.name, p.tied_to);
      else
        s += fmt::format("{}{} {}{}", p.name, shape_str(p.shape), dtype_name(p.dtype), p.buffer ? " (buffer)" : "");
    }
    return s;
  }

  void module(int idx, const std::string& label, int depth, int repeat) {
    const Module& m = tree_.modules[idx];
    const std::string indent(static_cast<std::size_t>(depth) * 2, ' ');
    std::string line = indent + (label.empty() ? "" : "(" + label + "): ");
    line += repeat > 1 ? fmt::format("{} x {}", repeat, bold(m.cls)) : bold(m.cls);
    if (m.total_numel > 0) line += "  " + human_count(m.total_numel) + " params";
    if (marks_) {
      const std::string& mark = (*marks_)[static_cast<std::size_t>(idx)];
      if (!mark.empty()) line += "  " + (style_.color ? "\x1b[36m" + mark + "\x1b[0m" : mark);
    } else if (!m.params.empty()) {
      line += "  " + dim(params_str(m));
    }
    out_ += line + "\n";
    // Consecutive children with identical structure and numeric names collapse into one line (a
    // child of a folded tree is as many children as it repeats).
    for (std::size_t k = 0; k < m.children.size();) {
      const int c = m.children[k];
      const Module& first = tree_.modules[c];
      std::size_t next = k + 1;
      int run = first.repeat;
      const bool numeric = !first.name.empty() && std::isdigit(static_cast<unsigned char>(first.name[0]));
      while (numeric && next < m.children.size() && same_structure(tree_, marks_, c, m.children[next]))
        run += tree_.modules[m.children[next++]].repeat;
      const Module& last = tree_.modules[m.children[next - 1]];
      const std::string child_label =
          run > 1 ? fmt::format("{}-{}", first.name, repeat_instance_name(last, last.repeat - 1)) : first.name;
      module(c, child_label, depth + 1, run);
      k = next;
    }
  }
};

}  // namespace

// peft's print_trainable_parameters line.
std::string peft_trainable_line(const std::string& adapter, std::int64_t trainable, std::int64_t total) {
  return fmt::format("LoRA adapter {}: trainable params: {} || all params: {} || trainable%: {:.4f}", adapter,
                     fmt::group_digits(trainable), fmt::group_digits(total),
                     total ? 100.0 * static_cast<double>(trainable) / static_cast<double>(total) : 0.0);
}

std::string render_tree_text(const ModuleTree& tree, const TextStyle& style) { return TextTree(tree, style).render(); }

std::string render_marked_tree_text(const ModuleTree& tree, const std::vector<std::string>& marks,
                                    const TextStyle& style) {
  return TextTree(tree, style, &marks).render_marked();
}

}  // namespace shardcheck
