// The layer classes accelerate wraps (utils/dataclasses.py `set_auto_wrap_policy` for FSDP1,
// utils/fsdp_utils.py `fsdp2_prepare_auto_wrap_policy` for FSDP2, accelerate 1.14.0). Class names are matched exactly
// against `type(m).__name__` by a depth-first search (`get_module_class_from_name`): no stripping, case-sensitive.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "shardcheck/effective_settings.hpp"
#include "shardcheck/finding_codes.hpp"
#include "shardcheck/text.hpp"

namespace shardcheck {
namespace {

// Whether some module's class is `name` (type(m).__name__ == name): a scan that stops at the first
// one, where a set of every class would compare strings for each of a PeftModel's ~10,000 modules.
bool has_class(const ModuleTree& tree, const std::string& name) {
  return std::any_of(tree.modules.begin(), tree.modules.end(), [&](const Module& m) { return m.cls == name; });
}

// A dumped model whose _no_split_modules is a string, or the set transformers made of one: what to
// say and what to write instead. "" when the attribute is a list of names.
std::string string_no_split_help(const ModuleTree& tree) {
  if (!tree.held_no_split) return {};
  const ModuleTree::HeldNoSplit& h = *tree.held_no_split;
  if (h.type == "str")
    return fmt::format(
        "_no_split_modules is the string '{0}', not a list: accelerate iterates it (list(model._no_split_modules), "
        "utils/dataclasses.py set_auto_wrap_policy, 1.14.0), one character at a time. Make it a list: "
        "_no_split_modules = [\"{0}\"]. ",
        h.text);
  if (!h.declared_by.empty())
    return fmt::format(
        "class {0} declares _no_split_modules = '{1}', a string: transformers' post_init (modeling_utils.py, "
        "5.12.1) holds set('{1}'), its characters, and accelerate looks each one up as a class. Make it a "
        "list: _no_split_modules = [\"{1}\"]. ",
        h.declared_by, h.declared_text);
  return {};
}

}  // namespace

// peft 0.20 utils/other.py fsdp_auto_wrap_policy: the names in FSDP_TRANSFORMER_CLS_TO_WRAP (which
// accelerate launch exports from fsdp_transformer_layer_cls_to_wrap), else the model's
// _no_split_modules (transformers >= 5.1: model._no_split_modules as it is), split on ','; empty names
// skipped (since peft 0.14); each looked up by get_module_class_from_name, and a missing one raises
// TypeError (a plain Exception before peft 0.20) with no class named.
static void resolve_peft_classes(const ModuleTree& tree, FsdpSettings& s, DiagnosticSink& sink) {
  if (s.wrap_classes.value.empty()) s.wrap_classes = {tree.no_split_modules, "model _no_split_modules"};
  std::vector<std::string> names;
  for (const auto& n : s.wrap_classes.value)
    if (!n.empty()) names.push_back(n);
  s.wrap_classes.value = names;
  for (const auto& name : names) {
    if (has_class(tree, name)) continue;
    std::string blocks;
    for (const auto& b : block_classes(tree)) blocks += (blocks.empty() ? "" : ",") + b;
    sink.report(model_setting_finding(
        "PLAN012", s.wrap_classes.source, tree.config_path,
        fmt::format("TypeError: Could not find the transformer layer class to wrap in the model. (peft's "
                    "FSDP wrap policy, which transformers' Trainer installs for a PEFT model, cannot find "
                    "class {})",
                    name),
        fmt::format("set fsdp_transformer_layer_cls_to_wrap: {} (accelerate launch passes it to peft as "
                    "FSDP_TRANSFORMER_CLS_TO_WRAP)",
                    blocks)));
    return;
  }
}

// A model inferred from its tensor names (no registry entry): its own _no_split_modules, which
// accelerate reads from the model class, is unknown; the guessed repeated block stands in for it, and
// the plan says so rather than passing the guess off as the model's.
static void warn_guessed_classes(const ModuleTree& tree, const FsdpSettings& s, DiagnosticSink& sink) {
  if (!tree.classes_guessed || s.wrap_classes.source != "model _no_split_modules") return;
  std::string guessed;
  for (const auto& c : tree.no_split_modules) guessed += (guessed.empty() ? "" : ", ") + c;
  sink.report(model_setting_finding(
      "ARCH004", s.wrap_classes.source, tree.config_path,
      fmt::format("this model's _no_split_modules is unknown (its model_type '{}' is not in the registry): "
                  "the plan wraps the repeated block shardcheck inferred from the tensor names ({}) where "
                  "accelerate will use the model class's own list",
                  tree.model_type, guessed.empty() ? "none found" : guessed),
      "give the real decoder-layer class with --wrap-cls (fsdp_transformer_layer_cls_to_wrap), or add "
      "rules/models/" +
          tree.model_type + ".yaml"));
}

void resolve_wrap_classes(const ModuleTree& tree, FsdpSettings& s, DiagnosticSink& sink) {
  if (s.policy.value == WrapPolicyKind::peft) {
    resolve_peft_classes(tree, s, sink);
    warn_guessed_classes(tree, s, sink);
    return;
  }
  if (s.policy.value != WrapPolicyKind::transformer) return;
  const Version& acc = s.accelerate_version.value;
  if (s.wrap_classes.value.empty()) {
    if (acc == Version{0, 34, 0} && s.fsdp_version.value == 1) {
      // v0.34.0 joined _no_split_modules into one string and iterated it (fixed in 0.34.1, #3075).
      std::string joined = fmt::format("{}", fmt::join(tree.no_split_modules, ", "));
      joined.erase(std::remove(joined.begin(), joined.end(), ' '), joined.end());
      std::vector<std::string> chars;
      for (char c : joined) chars.emplace_back(1, c);
      s.wrap_classes = {chars, "model _no_split_modules, iterated per character by accelerate 0.34.0"};
    } else {
      s.wrap_classes = {tree.no_split_modules, "model _no_split_modules"};
      warn_guessed_classes(tree, s, sink);
    }
  }
  if (s.wrap_classes.value.empty()) {
    sink.report(model_setting_finding(
        acc < Version{1, 0, 0} ? "PLAN010" : "PLAN011", s.wrap_classes.source, tree.config_path,
        acc < Version{1, 0, 0}
            ? "Could not find the transformer layer class to wrap in the model. (the model declares no "
              "_no_split_modules, so the class list is [''])"
            : "TRANSFORMER_BASED_WRAP with an empty class list wraps nothing: every parameter stays in "
              "the root unit",
        fmt::format("set fsdp_transformer_layer_cls_to_wrap (the blocks of this model: {})",
                    fmt::format("{}", fmt::join(block_classes(tree), ", ")))));
    return;
  }
  for (const auto& name : s.wrap_classes.value) {
    if (has_class(tree, name)) continue;
    std::set<std::string> present;  // every class, for the suggestion
    for (const auto& m : tree.modules) present.insert(m.cls);
    std::string help = fmt::format("the block classes of this {} model are: {}", tree.architecture,
                                   fmt::format("{}", fmt::join(block_classes(tree), ", ")));
    std::string best;
    std::size_t best_d = 4;
    for (const auto& c : present)
      if (auto d = edit_distance(name, c); d < best_d) {
        best_d = d;
        best = c;
      }
    const auto trimmed_start = name.find_first_not_of(' ');
    if (trimmed_start != std::string::npos &&
        name != name.substr(trimmed_start, name.find_last_not_of(' ') - trimmed_start + 1))
      help = fmt::format(
                 "'{}' has spaces: accelerate splits the list on ',' without stripping; write the names "
                 "with commas only. ",
                 name) +
             help;
    else if (!best.empty())
      help = fmt::format("did you mean '{}'? ", best) + help;
    if (s.wrap_classes.source.find("per character") != std::string::npos)
      help =
          "accelerate 0.34.0 iterates the characters of _no_split_modules (fixed in 0.34.1): set "
          "fsdp_transformer_layer_cls_to_wrap explicitly or upgrade. " +
          help;
    std::string message = acc < Version{0, 34, 0}
                              ? "Exception: Could not find the transformer layer class to wrap in the model."
                              : fmt::format(
                                    "ValueError: Could not find the transformer layer class {} in the "
                                    "model.",
                                    name);
    // transformers 5.x keeps _no_split_modules as a set (modeling_utils.py PreTrainedModel.post_init), and
    // accelerate iterates list(set): with several missing classes, which one is named depends on Python's
    // string hashing (PYTHONHASHSEED), on each rank.
    std::vector<std::string> missing;
    for (const auto& other : s.wrap_classes.value)
      if (!present.count(other)) missing.push_back(other);
    // A dump's list, tuple or string iterates in one order on every rank; a set (or a registry tree on
    // 5.x, where post_init makes it one) in the order of each process's string hashing.
    const bool set_order =
        tree.held_no_split ? tree.held_no_split->type.ends_with("set") : tree.transformers >= Version{5, 0, 0};
    if (missing.size() > 1 && s.wrap_classes.source == "model _no_split_modules" && set_order)
      message += fmt::format(" (_no_split_modules is a set in transformers 5.x, so the class named may be any of: {})",
                             fmt::join(missing, ", "));
    if (s.wrap_classes.source == "model _no_split_modules") {
      std::string blocks;  // accelerate splits the setting on ',' without stripping spaces
      for (const auto& b : block_classes(tree)) blocks += (blocks.empty() ? "" : ",") + b;
      help = fmt::format(
                 "this model's _no_split_modules names classes it does not contain; set "
                 "fsdp_transformer_layer_cls_to_wrap: {}. ",
                 blocks) +
             help;
      help = string_no_split_help(tree) + help;
    }
    sink.report(model_setting_finding("PLAN012", s.wrap_classes.source, tree.config_path, message, help));
    break;  // accelerate raises on the first class it cannot find
  }
}

}  // namespace shardcheck
