// get_peft_model(model, LoraConfig) as a module tree (shardcheck/peft_model.hpp). Reproduces peft 0.20
// (checked against real peft 0.20.1.dev0 on transformers 5.12.1: fixtures/peft-oracle/adapters/*/record*.json):
//   * which modules get LoRA: tuners/tuners_utils.py BaseTuner.inject_adapter over the base model's
//     named_modules() as they were before any replacement, each key tested by
//     check_target_module_exists (exclude_modules, then modules_to_save, then target_modules with
//     layers_to_transform), "all-linear" resolved by _maybe_include_all_linear_layers;
//   * the layer each becomes: tuners/lora/layer.py LoraLayer.__init__ registers base_layer,
//     lora_dropout, lora_A, lora_B, lora_embedding_A, lora_embedding_B, lora_magnitude_vector in that
//     order; Linear.update_layer adds lora_A[name] = Linear(in, r, bias=False), lora_B[name] =
//     Linear(r, out, bias=lora_bias); Embedding.update_layer the ParameterDict entries [r, V] and
//     [D, r]; DoRA (variants.py DoraLinearVariant.init) lora_magnitude_vector[name] = DoraLinearLayer
//     with weight [out]; transformers' Conv1D is a Linear target with fan_in_fan_out (its weight is
//     [in, out]);
//   * the ranks: rank_pattern/alpha_pattern looked up by utils/other.py get_pattern_key;
//   * modules_to_save: utils/other.py _set_trainable over named_modules(remove_duplicate=False) of the
//     model after injection, matched by key.endswith(name), wrapped in ModulesToSaveWrapper
//     (original_module + modules_to_save[name], a deepcopy);
//   * what trains: _mark_only_adapters_as_trainable (adapters and wrapper copies; bias "all": every
//     `.bias`; "lora_only": the LoRA layers' base biases);
//   * dtypes: adapters are created in float32, moved to the base layer's float dtype, then
//     cast_adapter_dtype (autocast_adapter_dtype=True) upcasts fp16/bf16/fp8 to float32: so float32,
//     or float64 over a float64 base; wrapper copies keep the module's dtype.
#include "shardcheck/peft_model.hpp"

#include "shardcheck/finding_codes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <unordered_set>
#include <unordered_map>

#include "resolve/registry_yaml.hpp"
#include "resolve/tree_internal.hpp"
#include "shardcheck/repeated_blocks.hpp"
#include "util/stage_timer.hpp"

namespace shardcheck {
namespace {

using registry_yaml::Node;

bool ends_with_component(const std::string& key, const std::string& name) {
  return key == name || (key.size() > name.size() && key.ends_with(name) && key[key.size() - name.size() - 1] == '.');
}

std::string python_list(const std::vector<std::string>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", '" : "'") + v[i] + "'";
  return s + "]";
}

std::string selector_text(const ModuleSelector& sel) {
  switch (sel.kind) {
    case ModuleSelector::Kind::names:
      return python_list(sel.names);
    case ModuleSelector::Kind::regex:
      return sel.regex;
    case ModuleSelector::Kind::all_linear:
      return "all-linear";
    case ModuleSelector::Kind::unset:
      return "None";
  }
  return "";
}

// At the adapter field's source; severity and exit code are the catalogue's (finding_codes.hpp).
Diagnostic adapter_finding(const std::string& code, const LoraAdapter& a, const std::string& field, std::string message,
                           std::string help) {
  return finding(code, setting_location(a.source_of(field), a.source, nullptr), std::move(message), std::move(help));
}

enum class Target { none, excluded, lora };

// check_target_module_exists with every pattern compiled once and name lists as hash sets. Python's
// re.fullmatch / re.match become std::regex_match / regex_search(match_continuous): ECMAScript reads
// the simple patterns peft configs hold alike, and throws regex_error (a finding) on Python-only
// syntax rather than matching something else. A list
// entry t matches key == t or key.endswith("." + t), i.e. key itself or one of its suffixes after a
// dot (all-linear on Llama-3.1-405B is 882 full names against 2,000 modules).
class Injector {
 public:
  // Throws std::regex_error for a pattern ECMAScript cannot read.
  Injector(const LoraAdapter& a, const ModuleSelector& targets) : a_(a), targets_(targets) {
    if (a.exclude_modules.kind == ModuleSelector::Kind::regex) exclude_regex_.emplace(a.exclude_modules.regex);
    exclude_names_.reserve(a.exclude_modules.names.size());
    for (const auto& n : a.exclude_modules.names) exclude_names_.insert(n);
    for (const auto& m : a.modules_to_save) saved_.emplace_back("(^|.*\\.)" + m + "($|\\..*)");
    if (targets.kind == ModuleSelector::Kind::regex) target_regex_.emplace(targets.regex);
    target_names_.reserve(targets.names.size());
    for (const auto& n : targets.names) {
      target_names_.insert(n);
      target_leaves_.insert(leaf(n));
    }
    if (a.layers_to_transform && !a.layers_to_transform->empty()) {  // compiled only when they are used
      for (const auto& p : a.layers_pattern) layer_regexes_.emplace_back(".*?\\." + p + "\\.(\\d+)\\.");
      if (a.layers_pattern.empty()) layer_regexes_.emplace_back(R"(.*?\.[^.]*\.(\d+)\.)");
    }
    for (const auto& [pat, v] : a.rank_pattern) rank_.emplace_back(std::regex("(.*\\.)?(" + pat + ")"), v);
  }

  Target check(const std::string& key) const {
    if (exclude_regex_ && std::regex_match(key, *exclude_regex_)) return Target::excluded;
    if (!exclude_names_.empty() && key_or_suffix_in(key, exclude_names_)) return Target::excluded;
    for (const auto& rx : saved_)
      if (std::regex_search(key, rx, std::regex_constants::match_continuous)) return Target::excluded;
    if (targets_.kind == ModuleSelector::Kind::unset) return Target::none;
    if (target_regex_) return std::regex_match(key, *target_regex_) ? Target::lora : Target::none;
    // A list (or "all-linear", resolved to a set of full names): exact names skip layers_to_transform.
    // A name matches exactly or as a "."-suffix, so only where the last components agree (an
    // all-linear list of a big model holds ~900 full names, and most modules are not Linear).
    if (!target_leaves_.contains(leaf(key))) return Target::none;
    if (target_names_.contains(std::string_view(key))) return Target::lora;
    const bool found = key_or_suffix_in(key, target_names_);
    if (!found || !a_.layers_to_transform || a_.layers_to_transform->empty())
      return found ? Target::lora : Target::none;
    std::smatch m;
    bool indexed = false;
    for (const auto& rx : layer_regexes_)
      if ((indexed = std::regex_search(key, m, rx, std::regex_constants::match_continuous))) break;
    if (!indexed) return Target::none;
    const int layer = std::stoi(m[1].str());
    const auto& want = *a_.layers_to_transform;
    return std::find(want.begin(), want.end(), layer) != want.end() ? Target::lora : Target::none;
  }

  int rank(const std::string& key) const { return static_cast<int>(lookup(rank_, key, a_.r)); }

 private:
  const LoraAdapter& a_;
  const ModuleSelector& targets_;
  // Views into the adapter's and the selector's names (which outlive the injector), looked up by
  // views into the key: no string is made per name or per lookup.
  using NameSet = std::unordered_set<std::string_view>;
  std::optional<std::regex> exclude_regex_, target_regex_;
  NameSet exclude_names_, target_names_, target_leaves_;
  std::vector<std::regex> saved_, layer_regexes_;
  std::vector<std::pair<std::regex, double>> rank_;  // alpha_pattern only scales: no layout

  static std::string_view leaf(std::string_view name) {
    const auto dot = name.rfind('.');
    return dot == std::string_view::npos ? name : name.substr(dot + 1);
  }

  static bool key_or_suffix_in(std::string_view key, const NameSet& names) {
    if (names.contains(key)) return true;
    for (std::size_t dot = key.find('.'); dot != std::string_view::npos; dot = key.find('.', dot + 1))
      if (names.contains(key.substr(dot + 1))) return true;
    return false;
  }

  // utils/other.py get_pattern_key: the first key (in the file's order) for which
  // re.match(rf"(.*\.)?({key})$", name) succeeds.
  static double lookup(const std::vector<std::pair<std::regex, double>>& patterns, const std::string& key,
                       double fallback) {
    for (const auto& [rx, v] : patterns)
      if (std::regex_match(key, rx)) return v;
    return fallback;
  }
};

// The new tree, built in pre-order. It remembers where each base module went (an index, no name),
// which is all that tied aliases need; the names peft gave the frozen parameters follow from the
// tree itself (peft_base_names).
class Builder {
 public:
  Builder(ModuleTree& out, const ModuleTree& base) : out_(out), base_(base), new_index_(base.modules.size(), -1) {}

  // `children` is how many children the new module will get (reserved: a LoRA plan of a big model
  // adds ~10,000 modules, and growing their vectors one push at a time was a visible part of it).
  int add(int parent, std::string_view name, std::string_view cls, std::size_t children = 0) {
    const int idx = static_cast<int>(out_.modules.size());
    Module& m = out_.modules.emplace_back();
    m.name = name;
    m.cls = cls;
    m.parent = parent;
    m.children.reserve(children);
    if (parent >= 0) {
      Module& up = out_.modules[static_cast<std::size_t>(parent)];
      m.path = qualified_name(up.path, name);
      up.children.push_back(idx);
    }
    return idx;
  }

  ParamInfo& param(int module, const std::string& name, std::vector<std::int64_t> shape, DType dtype) {
    ParamInfo p;
    p.name = name;
    p.numel = 1;
    for (auto d : shape) p.numel *= d;
    p.shape = std::move(shape);
    p.dtype = dtype;
    p.requires_grad = true;
    return out_.modules[static_cast<std::size_t>(module)].params.emplace_back(std::move(p));
  }

  // Base module `old` and its parameters, frozen as _mark_only_adapters_as_trainable leaves the base
  // model, as new module `m`, which from now on is where its parameters are found.
  void take_params(int old, int m) {
    const Module& src = base_.modules[static_cast<std::size_t>(old)];
    Module& dst = out_.modules[static_cast<std::size_t>(m)];
    dst.params.reserve(src.params.size());
    for (const ParamInfo& from : src.params) dst.params.emplace_back(from).requires_grad = false;
    new_index_[static_cast<std::size_t>(old)] = m;
  }

  // Copies `old` (a module of the base model) and its subtree under `parent` as `name`, frozen. A copy
  // (`deep`) is deepcopy: new storages, trainable, ties to outside the subtree dropped, and not where
  // the base model's parameters went.
  int copy(int old, int parent, const std::string& name, bool deep) {
    const Module& src = base_.modules[static_cast<std::size_t>(old)];
    const int m = add(parent, name, src.cls, src.children.size());
    if (deep) {
      Module& dst = out_.modules[static_cast<std::size_t>(m)];
      dst.params.reserve(src.params.size());
      for (const ParamInfo& from : src.params) {
        ParamInfo& p = dst.params.emplace_back(from);
        p.requires_grad = true;
        p.tied_to.clear();
      }
    } else {
      take_params(old, m);
    }
    for (int c : src.children) {
      const Module& child = base_.modules[static_cast<std::size_t>(c)];
      out_.modules[static_cast<std::size_t>(copy(c, m, child.name, deep))].repeat = child.repeat;
    }
    return m;
  }

  // The PeftModel name of base parameter `old_full` ("model.embed_tokens.weight"), or nullopt when
  // no such parameter was carried over. Only tied aliases ask, so the base model's paths are indexed
  // on the first question.
  std::optional<std::string> new_name_of(const std::string& old_full) {
    if (old_paths_.empty())
      for (std::size_t i = 0; i < base_.modules.size(); ++i)
        old_paths_.emplace(base_.modules[i].path, static_cast<int>(i));
    const std::size_t dot = old_full.rfind('.');
    const std::string_view path =
        dot == std::string::npos ? std::string_view() : std::string_view(old_full).substr(0, dot);
    const std::string_view name =
        dot == std::string::npos ? std::string_view(old_full) : std::string_view(old_full).substr(dot + 1);
    const auto it = old_paths_.find(path);
    if (it == old_paths_.end()) return std::nullopt;
    const int now = new_index_[static_cast<std::size_t>(it->second)];
    if (now < 0) return std::nullopt;
    return qualified_name(out_.modules[static_cast<std::size_t>(now)].path, name);
  }

 private:
  ModuleTree& out_;
  const ModuleTree& base_;
  std::vector<int> new_index_;  // base module -> the new module that holds its parameters, -1: none
  std::unordered_map<std::string_view, int> old_paths_;  // base module path -> index
};

const ParamInfo* weight_of(const Module& m) {
  for (const auto& p : m.params)
    if (p.name == "weight" && !p.buffer) return &p;
  return nullptr;
}

DType adapter_dtype(const ParamInfo* base_weight) {
  return base_weight && base_weight->dtype == DType::F64 ? DType::F64 : DType::F32;
}

std::string torch_size(std::span<const std::int64_t> shape) {
  std::string s;
  for (auto d : shape) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "torch.Size([" + s + "])";
}

// PeftModel.from_pretrained -> set_peft_model_state_dict -> load_state_dict(strict=False): a saved
// matrix whose shape differs from the layer this config builds is torch's size-mismatch error (an
// adapter trained on another model size, or its config edited); one the model has no place for is
// dropped with peft's warning.
bool check_saved_weights(const ModuleTree& tree, const LoraAdapter& a, DiagnosticSink& sink) {
  // Saved keys name every instance of the materialised PeftModel; the tree may hold each repeated
  // block once (shardcheck/repeated_blocks.hpp), so names are looked up by walking down it.
  auto is_saved = [&](std::string_view path) {
    const int m = find_module_instance(tree, path);
    return m >= 0 && tree.modules[static_cast<std::size_t>(m)].cls == "ModulesToSaveWrapper";
  };
  ModuleInstanceFinder modules(tree);  // the keys come sorted: neighbours share most of the walk
  auto find = [&](std::string_view full) -> const ParamInfo* {
    const std::size_t dot = full.rfind('.');
    const int m = modules.find(dot == std::string_view::npos ? std::string_view() : full.substr(0, dot));
    if (m < 0) return nullptr;
    const std::string_view name = dot == std::string_view::npos ? full : full.substr(dot + 1);
    for (const ParamInfo& p : tree.modules[static_cast<std::size_t>(m)].params)
      if (p.name == name) return &p;
    return nullptr;
  };
  const std::string& file = a.weights->path;
  std::vector<std::string> mismatches, unexpected;
  std::string full;  // one buffer for every key's parameter name
  for (const TensorInfo& t : a.weights->tensors) {
    parameter_of_saved_key(full, t.name, a.name, is_saved);
    const ParamInfo* p = find(full);
    if (!p) {
      unexpected.emplace_back(t.name);
      continue;
    }
    if (!std::equal(t.shape.begin(), t.shape.end(), p->shape.begin(), p->shape.end()))
      mismatches.push_back(
          fmt::format("size mismatch for {}: copying a param with shape {} from checkpoint, the "
                      "shape in current model is {}.",
                      full, torch_size(t.shape), torch_size(p->shape)));
  }
  if (!mismatches.empty()) {
    Diagnostic d =
        finding("PEFT008", in_file(file),
                fmt::format("RuntimeError: Error(s) in loading state_dict: {}{}", mismatches.front(),
                            mismatches.size() > 1 ? fmt::format(" (and {} more)", mismatches.size() - 1) : ""),
                "the saved adapter does not fit this model: it was trained on another base model (check "
                "base_model_name_or_path in adapter_config.json) or its config no longer matches its weights");
    sink.report(std::move(d));
    return false;
  }
  if (!unexpected.empty()) {
    Diagnostic d =
        finding("PEFT009", in_file(file),
                fmt::format("{} saved tensor(s) have no place in the PeftModel this config builds and are not "
                            "loaded, e.g. {}",
                            unexpected.size(), unexpected.front()),
                "the adapter's config and weights disagree (target_modules or modules_to_save edited after saving?)");
    sink.report(std::move(d));
  }
  return true;
}

// peft 0.20 utils/transformers_weight_conversion.py _convert_peft_config_moe (with
// _resolve_string_target_modules), which inject_adapter runs before anything else on a transformers 5
// model of a converted MoE family: target_modules naming the 4.x expert projections or the router
// become target_parameters on the fused 5.x parameters, a fused parameter gets r and lora_alpha times
// the names fused into it, and target_modules becomes the set of names left (empty when none was
// given: peft's default targets are then never applied). Confirmed on the oracle (qwen3_moe
// all-linear) and on a tiny Mixtral: None gives "No `target_modules` passed ...", ["w1"] the fused error.
struct MoeConversion {
  std::string error;  // peft's ValueError when only some names of a fused parameter are targeted
};

std::optional<MoeConversion> convert_moe_targets(const ModuleTree& base, LoraAdapter& a,
                                                 const std::vector<std::pair<std::string, std::string>>& mapping) {
  auto leaf = [](const std::string& key) {
    const auto dot = key.rfind('.');
    return dot == std::string::npos ? key : key.substr(dot + 1);
  };
  std::set<std::string> names;
  switch (a.target_modules.kind) {
    case ModuleSelector::Kind::all_linear:
      // The 5.x Linear layers by leaf name, plus every 4.x name of the mapping (they were Linear then).
      for (const auto& m : base.modules)
        if (!m.path.empty() && (base.is_instance(m, "Linear") || base.is_instance(m, "Conv1D")) &&
            m.path != base.output_embeddings)
          names.insert(leaf(m.path));
      for (const auto& [old_name, new_name] : mapping) names.insert(old_name);
      break;
    case ModuleSelector::Kind::regex: {
      // Leaf names of the module and parameter keys the pattern fullmatches, and the 4.x names it would
      // have matched beside a fused parameter's container.
      const std::regex rx(a.target_modules.regex);
      std::map<std::string, std::vector<std::string>> containers;  // parameter name -> modules holding it
      for (const auto& m : base.modules) {
        if (!m.path.empty() && std::regex_match(m.path, rx)) names.insert(m.name);
        for (const auto& p : m.params) {
          if (p.buffer) continue;
          const std::string key = qualified_name(m.path, p.name);
          if (std::regex_match(key, rx)) names.insert(p.name);
          containers[p.name].push_back(m.path);
        }
      }
      for (const auto& [old_name, new_name] : mapping) {
        if (names.count(old_name)) continue;
        for (const auto& c : containers[new_name])
          if (std::regex_match(c + "." + old_name, rx)) {
            names.insert(old_name);
            break;
          }
      }
      if (names.empty()) return std::nullopt;  // left to the usual "not found" error
      break;
    }
    case ModuleSelector::Kind::names:
      names.insert(a.target_modules.names.begin(), a.target_modules.names.end());
      break;
    case ModuleSelector::Kind::unset:
      break;
  }
  std::map<std::string, std::vector<std::string>> fused;  // 5.x parameter -> its 4.x names, in peft's order
  for (const auto& [old_name, new_name] : mapping) fused[new_name].push_back(old_name);
  std::set<std::string> params(a.target_parameters.begin(), a.target_parameters.end()), remaining;
  std::map<std::string, std::set<std::string>> present;
  for (const auto& t : names) {
    const auto hit =
        std::find_if(mapping.begin(), mapping.end(), [&](const auto& kv) { return ends_with_component(t, kv.first); });
    if (hit == mapping.end()) {
      remaining.insert(t);
      continue;
    }
    params.insert(hit->second);
    present[hit->second].insert(hit->first);
  }
  MoeConversion out;
  for (const auto& [new_name, olds] : fused) {
    if (olds.size() < 2) continue;
    const auto& have = present[new_name];
    if (!have.empty() && have.size() < olds.size()) {
      std::string got, missing;
      for (const auto& o : have) got += (got.empty() ? "" : ", ") + o;
      std::set<std::string> lacking(olds.begin(), olds.end());
      for (const auto& o : have) lacking.erase(o);
      for (const auto& o : lacking) missing += (missing.empty() ? "" : ", ") + o;
      out.error = fmt::format(
          "Cannot convert PEFT target(s) {} without also targeting {} because they are fused "
          "into {}.",
          got, missing, new_name);
      return out;
    }
    if (have.size() == olds.size()) {
      // rank_pattern[rf".*\.{re.escape(name)}"] (a dict: an existing key keeps its place).
      const std::string key = ".*\\." + new_name;
      const auto n = static_cast<int>(olds.size());
      auto rank =
          std::find_if(a.rank_pattern.begin(), a.rank_pattern.end(), [&](const auto& kv) { return kv.first == key; });
      if (rank == a.rank_pattern.end())
        a.rank_pattern.emplace_back(key, a.r * n);
      else
        rank->second = a.r * n;
      auto alpha =
          std::find_if(a.alpha_pattern.begin(), a.alpha_pattern.end(), [&](const auto& kv) { return kv.first == key; });
      if (alpha == a.alpha_pattern.end())
        a.alpha_pattern.emplace_back(key, a.lora_alpha * n);
      else
        alpha->second = a.lora_alpha * n;
    }
  }
  a.target_parameters.assign(params.begin(), params.end());
  a.target_modules = ModuleSelector{ModuleSelector::Kind::names, {remaining.begin(), remaining.end()}, ""};
  return out;
}

// Where the last component of `key` equal to `component`, with a component before it and one after
// it, ends (the position of the dot after it), or npos: key.rfind(".lora_A.") and the like, one
// component at a time from the end rather than a compare at every byte (a 405B all-linear adapter has
// ~1,800 keys).
std::size_t end_of_inner_component(std::string_view key, std::string_view component) {
  for (std::size_t end = key.rfind('.'); end != std::string_view::npos && end > 0;) {
    const std::size_t dot = key.rfind('.', end - 1);
    if (dot == std::string_view::npos) return std::string_view::npos;  // the first component has no dot before it
    if (key.substr(dot + 1, end - dot - 1) == component) return end;
    end = dot;
  }
  return std::string_view::npos;
}

}  // namespace

// The parameter a key of adapter_model.safetensors loads into: peft saves the adapter's state dict
// without the adapter name and set_peft_model_state_dict puts it back (utils/save_and_load.py):
// "X.lora_A.weight" -> "X.lora_A.<name>.weight", "X.lora_magnitude_vector" ->
// "X.lora_magnitude_vector.<name>.weight", "X.lora_embedding_A" -> "X.lora_embedding_A.<name>", and a
// modules_to_save module's "X.weight" -> "X.modules_to_save.<name>.weight".
void parameter_of_saved_key(std::string& out, std::string_view key, std::string_view name,
                            const std::function<bool(std::string_view)>& is_saved_module) {
  out.clear();
  for (const std::string_view part : {std::string_view("lora_A"), std::string_view("lora_B")})
    if (const auto at = end_of_inner_component(key, part); at != std::string_view::npos) {
      out.append(key.substr(0, at + 1)).append(name).append(1, '.').append(key.substr(at + 1));
      return;
    }
  for (const std::string_view part : {std::string_view(".lora_embedding_A"), std::string_view(".lora_embedding_B")})
    if (key.ends_with(part)) {
      out.append(key).append(1, '.').append(name);
      return;
    }
  if (key.ends_with(".lora_magnitude_vector")) {
    out.append(key).append(1, '.').append(name).append(".weight");
    return;
  }
  const auto dot = key.rfind('.');
  if (dot != std::string_view::npos && is_saved_module(key.substr(0, dot))) {
    out.append(key.substr(0, dot)).append(".modules_to_save.").append(name).append(key.substr(dot));
    return;
  }
  out.append(key);
}

std::string parameter_of_saved_key(const std::string& key, const std::string& name,
                                   const std::set<std::string>& saved_modules) {
  std::string out;
  parameter_of_saved_key(out, key, name,
                         [&](std::string_view path) { return saved_modules.count(std::string(path)) > 0; });
  return out;
}

std::optional<PeftRules> PeftRules::load(const std::string& rules_dir, DiagnosticSink& sink) {
  static thread_local std::string path;
  path = rules_dir + "/peft.yaml";
  registry_yaml::Arena arena;
  auto bad = [&](const Node* at, std::string message) {
    sink.report(registry_yaml::rules_error(path, std::move(message), at ? at->line : -1, at ? at->column : -1));
    return std::nullopt;
  };
  try {
    const Node* root = registry_yaml::parse_file(&path, arena);
    if (!root || !root->is_map()) return bad(root, "expected a mapping");
    PeftRules rules;
    const Node* targets = root->get("default_lora_targets");
    if (!targets || !targets->is_map())
      return bad(root, "expected `default_lora_targets`, a mapping of model_type to targets");
    for (const auto& [k, v] : targets->entries) {
      ModuleSelector sel;
      if (v->is_scalar()) {
        sel.kind = ModuleSelector::Kind::regex;
        sel.regex = v->text;
      } else if (v->is_sequence()) {
        sel.kind = ModuleSelector::Kind::names;
        for (const Node* n : v->items) {
          if (!n->is_scalar()) return bad(n, "expected a module name");
          sel.names.push_back(n->text);
        }
      } else {
        return bad(v, "expected a list of module names or a regular expression");
      }
      rules.default_targets[k->text] = std::move(sel);
    }
    if (const Node* moe = root->get("moe_target_conversion")) {
      const Node* fam = moe->get("families");
      const Node* types = moe->get("model_types");
      if (!fam || !fam->is_map() || !types || !types->is_map())
        return bad(moe, "expected `families` and `model_types` mappings");
      std::map<std::string, std::vector<std::pair<std::string, std::string>>> families;
      for (const auto& [k, v] : fam->entries) {
        if (!v->is_map()) return bad(v, "expected a mapping of 4.x module name to 5.x parameter name");
        for (const auto& [old_name, new_name] : v->entries) {
          if (!new_name->is_scalar()) return bad(new_name, "expected a parameter name");
          families[k->text].emplace_back(old_name->text, new_name->text);
        }
      }
      for (const auto& [k, v] : types->entries) {
        if (!families.count(v->text)) return bad(v, fmt::format("family `{}` is not under `families`", v->text));
        rules.moe_mapping[k->text] = families[v->text];
      }
    }
    if (const Node* cls = root->get("transposed_expert_classes")) {
      if (!cls->is_sequence()) return bad(cls, "expected a list of class names");
      for (const Node* n : cls->items) rules.transposed_expert_classes.push_back(n->text);
    }
    if (const Node* req = root->get("fsdp_qlora_requires")) {
      if (!req->is_map()) return bad(req, "expected a mapping of package to a version requirement");
      for (const auto& [k, v] : req->entries) {
        const std::string text = v->is_scalar() ? v->text : "";
        const std::string op = text.starts_with(">=") ? ">=" : text.starts_with(">") ? ">" : "";
        const auto version = Version::parse(text.substr(op.size()));
        if (op.empty() || !version) return bad(v, "expected '>=X.Y.Z' or '>X.Y.Z'");
        rules.fsdp_qlora_requires[k->text] = {op, *version};
      }
    }
    return rules;
  } catch (const registry_yaml::SyntaxError& e) {
    sink.report(registry_yaml::rules_error(path, e.message, e.line, e.column));
    return std::nullopt;
  }
}

bool attach_lora_adapter(ModuleTree& tree, const LoraAdapter& adapter, const std::string& rules_dir,
                         DiagnosticSink& sink) {
  util::StageTimer timer("resolve: rules/peft.yaml");
  const auto rules = PeftRules::load(rules_dir, sink);
  if (!rules) return false;
  timer.lap("resolve: PEFT adapter");
  return apply_lora_adapter(tree, adapter, *rules, sink);
}

std::unordered_map<std::string, std::string> peft_base_names(const ModuleTree& tree) {
  std::unordered_map<std::string, std::string> names;
  if (!tree.peft) return names;
  // Per module, its path in the transformers model; nullopt above that model and inside what peft
  // added. Parents precede children, so one pass in order sees each parent's first.
  std::vector<std::optional<std::string>> base_path(tree.modules.size());
  for (std::size_t i = 1; i < tree.modules.size(); ++i) {
    const Module& m = tree.modules[i];
    if (m.path == "base_model.model") {
      base_path[i].emplace();
      continue;
    }
    const auto& up = base_path[static_cast<std::size_t>(m.parent)];
    if (!up) continue;
    const std::string& up_cls = tree.modules[static_cast<std::size_t>(m.parent)].cls;
    if (up_cls.starts_with("lora.") || up_cls == "ParamWrapper") {
      if (m.name == "base_layer") base_path[i] = up;
    } else if (up_cls == "ModulesToSaveWrapper") {
      if (m.name == "original_module") base_path[i] = up;
    } else {
      base_path[i] = qualified_name(*up, m.name);
    }
  }
  for (std::size_t i = 1; i < tree.modules.size(); ++i) {
    if (!base_path[i]) continue;
    const Module& m = tree.modules[i];
    for (const ParamInfo& p : m.params)
      if (!p.buffer) names.emplace(qualified_name(m.path, p.name), qualified_name(*base_path[i], p.name));
  }
  return names;
}

bool apply_lora_adapter(ModuleTree& tree, const LoraAdapter& adapter, const PeftRules& rules, DiagnosticSink& sink,
                        bool fold_repeats) {
  return build_peft_model(tree, adapter, rules, sink, fold_repeats) && check_saved_adapter_weights(tree, adapter, sink);
}

bool check_saved_adapter_weights(const ModuleTree& tree, const LoraAdapter& adapter, DiagnosticSink& sink) {
  return !adapter.weights || check_saved_weights(tree, adapter, sink);
}

bool build_peft_model(ModuleTree& tree, const LoraAdapter& given, const PeftRules& rules, DiagnosticSink& sink,
                      bool fold_repeats) {
  // LoraLayer.update_layer builds nn.Dropout(p=lora_dropout) when it is above 0, and torch refuses a
  // probability above 1 (torch/nn/modules/dropout.py); 0 or less is an Identity.
  if (given.lora_dropout > 1) {
    sink.report(adapter_finding(
        "PEFT002", given, "lora_dropout",
        fmt::format("ValueError: dropout probability has to be between 0 and 1, but got {} (lora_dropout)",
                    given.lora_dropout),
        "lora_dropout is a probability, e.g. 0.05"));
    return false;
  }
  if (given.prepare_kbit) {
    for (auto& m : tree.modules)
      for (auto& p : m.params)
        if (!p.buffer && !p.packed_4bit() && (p.dtype == DType::F16 || p.dtype == DType::BF16)) p.dtype = DType::F32;
    finalize_counts(tree);
  }
  const ModuleTree& base = tree;
  // The config as inject_adapter rewrites it: transformers 5 MoE targets first, then peft's default
  // targets for the model_type, then all-linear.
  // A copy only when the conversion rewrites it (an all-linear adapter of a big model lists ~900
  // names and its saved tensors' table).
  std::optional<LoraAdapter> converted;
  const LoraAdapter* adapter = &given;
  std::optional<MoeConversion> moe;
  if (tree.transformers >= Version{5, 0, 0})
    if (const auto it = rules.moe_mapping.find(tree.model_type); it != rules.moe_mapping.end()) {
      try {
        adapter = &converted.emplace(given);
        moe = convert_moe_targets(base, *converted, it->second);
      } catch (const std::regex_error& e) {
        sink.report(
            adapter_finding("PEFT002", *converted, "target_modules",
                            fmt::format("a module pattern of the adapter is not a regular expression shardcheck can "
                                        "read ({})",
                                        e.what()),
                            ""));
        return false;
      }
      if (moe && !moe->error.empty()) {
        sink.report(
            adapter_finding("PEFT012", *converted, "target_modules", "ValueError: " + moe->error,
                            fmt::format("transformers 5 fuses them into one parameter of every expert; target all "
                                        "of them (or none) in this {} model",
                                        tree.model_type)));
        return false;
      }
    }
  const LoraAdapter& a = *adapter;
  PeftSummary summary;
  summary.adapter = a.source;
  // _prepare_adapter_config: peft's default for the model_type, unless the conversion above already
  // replaced a missing target_modules by an empty set (which then matches nothing).
  ModuleSelector targets = a.target_modules;
  if (targets.kind == ModuleSelector::Kind::unset && !moe) {
    const auto it = rules.default_targets.find(tree.model_type);
    if (it != rules.default_targets.end()) {
      targets = it->second;
    } else if (a.target_parameters.empty()) {
      sink.report(adapter_finding("PEFT004", a, "target_modules",
                                  fmt::format("ValueError: Please specify `target_modules` or `target_parameters`in "
                                              "`peft_config` (peft has no default LoRA targets for model_type {})",
                                              tree.model_type),
                                  "set target_modules (--lora-target-modules), e.g. all-linear"));
      return false;
    }
  }
  if (targets.kind == ModuleSelector::Kind::all_linear) {
    // _maybe_include_all_linear_layers: every Linear/Conv1D but get_output_embeddings().
    ModuleSelector resolved;
    resolved.kind = ModuleSelector::Kind::names;
    for (const auto& m : base.modules)
      if (!m.path.empty() && (base.is_instance(m, "Linear") || base.is_instance(m, "Conv1D")) &&
          m.path != base.output_embeddings)
        resolved.names.push_back(m.path);
    targets = std::move(resolved);
  }
  if (!a.target_parameters.empty()) {
    // ParamWrapper.__init__ refuses what it cannot apply to a bare parameter (tuners/lora/layer.py).
    const char* refused = a.lora_dropout != 0 ? "lora_dropout != 0"
                          : a.fan_in_fan_out  ? "fan_in_fan_out"
                          : a.lora_bias       ? "lora_bias=True"
                          : a.use_dora        ? "use_dora=True"
                                              : nullptr;
    if (refused) {
      const std::string field = a.lora_dropout != 0 ? "lora_dropout" : a.use_dora ? "use_dora" : "target_parameters";
      sink.report(adapter_finding(
          "PEFT013", a, field, fmt::format("ValueError: lora.ParamWrapper does not work with {}.", refused),
          fmt::format("{}peft wraps the targeted parameters ({}) in ParamWrapper layers, which need lora_dropout 0, "
                      "no lora_bias and no DoRA",
                      moe ? "this transformers 5 MoE model's experts are 3-D parameters, so " : "",
                      python_list(a.target_parameters))));
      return false;
    }
  }

  util::StageTimer timer("peft: match");
  // Matching, over the base model's modules as they were (inject_adapter's key list).
  std::optional<Injector> injector;
  std::vector<Target> target(base.modules.size(), Target::none);
  bool any_excluded = false, any_unmatched = false;
  try {
    injector.emplace(a, targets);
    const Injector& inj = *injector;
    for (std::size_t i = 1; i < base.modules.size(); ++i) {
      target[i] = inj.check(base.modules[i].path);
      if (target[i] == Target::excluded) any_excluded = true;
      if (target[i] == Target::none) any_unmatched = true;
    }
  } catch (const std::regex_error& e) {
    sink.report(adapter_finding(
        "PEFT002", a, "target_modules",
        fmt::format("a module pattern of the adapter is not a regular expression shardcheck can read ({})", e.what()),
        ""));
    return false;
  }
  for (std::size_t i = 1; i < base.modules.size(); ++i) {
    if (target[i] != Target::lora) continue;
    const Module& m = base.modules[i];
    const bool linear = base.is_instance(m, "Linear") || base.is_instance(m, "Conv1D");
    const bool embedding = base.is_instance(m, "Embedding");
    if (!linear && !embedding) {
      const bool known_to_peft = base.is_instance(m, "Conv1d") || base.is_instance(m, "MultiheadAttention");
      sink.report(adapter_finding(
          known_to_peft ? "PEFT006" : "PEFT005", a, "target_modules",
          known_to_peft
              ? fmt::format("LoRA on '{}' ({}) is not laid out by shardcheck yet", m.path, m.cls)
              : fmt::format("ValueError: Target module {} is not supported. Currently, only the following modules are "
                            "supported: `torch.nn.Linear`, `torch.nn.Embedding`, `torch.nn.Conv1d`, `torch.nn.Conv2d`, "
                            "`torch.nn.Conv3d`, `transformers.pytorch_utils.Conv1D`, `torch.nn.MultiheadAttention.`. "
                            "('{}' matched target_modules {})",
                            m.cls, m.path, selector_text(targets)),
          known_to_peft ? "" : "name the layers inside it (e.g. its q_proj, v_proj) instead of the container"));
      return false;
    }
    if (embedding && a.use_dora) {
      sink.report(adapter_finding("PEFT006", a, "use_dora",
                                  fmt::format("DoRA on the embedding '{}' is not laid out by shardcheck yet", m.path),
                                  ""));
      return false;
    }
    if (!weight_of(m)) {
      sink.report(adapter_finding("PEFT006", a, "target_modules",
                                  fmt::format("'{}' ({}) has no weight shardcheck knows", m.path, m.cls), ""));
      return false;
    }
    summary.targeted.push_back(m.path);
  }
  // target_parameters (BaseTuner._inject_parameters): over the modules in order, each module's own
  // parameters in registration order; a key matches a name exactly or as a "."-suffix. Several on one
  // module nest: the first matched is the innermost ParamWrapper.
  std::vector<std::vector<const ParamInfo*>> wrapped(base.modules.size());
  if (!a.target_parameters.empty())
    for (std::size_t i = 0; i < base.modules.size(); ++i) {
      const Module& m = base.modules[i];
      for (const auto& p : m.params) {
        if (p.buffer) continue;
        const std::string key = qualified_name(m.path, p.name);
        if (std::none_of(a.target_parameters.begin(), a.target_parameters.end(),
                         [&](const std::string& t) { return ends_with_component(key, t); }))
          continue;
        std::string refused;
        if (m.path.empty())
          refused = fmt::format(
              "ValueError: Targeting an nn.Parameter on the top-level module is not supported "
              "(parameter '{}').",
              p.name);
        else if (target[i] == Target::lora)
          refused = fmt::format(
              "ValueError: Trying to wrap an `nn.Parameter` of layer '{}' of type {}, which is not a "
              "valid target. Make sure that this layer is not also targeted with `target_modules`.",
              m.path, m.cls);
        if (!refused.empty()) {
          sink.report(adapter_finding("PEFT013", a, "target_parameters", std::move(refused),
                                      "target either the layer (target_modules) or its parameter (target_parameters)"));
          return false;
        }
        if (p.shape.size() != 2 && p.shape.size() != 3) {
          sink.report(adapter_finding(
              "PEFT013", a, "target_parameters",
              fmt::format("ValueError: lora.ParamWrapper was initialized with {} dimensional Parameter, "
                          "but only 2d and 3d are supported ({})",
                          p.shape.size(), key),
              ""));
          return false;
        }
        wrapped[i].push_back(&p);
        summary.targeted.push_back(key);
      }
    }
  if (summary.targeted.empty()) {
    std::string message;
    std::string extra;
    if (a.layers_to_transform) {
      std::string layers;
      for (int l : *a.layers_to_transform) layers += (layers.empty() ? "" : ", ") + std::to_string(l);
      extra += fmt::format(" Note: You specified 'layers_to_transform': [{}].", layers);
    }
    if (!a.layers_pattern.empty())
      extra += fmt::format(" You also specified 'layers_pattern': {}.", python_list(a.layers_pattern));
    if (any_excluded && !any_unmatched)
      message =
          "All modules were excluded. This is likely unintended. Check your `target_modules`, `exclude_modules` "
          "and `modules_to_save` configuration.";
    else if (!any_excluded && targets.kind == ModuleSelector::Kind::names && targets.names.empty())
      message =
          "No `target_modules` passed but also no `target_parameters` found. Please check the values for these "
          "arguments.";
    else if (!any_excluded)
      message = fmt::format(
          "Target modules {} not found in the base model. Please check the target modules and try "
          "again.{}",
          selector_text(a.target_modules.kind == ModuleSelector::Kind::unset ? targets : a.target_modules), extra);
    else
      message =
          "No modules were targeted for adaptation. This might be caused by a combination of mismatched target "
          "modules and excluded modules." +
          extra;
    std::vector<std::string> leaves;
    std::set<std::string> seen;
    for (const auto& m : base.modules)
      if (!m.name.empty() && (base.is_instance(m, "Linear") || base.is_instance(m, "Conv1D")) &&
          seen.insert(m.name).second)
        leaves.push_back(m.name);
    sink.report(adapter_finding(
        "PEFT004", a, "target_modules", "NoMatchingPeftModuleError: " + message,
        fmt::format("this {} model's Linear layers are named {}", base.architecture, python_list(leaves))));
    return false;
  }

  // modules_to_save, matched after injection by key.endswith(name) (_set_trainable): the targets of
  // LoRA are excluded from it above, so a saved module is one of the base model's modules.
  std::vector<char> saved(base.modules.size(), 0);
  for (std::size_t i = 1; i < base.modules.size(); ++i)
    for (const auto& name : a.modules_to_save)
      if (base.modules[i].path.ends_with(name)) {
        // An ancestor already wrapped: peft wraps the outermost match, whose copy then holds this one.
        bool inside = false;
        for (int p = base.modules[i].parent; p > 0; p = base.modules[static_cast<std::size_t>(p)].parent)
          inside = inside || saved[static_cast<std::size_t>(p)];
        if (!inside) {
          saved[i] = 1;
          summary.saved.push_back(base.modules[i].path);
        }
      }

  // A caller that reads folded trees gets the PeftModel with its repeated blocks held once: the base
  // model folds where the decisions above agree block for block (a rank_pattern or
  // layers_to_transform that tells layers apart keeps them apart), and the build then makes one
  // instance of each.
  if (fold_repeats) {
    std::vector<std::uint64_t> marks(base.modules.size(), 0);
    std::map<std::vector<int>, std::size_t> wrapped_kinds;
    for (std::size_t i = 1; i < base.modules.size(); ++i) {
      std::uint64_t mark = saved[i] ? 1 : 0;
      if (target[i] == Target::lora)
        mark |= 2 | static_cast<std::uint64_t>(static_cast<std::uint32_t>(injector->rank(base.modules[i].path))) << 8;
      // A module with wrapped parameters is no LoRA target (PEFT013 above): which of its parameters
      // are wrapped, by position, with each one's rank, as a number that names that list.
      if (!wrapped[i].empty()) {
        std::vector<int> key;
        for (const ParamInfo* p : wrapped[i]) {
          key.push_back(static_cast<int>(p - base.modules[i].params.data()));
          key.push_back(injector->rank(qualified_name(base.modules[i].path, p->name)));
        }
        const auto [it, added] = wrapped_kinds.try_emplace(std::move(key), wrapped_kinds.size() + 1);
        mark |= static_cast<std::uint64_t>(it->second) << 40;
      }
      marks[i] = mark;
    }
    const std::vector<int> now = fold_repeated_blocks(tree, marks);
    if (tree.folded) {
      std::vector<Target> folded_target(base.modules.size(), Target::none);
      std::vector<char> folded_saved(base.modules.size(), 0);
      std::vector<std::vector<const ParamInfo*>> folded_wrapped(base.modules.size());
      for (std::size_t i = 0; i < now.size(); ++i) {
        if (now[i] < 0) continue;
        const auto k = static_cast<std::size_t>(now[i]);
        folded_target[k] = target[i];
        folded_saved[k] = saved[i];
        folded_wrapped[k] = std::move(wrapped[i]);  // the parameters moved with their modules
      }
      target = std::move(folded_target);
      saved = std::move(folded_saved);
      wrapped = std::move(folded_wrapped);
    }
  }

  timer.lap("peft: build");
  // Build the PeftModel.
  ModuleTree out;
  // Growing the vector of Modules is most of the cost of a big adapter (all-linear on 405B adds ~10k
  // modules): reserve what it can need: every LoRA layer adds 10 modules beside its base_layer, a
  // saved module at most doubles its subtree, plus the PeftModel and LoraModel.
  std::size_t saved_modules = 0;
  for (const auto& path : summary.saved)
    for (const auto& m : base.modules)
      if (m.path == path || m.path.starts_with(path + ".")) saved_modules += 2;
  std::size_t layers = 0;  // in this tree, which may hold one block of each run
  for (std::size_t i = 0; i < base.modules.size(); ++i)
    layers += (target[i] == Target::lora ? 1 : 0) + wrapped[i].size();
  out.modules.reserve(base.modules.size() + 10 * layers + saved_modules + 2);
  Builder b(out, base);
  const std::string root_cls = a.task_type == "CAUSAL_LM" ? "PeftModelForCausalLM"
                               : a.task_type == "SEQ_CLS" ? "PeftModelForSequenceClassification"
                                                          : "PeftModel";
  const int root = b.add(-1, "", root_cls);
  const int lora_model = b.add(root, "base_model", "LoraModel");
  // Emits base module `old` (and its subtree) as `name` under `parent`.
  std::function<void(int, int, const std::string&)> emit;
  // The module itself unchanged and frozen; its children as they come.
  auto emit_plain = [&](int old, int parent, const std::string& name) {
    const Module& src = base.modules[static_cast<std::size_t>(old)];
    const int m = b.add(parent, name, src.cls, src.children.size());
    b.take_params(old, m);
    for (int c : src.children) emit(c, m, base.modules[static_cast<std::size_t>(c)].name);
  };
  // lora.ParamWrapper's adapters for one parameter (tuners/lora/layer.py ParamWrapper.update_layer):
  // lora_A [r * E, in], lora_B [out, r * E] as nn.Linear, for a 3-D [E, out, in] parameter (or
  // [E, in, out] on transposed experts) or a 2-D [out, in] one (E = 1).
  auto param_adapters = [&](int wrapper, const Module& src, const ParamInfo& p) {
    const bool three = p.shape.size() == 3;
    const bool transposed =
        three && std::find(rules.transposed_expert_classes.begin(), rules.transposed_expert_classes.end(), src.cls) !=
                     rules.transposed_expert_classes.end();
    const std::int64_t experts = three ? p.shape[0] : 1;
    const std::int64_t in = three ? (transposed ? p.shape[1] : p.shape[2]) : p.shape[1];
    const std::int64_t outf = three ? (transposed ? p.shape[2] : p.shape[1]) : p.shape[0];
    const std::int64_t r = injector->rank(qualified_name(src.path, p.name)) * experts;
    const DType dt = adapter_dtype(&p);
    b.add(b.add(wrapper, "lora_dropout", "ModuleDict"), a.name, "Identity");  // lora_dropout is 0 here
    b.param(b.add(b.add(wrapper, "lora_A", "ModuleDict"), a.name, "Linear"), "weight", {r, in}, dt);
    b.param(b.add(b.add(wrapper, "lora_B", "ModuleDict"), a.name, "Linear"), "weight", {outf, r}, dt);
    b.add(wrapper, "lora_embedding_A", "ParameterDict");
    b.add(wrapper, "lora_embedding_B", "ParameterDict");
    b.add(wrapper, "lora_magnitude_vector", "ModuleDict");
  };
  auto emit_one = [&](int old, int parent, const std::string& name) {
    const Module& src = base.modules[static_cast<std::size_t>(old)];
    if (saved[static_cast<std::size_t>(old)]) {
      const int w = b.add(parent, name, "ModulesToSaveWrapper");
      b.copy(old, w, "original_module", false);
      const int dict = b.add(w, "modules_to_save", "ModuleDict");
      b.copy(old, dict, a.name, true);
      return;
    }
    if (const auto& params = wrapped[static_cast<std::size_t>(old)]; !params.empty()) {
      // Nested wrappers, outermost (the last parameter matched) first, in pre-order: each wrapper's
      // base_layer before its own adapters.
      std::vector<int> wrappers;
      for (std::size_t k = 0; k < params.size(); ++k)
        wrappers.push_back(b.add(k == 0 ? parent : wrappers.back(), k == 0 ? name : "base_layer", "ParamWrapper"));
      emit_plain(old, wrappers.back(), "base_layer");
      for (std::size_t k = 0; k < params.size(); ++k) param_adapters(wrappers[params.size() - 1 - k], src, *params[k]);
      return;
    }
    if (target[static_cast<std::size_t>(old)] != Target::lora) {
      emit_plain(old, parent, name);
      return;
    }
    const bool embedding = base.is_instance(src, "Embedding");
    const bool conv1d = base.is_instance(src, "Conv1D");
    const bool four_bit = src.cls == "Linear4bit";  // peft tuners/lora/bnb.py dispatch_bnb_4bit: lora.Linear4bit
    const ParamInfo* w = weight_of(src);
    const int r = injector->rank(src.path);
    const DType dt = adapter_dtype(w);
    const int layer = b.add(parent, name,
                            embedding  ? "lora.Embedding"
                            : four_bit ? "lora.Linear4bit"
                                       : "lora.Linear",
                            7);
    b.copy(old, layer, "base_layer", false);
    // Children in LoraLayer.__init__'s order, each ModuleDict's entry right after it (pre-order).
    b.add(b.add(layer, "lora_dropout", "ModuleDict", 1), a.name, a.lora_dropout > 0 ? "Dropout" : "Identity");
    // nn.Linear weight [out, in] (a Params4bit keeps it beside its packed storage); transformers'
    // Conv1D weight [in, out]; Embedding [V, D].
    const std::vector<std::int64_t>& ws = w->packed_4bit() ? w->unpacked_shape : w->shape;
    const std::int64_t in = embedding ? ws.at(0) : conv1d ? ws.at(0) : ws.at(1);
    const std::int64_t outf = embedding ? ws.at(1) : conv1d ? ws.at(1) : ws.at(0);
    const int la = b.add(layer, "lora_A", "ModuleDict", 1);
    if (!embedding) b.param(b.add(la, a.name, "Linear"), "weight", {r, in}, dt);
    const int lb = b.add(layer, "lora_B", "ModuleDict", 1);
    if (!embedding) {
      const int b_lin = b.add(lb, a.name, "Linear");
      b.param(b_lin, "weight", {outf, r}, dt);
      if (a.lora_bias) b.param(b_lin, "bias", {outf}, dt);
    }
    const int ea = b.add(layer, "lora_embedding_A", "ParameterDict");
    const int eb = b.add(layer, "lora_embedding_B", "ParameterDict");
    if (embedding) {
      b.param(ea, a.name, {r, in}, dt);
      b.param(eb, a.name, {outf, r}, dt);
    }
    const int mag = b.add(layer, "lora_magnitude_vector", "ModuleDict");
    if (a.use_dora) b.param(b.add(mag, a.name, "DoraLinearLayer"), "weight", {outf}, dt);
  };
  // What takes a base module's place (the module, its LoRA layer, wrapper or ParamWrapper) stands for
  // as many instances as the base module in a folded tree.
  emit = [&](int old, int parent, const std::string& name) {
    const std::size_t first = out.modules.size();
    emit_one(old, parent, name);
    out.modules[first].repeat = base.modules[static_cast<std::size_t>(old)].repeat;
  };
  emit(0, lora_model, "model");

  timer.lap("peft: trainable");
  // What trains (_mark_only_adapters_as_trainable): the adapters and the saved copies were made
  // trainable and the rest frozen as they were built; then the bias modes, and tied aliases follow
  // their storage under its new name.
  if (a.bias == "all" || a.bias == "lora_only")
    for (auto& m : out.modules) {
      const bool lora_base = m.name == "base_layer" && m.parent >= 0 &&
                             out.modules[static_cast<std::size_t>(m.parent)].cls.starts_with("lora.");
      for (auto& p : m.params)
        if (p.name == "bias" && !p.buffer && (a.bias == "all" || lora_base)) p.requires_grad = true;
    }
  // Only a model with tied weights has aliases to follow (the base model's few modules tell).
  const bool any_tied = std::any_of(base.modules.begin(), base.modules.end(), [](const Module& m) {
    return std::any_of(m.params.begin(), m.params.end(), [](const ParamInfo& p) { return !p.tied_to.empty(); });
  });
  std::vector<ParamInfo*> aliases;
  if (any_tied)
    for (auto& m : out.modules)
      for (auto& p : m.params)
        if (!p.tied_to.empty()) {
          if (auto now = b.new_name_of(p.tied_to)) p.tied_to = std::move(*now);
          aliases.push_back(&p);
        }
  for (ParamInfo* p : aliases)
    if (const ParamInfo* target = find_param(out, p->tied_to)) p->requires_grad = target->requires_grad;

  timer.lap("peft: finish");
  // The PeftModel's modules replace the tree's; what else the rest of shardcheck reads from the tree
  // follows the new paths (config, versions, dtypes, activations and _no_split_modules stay:
  // PeftModel forwards _no_split_modules to the base model).
  auto moved = [](const std::string& path) {
    return path.empty() ? std::string("base_model.model") : "base_model.model." + path;
  };
  for (TiedWeight& t : tree.tied) {
    if (auto now = b.new_name_of(t.alias)) t.alias = std::move(*now);
    if (auto now = b.new_name_of(t.target)) t.target = std::move(*now);
  }
  if (!tree.input_embeddings.empty()) tree.input_embeddings = moved(tree.input_embeddings);
  if (!tree.output_embeddings.empty()) tree.output_embeddings = moved(tree.output_embeddings);
  // getattr(peft_model, base_model_prefix) (accelerate's _find_final_norm, fsdp_utils.py 1.14) goes
  // through PeftModel.__getattr__ and LoraModel.__getattr__ to LoraModel.model: the whole
  // transformers model, not its base model, so no final norm is found among its children.
  summary.base_model_path = tree.base_model_path;
  tree.base_model_path = "base_model.model";
  for (auto& [path, style] : tree.fsdp_plan) path = moved(path);
  if (tree.tp_plan)
    for (auto& entry : *tree.tp_plan) entry.pattern = moved(entry.pattern);
  for (auto& entry : tree.ep_plan) entry.pattern = moved(entry.pattern);
  tree.class_chains["lora.Linear"] = {"lora.Linear", "LoraLayer", "BaseTunerLayer", "Module"};
  tree.class_chains["lora.Embedding"] = {"lora.Embedding", "LoraLayer", "BaseTunerLayer", "Module"};
  tree.class_chains["lora.Linear4bit"] = {"lora.Linear4bit", "LoraLayer", "BaseTunerLayer", "Module"};
  tree.class_chains["ParamWrapper"] = {"ParamWrapper", "Module", "LoraLayer", "BaseTunerLayer"};
  tree.class_chains["ModulesToSaveWrapper"] = {"ModulesToSaveWrapper", "AuxiliaryTrainingWrapper", "Module"};
  tree.class_chains["DoraLinearLayer"] = {"DoraLinearLayer", "Module"};
  tree.class_chains["LoraModel"] = {"LoraModel", "BaseTuner", "Module"};
  tree.class_chains[root_cls] = {root_cls, "PeftModel", "PushToHubMixin", "Module"};
  tree.modules = std::move(out.modules);
  if (a.trainable_dtype)
    for (auto& m : tree.modules)
      for (auto& p : m.params)
        if (!p.buffer && p.requires_grad) p.dtype = *a.trainable_dtype;
  finalize_counts(tree);
  const std::vector<std::int64_t> mult = module_multiplicity(tree);
  for (std::size_t i = 0; i < tree.modules.size(); ++i)
    for (const auto& p : tree.modules[i].params) {
      if (p.buffer || !p.tied_to.empty()) continue;
      // peft's get_nb_trainable_parameters counts a Params4bit as numel * 2 * itemsize: the
      // elements it packs.
      const std::int64_t n = mult[i] * (p.packed_4bit() ? p.numel * 2 * std::max(1, dtype_bits(p.dtype) / 8) : p.numel);
      summary.total += n;
      if (p.requires_grad) summary.trainable += n;
    }
  tree.peft = std::move(summary);
  return true;
}

}  // namespace shardcheck
