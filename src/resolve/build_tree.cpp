// build_module_tree: picks the architecture, expands it, matches the checkpoint, counts; in two
// halves (expand_module_tree, complete_module_tree) for callers that overlap the first with loading.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <regex>
#include <unordered_map>

#include "resolve/tree_internal.hpp"
#include "shardcheck/quantization.hpp"
#include "shardcheck/finding_codes.hpp"
#include "shardcheck/module_tree.hpp"
#include "resolve/checkpoint_matcher.hpp"
#include "util/stage_timer.hpp"

namespace shardcheck {
namespace {

std::string known_types(const Registry& reg) {
  std::string s;
  for (const auto& t : reg.model_types()) s += (s.empty() ? "" : ", ") + t;
  return s;
}

}  // namespace

// What expand_module_tree hands to complete_module_tree.
struct TreeExpansion::State {
  ModelConfig config;  // as expanded (text_config of a multimodal wrapper chosen)
  const Registry* registry = nullptr;
  const ArchSpec* arch = nullptr;  // nullptr: a model_type the registry does not know
  Frame globals;
  FusedSources fused;
  std::optional<ModuleTree> tree;              // when arch is known
  std::unique_ptr<CheckpointMatcher> matcher;  // once asked for (checkpoint_observer)
  ResolveOptions options;
};

namespace {

// The parameters transformers loads in float32 whatever the model's dtype: _keep_in_fp32_modules when
// it loads in float16, _keep_in_fp32_modules_strict in float16 or bfloat16.
//  - 5.x (modeling_utils.py _get_dtype_plan and core_model_loading.py build_glob_alternation, read at
//    5.12.1): each pattern is a glob ('*' -> '.*', otherwise a regex) searched anywhere in the
//    checkpoint key, so "norm" also keeps "input_layernorm" and "q_norm";
//  - 4.x (modeling_utils.py _load_pretrained_model, 4.5x): a pattern matches whole dotted components,
//    ((^|\.)pattern($|\.)).
std::optional<std::regex> keep_in_fp32_pattern(const ModuleTree& tree, DType target, const Version& transformers) {
  std::vector<std::string> patterns;
  if (target == DType::F16) patterns = tree.keep_in_fp32_modules;
  if (target == DType::F16 || target == DType::BF16)
    patterns.insert(patterns.end(), tree.keep_in_fp32_modules_strict.begin(), tree.keep_in_fp32_modules_strict.end());
  if (patterns.empty()) return std::nullopt;
  const bool globs = transformers >= Version{5, 0, 0};
  std::string alternation;
  for (const auto& pattern : patterns) {
    std::string body;
    for (char c : pattern) body += globs && c == '*' ? std::string(".*") : std::string(1, c);
    alternation += (alternation.empty() ? "" : "|") + (globs ? "(" + body + ")" : "((^|\\.)" + body + "($|\\.))");
  }
  try {
    return std::regex(alternation);
  } catch (const std::regex_error&) {
    return std::nullopt;  // unreachable: the registry refuses a pattern that does not compile (registry.cpp)
  }
}

// from_pretrained's dtype (transformers modeling_utils.py _get_dtype, read at 5.12.1): "auto", the
// default from 5.0, takes config.json's dtype, else the first floating weight's; 4.x loaded in
// torch's default float32 unless torch_dtype was given. transformers loads every floating parameter
// in that one dtype (a checkpoint saved with mixed dtypes comes back uniform, checked with
// 5.12.1), so only a quantised checkpoint keeps several (its quantiser places them).
void apply_load_dtype(ModuleTree& tree, const ModelConfig& config, const ResolveOptions& options) {
  for (const auto& m : tree.modules)
    for (const auto& p : m.params)
      if (dtype_name(p.dtype).starts_with("F8_") || tree.dequantized) return;
  std::optional<DType> target;
  const bool auto_dtype =
      options.load_dtype == "auto" || (options.load_dtype.empty() && options.transformers >= Version{5, 0, 0});
  if (auto_dtype) {
    target = config.torch_dtype;
    for (const auto& m : tree.modules)
      for (const auto& p : m.params)
        if (!target && !p.buffer && !p.packed_4bit() && dtype_is_floating(p.dtype)) target = p.dtype;
  } else if (options.load_dtype.empty()) {
    target = DType::F32;
  } else {
    target = parse_dtype(options.load_dtype == "float32"    ? "F32"
                         : options.load_dtype == "bfloat16" ? "BF16"
                         : options.load_dtype == "float16"  ? "F16"
                                                            : options.load_dtype);
  }
  if (!target) return;
  const std::optional<std::regex> keep = keep_in_fp32_pattern(tree, *target, options.transformers);
  std::unordered_map<std::string, DType> kept;  // float32 parameters by name, for their tied aliases
  std::string fqn;
  for (auto& m : tree.modules)
    for (auto& p : m.params) {
      if (p.buffer || p.packed_4bit() || !dtype_is_floating(p.dtype)) continue;  // 4-bit storage stays
      p.dtype = *target;
      if (!keep || !p.tied_to.empty()) continue;
      fqn.assign(m.path).append(m.path.empty() ? "" : ".").append(p.name);
      if (std::regex_search(fqn, *keep)) kept.emplace(fqn, p.dtype = DType::F32);
    }
  // A tied alias is no key of its own in the checkpoint: it is its target's Parameter, in its dtype.
  if (!kept.empty())
    for (auto& m : tree.modules)
      for (auto& p : m.params)
        if (!p.tied_to.empty() && kept.count(p.tied_to)) p.dtype = DType::F32;
}

}  // namespace

FileObserver* TreeExpansion::checkpoint_observer() {
  State& state = *state_;
  if (!state.arch || !state.tree) return nullptr;
  if (!state.matcher)
    state.matcher = std::make_unique<CheckpointMatcher>(*state.tree, *state.arch, state.fused, state.globals);
  return state.matcher.get();
}

TreeExpansion::TreeExpansion(std::unique_ptr<State> state) : state_(std::move(state)) {}
TreeExpansion::TreeExpansion(TreeExpansion&&) noexcept = default;
TreeExpansion& TreeExpansion::operator=(TreeExpansion&&) noexcept = default;
TreeExpansion::~TreeExpansion() = default;

std::optional<TreeExpansion> expand_module_tree(const ModelConfig& config_in, const Registry& registry,
                                                const ResolveOptions& options, DiagnosticSink& sink) {
  auto state = std::make_unique<TreeExpansion::State>();
  state->config = config_in;
  state->registry = &registry;
  state->options = options;
  ModelConfig& config = state->config;
  const ArchSpec* arch = registry.find(config.model_type);
  // Multimodal wrappers keep the language model in text_config (e.g. gemma3 -> gemma3_text).
  if (!arch) {
    if (const auto text_type = config.string_field("text_config.model_type")) {
      if (const ArchSpec* inner = registry.find(*text_type)) {
        arch = inner;
        config.use_text_config = true;
        // Not a note: the vision tower, the projector and their _no_split_modules are missing, so
        // the units and the memory of the real model would be wrong (an error withholds the fit
        // verdict; the text model is still shown).
        sink.report(finding("ARCH002", in_file(config.path),
                            fmt::format("model_type '{}' is a composite model the registry does not describe; only its "
                                        "text_config ('{}') is, so the plan below leaves out everything else (a vision "
                                        "tower, a projector, their layer classes) and is not the job's",
                                        config.model_type, inner->model_type),
                            fmt::format("add rules/models/{}.yaml describing the whole model", config.model_type)));
      }
    }
  }
  state->arch = arch;
  if (!arch) return TreeExpansion(std::move(state));  // complete_module_tree decides (ARCH001)

  std::string root = options.architecture;
  if (root.empty()) {
    root = arch->architectures.front();
    if (!config.architectures.empty()) {
      const std::string& wanted = config.architectures.front();
      if (std::find(arch->architectures.begin(), arch->architectures.end(), wanted) != arch->architectures.end())
        root = wanted;
      else if (!config.use_text_config)
        sink.report(milder(
            finding("ARCH003", in_file(config.path),
                    fmt::format("architecture '{}' is not described by {}; using '{}'", wanted, arch->source, root)),
            Severity::warning));
    }
  } else if (std::find(arch->architectures.begin(), arch->architectures.end(), root) == arch->architectures.end()) {
    std::string list;
    for (const auto& a : arch->architectures) list += (list.empty() ? "" : ", ") + a;
    sink.report(finding("ARCH003", in_file(config.path),
                        fmt::format("expected one of {} for --architecture, found '{}'", list, root)));
    return std::nullopt;
  }

  const DType dtype = config.torch_dtype.value_or(DType::F32);
  util::StageTimer timer("resolve: expand registry tree");
  state->tree = expand_arch_tree(config, *arch, registry, options, root, dtype, state->globals, state->fused, sink);
  if (!state->tree) return std::nullopt;
  state->tree->config_path = config.path;
  // A checkpoint bitsandbytes already quantized: from_pretrained builds Linear4bit layers from its
  // config.json (any quantization_config passed besides is ignored), so the packed shapes are what
  // the checkpoint is matched against.
  bool eight_bit = false;
  if (auto pre = prequantized_bnb_4bit(config, eight_bit)) {
    state->options.bnb_4bit = pre;
    quantize_bnb_4bit(*state->tree, *pre);
  } else if (eight_bit) {
    sink.report(finding("CFG008", in_file(config.path),
                        "config.json's quantization_config is a bitsandbytes 8-bit checkpoint (load_in_8bit): its "
                        "Int8Params layers are not laid out by shardcheck",
                        "plan the unquantized checkpoint, or a 4-bit one"));
    return std::nullopt;
  }
  return TreeExpansion(std::move(state));
}

std::optional<ModuleTree> complete_module_tree(TreeExpansion expansion, const CheckpointMeta* ckpt,
                                               DiagnosticSink& sink) {
  TreeExpansion::State& state = *expansion.state_;
  const ModelConfig& config = state.config;
  if (!state.arch) {
    // A config.json with auto_map names classes the repository's own Python files define
    // (from_pretrained(..., trust_remote_code=True)); say so: the layout is not transformers'.
    std::string remote;
    for (const char* auto_class : {"AutoModelForCausalLM", "AutoModel", "AutoModelForImageTextToText"})
      if (const auto cls = config.string_field(std::string("auto_map.") + auto_class)) {
        remote = fmt::format(
            " It is a trust_remote_code model: auto_map gives {} = {} from the repository's own "
            "code, which transformers does not define.",
            auto_class, *cls);
        break;
      }
    if (ckpt) {
      sink.report(milder(finding("ARCH001", in_file(config.path),
                                 fmt::format("model_type '{}' is not in the registry: module classes are guessed "
                                             "from tensor names, and registration order follows the checkpoint.{}",
                                             config.model_type, remote),
                                 fmt::format("add rules/models/{}.yaml to describe it (known: {})", config.model_type,
                                             known_types(*state.registry))),
                         Severity::warning));
      ModuleTree tree = infer_module_tree(config, *ckpt, sink);
      tree.config_path = config.path;
      apply_load_dtype(tree, config, state.options);
      finalize_counts(tree);
      return tree;
    }
    sink.report(finding("ARCH001", in_file(config.path),
                        fmt::format("model_type '{}' is not in the registry and there is no checkpoint to infer the "
                                    "layout from.{}",
                                    config.model_type, remote),
                        fmt::format("known model types: {}", known_types(*state.registry))));
    return std::nullopt;
  }
  util::StageTimer timer("resolve: match checkpoint");
  ModuleTree& tree = *state.tree;
  if (ckpt) {
    if (state.matcher)
      state.matcher->apply(tree, *ckpt, sink);
    else
      match_checkpoint(tree, *state.arch, *ckpt, state.fused, state.globals, sink);
  }
  apply_load_dtype(tree, config, state.options);
  finalize_counts(tree);
  if (state.options.bnb_4bit && !tree.quantized_4bit()) quantize_bnb_4bit(tree, *state.options.bnb_4bit);
  return std::move(tree);
}

std::optional<ModuleTree> build_module_tree(const ModelConfig& config, const CheckpointMeta* ckpt,
                                            const Registry& registry, const ResolveOptions& options,
                                            DiagnosticSink& sink) {
  auto expansion = expand_module_tree(config, registry, options, sink);
  if (!expansion) return std::nullopt;
  return complete_module_tree(std::move(*expansion), ckpt, sink);
}

}  // namespace shardcheck
