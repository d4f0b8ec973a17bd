// Expands an ArchSpec into the module tree transformers would build for a config.json: the head
// class's children in registration order, repeated layers, parameters with shapes evaluated from
// the config. Checkpoint matching lives in checkpoint_match.cpp, the fallback in infer_tree.cpp.
#include "shardcheck/module_tree.hpp"
#include "shardcheck/finding_codes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "resolve/scope.hpp"
#include "resolve/tree_internal.hpp"
#include "shardcheck/repeated_blocks.hpp"

namespace shardcheck {

std::vector<std::string> block_classes(const ModuleTree& tree) {
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (const auto& m : tree.modules)
    if (!m.name.empty() && std::isdigit(static_cast<unsigned char>(m.name[0])) && m.total_numel > 0 &&
        seen.insert(m.cls).second)
      out.push_back(m.cls);
  return out;
}

bool ModuleTree::is_instance(const Module& m, const std::string& cls) const {
  if (m.cls == cls) return true;  // the chain starts with the class itself
  auto it = class_chains.find(m.cls);
  if (it == class_chains.end()) return false;
  return std::find(it->second.begin(), it->second.end(), cls) != it->second.end();
}

std::vector<std::string> ModuleTree::subclasses_of(const std::string& base) const {
  std::vector<std::string> out{base};
  for (const auto& [cls, chain] : class_chains)
    if (cls != base && std::find(chain.begin(), chain.end(), base) != chain.end()) out.push_back(cls);
  return out;
}

namespace {

// A sub-config of a composite model (vision_config, text_config, ...) whose model_type the registry
// describes: its entry and its own scope (its fields completed by its config class).
struct SubModel {
  const ArchSpec* arch = nullptr;
  std::unique_ptr<Frame> frame;
};
using SubModels = std::map<std::string, SubModel>;

class Expander {
 public:
  Expander(const ArchSpec& arch, const Registry& reg, ModuleTree& tree, DType default_dtype,
           const SubModels* subs = nullptr)
      : arch_(arch), reg_(reg), tree_(tree), default_dtype_(default_dtype), subs_(subs) {}

  void expand_root(const std::string& cls, const Frame& globals) {
    std::vector<std::pair<std::string, Value>> no_args;
    expand(cls, "", "", -1, globals, no_args, "architecture");
  }

 private:
  const ArchSpec& arch_;
  const Registry& reg_;
  ModuleTree& tree_;
  DType default_dtype_;
  const SubModels* subs_;
  std::unordered_map<std::string, const ClassSpec*> structure_cache_;

  const ClassSpec& class_spec(const std::string& cls, const std::string& used_by) {
    const ClassSpec* spec = reg_.find_class(arch_, cls);
    if (!spec)
      throw ExpandError(fmt::format("class '{}' (used by {}) is not declared in {} or the builtins", cls,
                                    used_by.empty() ? "the root" : used_by, arch_.source),
                        /*rules_bug=*/true);
    return *spec;
  }

  // The class whose children/params describe `cls`: itself, or the first base that declares them
  // (a Python subclass that only overrides forward(), like LlamaSdpaAttention).
  const ClassSpec& structure_of(const ClassSpec& spec) {
    auto cached = structure_cache_.find(spec.name);
    if (cached != structure_cache_.end()) return *cached->second;
    const ClassSpec* cur = &spec;
    for (int depth = 0; !cur->structure_declared && !cur->bases.empty(); ++depth) {
      if (depth > 32) throw ExpandError(fmt::format("class '{}' has a base-class cycle", spec.name), true);
      cur = &class_spec(cur->bases.front(), spec.name);
    }
    structure_cache_[spec.name] = cur;
    return *cur;
  }

  // Argument defaults along the base chain; the most derived declaration wins.
  void add_defaults(const ClassSpec& spec, Frame& frame, int depth = 0) {
    if (depth > 32) return;
    for (const auto& d : spec.arg_defaults)
      if (!frame.has_own(d.name))
        frame.set(d.name, eval(d.expr, frame, [&] { return spec.name + " argument " + d.name; }));
    for (const auto& b : spec.bases)
      if (const ClassSpec* base = reg_.find_class(arch_, b)) add_defaults(*base, frame, depth + 1);
  }

  // `what` names the expression for an error message: a callable giving the text, called only
  // when there is an error (DeepSeek-V3's ~1.2k modules evaluate ~10k expressions; building each
  // message up front was a third of the expansion).
  template <class What>
  Value eval(const Expr& e, const Frame& frame, What&& what) {
    try {
      return e.evaluate(frame.lookup());
    } catch (const ExprError& err) {
      throw ExpandError(fmt::format("{} (`{}`): {}", what(), e.source(), err.what()), false, err.missing_name);
    }
  }

  template <class What>
  std::int64_t eval_dim(const Expr& e, const Frame& frame, What&& what) {
    Value v = eval(e, frame, what);
    const std::int64_t* i = v.as_int();
    if (!i || *i < 0)
      throw ExpandError(fmt::format("{} (`{}`) must be a non-negative integer, got {}", what(), e.source(), v.repr()));
    return *i;
  }

  std::string pick_class(const std::string& cls, const std::vector<ClassVariant>& variants, const Frame& frame,
                         const std::string& what) {
    for (const auto& v : variants)
      if (eval(v.condition, frame, [&] { return what + " variant"; }).truthy()) return v.cls;
    return cls;
  }

  int add_module(const std::string& cls, const std::string& path, const std::string& name, int parent) {
    // DeepSeek-V3 has ~110k modules; a config asking for millions is hostile or broken, and
    // materialising it would exhaust memory instead of failing with a message.
    constexpr std::size_t kMaxModules = 4'000'000;
    if (tree_.modules.size() >= kMaxModules)
      throw ExpandError(
          fmt::format("the layout would have more than {} modules (at {}); check the layer and "
                      "expert counts in config.json",
                      kMaxModules, path));
    Module m;
    m.cls = cls;
    m.path = path;
    m.name = name;
    m.parent = parent;
    const int idx = static_cast<int>(tree_.modules.size());
    tree_.modules.push_back(std::move(m));
    if (parent >= 0) tree_.modules[parent].children.push_back(idx);
    if (!tree_.class_chains.count(cls)) tree_.class_chains[cls] = reg_.class_chain(arch_, cls);
    return idx;
  }

  static std::string join(const std::string& path, const std::string& name) {
    return path.empty() ? name : path + "." + name;
  }

  int expand(const std::string& cls, const std::string& path, const std::string& name, int parent, const Frame& caller,
             std::vector<std::pair<std::string, Value>>& args, const std::string& used_by) {
    const ClassSpec& spec = class_spec(cls, used_by);
    const ClassSpec& body = structure_of(spec);
    Frame frame(&caller);
    for (auto& [k, v] : args) frame.set(k, std::move(v));
    add_defaults(spec, frame);

    const int idx = add_module(cls, path, name, parent);
    const std::string where = path.empty() ? cls : path;
    for (const auto& child : body.children) {
      if (child.condition &&
          !eval(*child.condition, frame, [&] { return where + "." + child.name + " condition"; }).truthy())
        continue;
      const std::string child_path = join(path, child.name);
      const std::size_t first_new = tree_.modules.size();
      if (!child.submodel.empty()) {
        expand_submodel(child, child_path, idx, frame, where);
        mark_unreached(child, frame, first_new, child_path);
        continue;
      }
      const std::string child_cls = pick_class(child.cls, child.variants, frame, child_path);
      if (child.repeat) {
        const std::int64_t n = eval_dim(*child.repeat, frame, [&] { return child_path + " repeat count"; });
        const int list = add_module(child_cls, child_path, child.name, idx);
        for (std::int64_t i = 0; i < n; ++i) {
          Frame loop(&frame);
          loop.set(child.index, Value(i));
          const std::string item_path = join(child_path, std::to_string(i));
          const std::string item_cls = pick_class(child.item, child.item_variants, loop, item_path);
          auto item_args = evaluate_args(child.item_args, loop, item_path);
          const std::size_t item_first = tree_.modules.size();
          expand(item_cls, item_path, std::to_string(i), list, loop, item_args, child_path);
          mark_unreached(child, loop, item_first, item_path);
        }
      } else {
        auto child_args = evaluate_args(child.args, frame, child_path);
        expand(child_cls, child_path, child.name, idx, frame, child_args, where);
        mark_unreached(child, frame, first_new, child_path);
      }
    }
    for (const auto& p : body.params) add_param(idx, p, frame, where);
    return idx;
  }

  // `unreached:` of a child (of each item of a repeat): every parameter of the modules just added.
  template <class F>
  void mark_unreached(const ChildSpec& child, const F& frame, std::size_t first, const std::string& path) {
    if (!child.unreached || !eval(*child.unreached, frame, [&] { return path + " unreached"; }).truthy()) return;
    for (std::size_t m = first; m < tree_.modules.size(); ++m)
      for (auto& p : tree_.modules[m].params) p.unreached = true;
  }

  // AutoModel.from_config(config.<key>): the sub-config's base model, in its own scope; the child's
  // `args` (evaluated here, in the composite's scope) are the sub-model root's arguments.
  void expand_submodel(const ChildSpec& child, const std::string& path, int parent, const Frame& caller,
                       const std::string& used_by) {
    const auto it = subs_ ? subs_->find(child.submodel) : SubModels::const_iterator{};
    if (!subs_ || it == subs_->end())
      throw ExpandError(
          fmt::format("{} is AutoModel.from_config(config.{}), but config.json has no {} whose model_type "
                      "the registry describes",
                      path, child.submodel, child.submodel),
          false, child.submodel);
    const ArchSpec& sub = *it->second.arch;
    Expander inner(sub, reg_, tree_, default_dtype_);
    auto args = evaluate_args(child.args, caller, path);
    try {
      inner.expand(sub.base_model_class, path, child.name, parent, *it->second.frame, args, used_by);
    } catch (const ExpandError& e) {
      // A field the sub-config lacks is named with its key: "vision_config.hidden_size".
      throw ExpandError(e.what(), e.rules_bug, e.missing_name.empty() ? "" : child.submodel + "." + e.missing_name);
    }
    for (auto& [k, v] : inner.fused_sources) fused_sources[k] = std::move(v);
    submodels_used.push_back(child.submodel);
    submodel_roots.emplace_back(child.submodel, path);
    for (auto& nested : inner.submodel_roots) submodel_roots.push_back(std::move(nested));
  }

  std::vector<std::pair<std::string, Value>> evaluate_args(const std::vector<NamedExpr>& args, const Frame& frame,
                                                           const std::string& where) {
    std::vector<std::pair<std::string, Value>> out;
    out.reserve(args.size());
    for (const auto& a : args)
      out.emplace_back(a.name, eval(a.expr, frame, [&] { return where + " argument " + a.name; }));
    return out;
  }

  void add_param(int module, const ParamSpec& p, const Frame& frame, const std::string& where) {
    auto what = [&] { return join(where, p.name); };
    if (p.condition && !eval(*p.condition, frame, [&] { return what() + " condition"; }).truthy()) return;
    ParamInfo info;
    info.name = p.name;
    info.buffer = p.buffer;
    info.numel = 1;
    for (const auto& dim : p.shape) {
      const std::int64_t d = eval_dim(dim, frame, [&] { return what() + " shape"; });
      info.shape.push_back(d);
      if (__builtin_mul_overflow(info.numel, d, &info.numel))
        throw ExpandError(fmt::format("{}: element count overflows", what()));
    }
    info.dtype = default_dtype_;
    if (p.dtype) {
      Value v = eval(*p.dtype, frame, [&] { return what() + " dtype"; });
      if (!v.is_null()) {
        auto d = v.as_string() ? parse_dtype(*v.as_string()) : std::nullopt;
        if (!d)
          throw ExpandError(
              fmt::format("{}: dtype `{}` gave {}, not a safetensors dtype name", what(), p.dtype->source(), v.repr()),
              true);
        info.dtype = *d;
      }
    }
    info.fused_from = p.from;
    tree_.modules[module].params.push_back(std::move(info));
    if (!p.from.empty()) fused_sources[{module, static_cast<int>(tree_.modules[module].params.size()) - 1}] = p.from;
  }

 public:
  std::map<std::pair<int, int>, std::vector<std::string>> fused_sources;
  std::vector<std::string> submodels_used;  // config keys expanded as sub-models, in order
  // (config key, module path) of every sub-model's root, nested ones included, in order.
  std::vector<std::pair<std::string, std::string>> submodel_roots;
};

// The fields of config.json's object `object` ("" = the whole file) as names of `frame`, relative
// to that object; nested objects are reachable as "a.b".
void add_fields(Frame& frame, const ModelConfig& config, std::string_view object) {
  config.for_each_field(object,
                        [&](std::string_view key, const ConfigField& c) { frame.set(std::string(key), c.value); });
}

std::string join_key(std::string_view object, std::string_view key) {
  return object.empty() ? std::string(key) : std::string(object) + "." + std::string(key);
}

// A derived field of the config class that cannot be computed on this config.
struct DerivedFieldError {
  const NamedExpr* field;
  ExprError error;
};

// What the config class adds to config.json's fields (transformers configuration_*.py): an
// attribute_map alias and its stored name are one attribute, whichever one the file spells
// (PretrainedConfig.__getattribute__/__setattr__); absent keys take the class defaults (an explicit
// null stays None, as in Python: DeepSeek's "q_lora_rank": null means no query LoRA); then the
// derived fields in order. Throws ExprError for a default, DerivedFieldError for a derived field.
void apply_config_class(Frame& globals, const ArchSpec& arch) {
  for (const auto& [alias, stored] : arch.attribute_map) {
    if (globals.has_own(stored) && !globals.has_own(alias))
      globals.set(alias, *globals.find(stored));
    else if (globals.has_own(alias) && !globals.has_own(stored))
      globals.set(stored, *globals.find(alias));
  }
  for (const auto& d : arch.defaults)
    if (!globals.has_own(d.name)) globals.set(d.name, d.expr.evaluate(globals.lookup()));
  for (const auto& d : arch.derived) {
    try {
      globals.set(d.name, d.expr.evaluate(globals.lookup()));
    } catch (const ExprError& e) {
      throw DerivedFieldError{&d, e};
    }
  }
}

// The names every registry expression may use beside the config's fields.
void set_run_fields(Frame& globals, const ResolveOptions& options, DType default_dtype) {
  globals.set("transformers", Value(options.transformers));
  globals.set("attn_implementation", Value(options.attn_implementation));
  globals.set("dtype", Value(std::string(dtype_name(default_dtype))));
}

}  // namespace

std::optional<ModuleTree> expand_arch_tree(const ModelConfig& config, const ArchSpec& arch, const Registry& reg,
                                           const ResolveOptions& options, const std::string& root_cls,
                                           DType default_dtype, Frame& globals,
                                           std::map<std::pair<int, int>, std::vector<std::string>>& fused,
                                           DiagnosticSink& sink) {
  ModuleTree tree;
  tree.model_type = arch.model_type;
  tree.since = arch.since;
  tree.architecture = root_cls;
  tree.transformers = options.transformers;
  // No explicit choice: transformers' default, sdpa where the model class supports it, else eager.
  ResolveOptions run = options;
  if (run.attn_implementation.empty()) run.attn_implementation = arch.supports_sdpa ? "sdpa" : "eager";
  tree.attn_implementation = run.attn_implementation;

  auto report = [&](std::string_view code, std::string msg) {
    sink.report(finding(code, in_file(code.starts_with("CFG") ? config.path : arch.source), std::move(msg)));
  };
  // The user's config.json lacks a field the layout needs: CFG006, naming the field and the file.
  auto report_missing_field = [&](const std::string& name, const std::string& detail) {
    Diagnostic d =
        finding("CFG006", in_file(config.path),
                fmt::format("config.json has no '{}', which the {} layout needs ({}; {})", name, arch.model_type,
                            detail, arch.source),
                fmt::format("add \"{}\" to config.json, as the {} config class saves it", name, arch.model_type));
    sink.report(std::move(d));
  };

  if (options.attn_implementation == "sdpa" && !arch.supports_sdpa)
    sink.report(finding("ARCH005", in_file(config.path),
                        fmt::format("ValueError: {} does not support an attention implementation through "
                                    "torch.nn.functional.scaled_dot_product_attention yet (--attn-implementation "
                                    "sdpa; {})",
                                    root_cls, arch.source),
                        "leave the attention implementation to transformers (eager for this model), or use a "
                        "flash-attention kernel it supports"));
  // Globals: config.json fields, then the registry's defaults for absent ones, then derived fields.
  add_fields(globals, config, config.effective_object());
  set_run_fields(globals, run, default_dtype);
  // --dequantize: from_pretrained(..., quantization_config=<its config with dequantize=True>), e.g.
  // FineGrainedFP8Config(dequantize=True). transformers 5.x also turns it on by itself when no GPU
  // can run the quantised kernels (quantizers/quantizer_finegrained_fp8.py validate_environment).
  if (options.dequantize) {
    if (globals.has_own("quantization_config")) {
      globals.set("quantization_config.dequantize", Value(true));
      tree.dequantized = true;
    } else {
      sink.report(finding("CFG007", in_file(config.path),
                          "--dequantize: config.json has no quantization_config; the checkpoint is not quantised"));
    }
  }
  // Sub-configs the registry describes (composite models): each completed by its own config class,
  // and seen so completed from this scope ("text_config.hidden_size" with LlamaConfig's default when
  // the file leaves it out), as the composite's config object holds them.
  SubModels subs;
  // `object`: the config.json object holding the sub-config's fields (absent: the class's defaults).
  auto add_sub = [&](const std::string& key, std::optional<std::string_view> object, const ArchSpec* sub_arch) {
    SubModel& sm = subs[key];
    sm.arch = sub_arch;
    sm.frame = std::make_unique<Frame>();
    if (object) add_fields(*sm.frame, config, *object);
    set_run_fields(*sm.frame, run, default_dtype);
    apply_config_class(*sm.frame, *sub_arch);
    sm.frame->for_each_own([&](const std::string& name, const Value& v) {
      if (!globals.has_own(key + "." + name)) globals.set(key + "." + name, v);
    });
  };
  try {
    const std::string_view top = config.effective_object();
    // Declared sub-configs first: the config class decides their type, not the nested model_type.
    for (const auto& sc : arch.sub_configs) {
      const ArchSpec* sub_arch = reg.find(sc.model_type);
      if (!sub_arch) continue;  // its file is missing: the child reports the missing sub-model
      const std::string object = join_key(top, sc.key);
      if (config.has_object(object))
        add_sub(sc.key, object, sub_arch);
      else if (sc.flat)
        add_sub(sc.key, top, sub_arch);
      else
        add_sub(sc.key, std::nullopt, sub_arch);  // the sub-config class's defaults
    }
    // Then any other object with a model_type the registry knows.
    std::vector<std::pair<std::string, std::string>> typed;  // (key, model_type)
    config.for_each_field(top, [&](std::string_view key, const ConfigField& c) {
      if (!c.object || key.find('.') != std::string_view::npos || subs.count(std::string(key))) return;
      if (auto type = config.string_field(join_key(top, key) + ".model_type")) typed.emplace_back(key, *type);
    });
    for (const auto& [key, type] : typed) {
      const ArchSpec* sub_arch = reg.find(type);
      if (!sub_arch || sub_arch == &arch) continue;
      add_sub(key, join_key(top, key), sub_arch);
    }
  } catch (const DerivedFieldError& e) {
    report_missing_field(
        e.error.missing_name.empty() ? e.field->name : e.error.missing_name,
        fmt::format("a sub-config's {} = `{}`: {}", e.field->name, e.field->expr.source(), e.error.what()));
    return std::nullopt;
  } catch (const ExprError& e) {
    report_missing_field(e.missing_name.empty() ? "a sub-config field" : e.missing_name, e.what());
    return std::nullopt;
  }
  try {
    try {
      apply_config_class(globals, arch);
    } catch (const DerivedFieldError& f) {
      const NamedExpr& d = *f.field;
      const ExprError& e = f.error;
      // Almost always a shape field missing from config.json: blame the config, name the field.
      if (!e.missing_name.empty()) {
        report_missing_field(e.missing_name, fmt::format("to compute {} = `{}`", d.name, d.expr.source()));
        return std::nullopt;
      }
      Diagnostic diag =
          finding("CFG006", in_file(config.path),
                  fmt::format("cannot compute {} (`{}`, {}): {}", d.name, d.expr.source(), arch.source, e.what()),
                  fmt::format("config.json must give every field the {} layout uses", arch.model_type));
      sink.report(std::move(diag));
      return std::nullopt;
    }
    tree.keep_in_fp32_modules = arch.keep_in_fp32_modules;
    tree.keep_in_fp32_modules_strict = arch.keep_in_fp32_modules_strict;
    if (arch.no_split_modules) {
      Value v = arch.no_split_modules->evaluate(globals.lookup());
      if (auto l = v.as_list())
        for (const auto& item : *l)
          if (item.as_string()) tree.no_split_modules.push_back(*item.as_string());
    }
    for (const auto& a : arch.activations) {
      const Value v = a.expr.evaluate(globals.lookup());
      // tp_split, tp_split_fp32, tp_added, cp_kv: lists of feature widths
      if (a.name.starts_with("tp_") || a.name == "cp_kv") {
        const ValueList* items = v.as_list();
        std::vector<std::int64_t> widths;
        for (std::size_t i = 0; items && i < items->size(); ++i)
          if (const std::int64_t* w = (*items)[i].as_int(); w && *w >= 0) widths.push_back(*w);
        if (!items || widths.size() != items->size())
          throw ExprError(
              fmt::format("activations.{} must be a list of non-negative integers, got {}", a.name, v.repr()));
        tree.activation_tp_split[a.name] = std::move(widths);
        continue;
      }
      if (!v.as_int()) throw ExprError(fmt::format("activations.{} must be an integer, got {}", a.name, v.repr()));
      tree.activations[a.name] = *v.as_int();
    }
    // transformers' own model code failing for this config (registry `model_errors`, each seen in a real run).
    for (const ModelError& me : arch.model_errors)
      if (me.condition.evaluate(globals.lookup()).truthy())
        sink.report(finding("ARCH006", in_file(config.path),
                            fmt::format("{} {} with transformers {} ({}; {})", me.error,
                                        me.stage == "load" ? "in from_pretrained" : "at the first forward",
                                        options.transformers.str(), root_cls, arch.source),
                            me.help));
  } catch (const ExprError& e) {
    // A name no scope defines is a field this config.json lacks, not a broken rules file.
    if (!e.missing_name.empty())
      report_missing_field(e.missing_name, e.what());
    else
      report("REG003", fmt::format("registry expression failed for {}: {}", config.path, e.what()));
    return std::nullopt;
  }

  Expander ex(arch, reg, tree, default_dtype, &subs);
  try {
    ex.expand_root(root_cls, globals);
  } catch (const ExpandError& e) {
    // A formula that cannot be evaluated on this config.json (a missing field, a negative or
    // overflowing size) is the config's problem; an undeclared class is the registry's.
    if (e.rules_bug)
      report("REG004", e.what());
    else if (!e.missing_name.empty() && !globals.has_own(e.missing_name))
      report_missing_field(e.missing_name, e.what());
    else
      report("CFG006", fmt::format("{} cannot be laid out as {}: {}", config.path, arch.model_type, e.what()));
    return std::nullopt;
  }
  fused = std::move(ex.fused_sources);
  // PreTrainedModel.post_init (modeling_utils.py, 5.12.1): a composite's _no_split_modules is its
  // own plus every sub-model's, as a set.
  const auto add_patterns = [](std::vector<std::string>& into, const std::vector<std::string>& more) {
    for (const auto& p : more)
      if (std::find(into.begin(), into.end(), p) == into.end()) into.push_back(p);
  };
  for (const auto& key : ex.submodels_used) {
    const SubModel& sm = subs.at(key);
    add_patterns(tree.keep_in_fp32_modules, sm.arch->keep_in_fp32_modules);
    add_patterns(tree.keep_in_fp32_modules_strict, sm.arch->keep_in_fp32_modules_strict);
    if (!sm.arch->no_split_modules) continue;
    try {
      const Value v = sm.arch->no_split_modules->evaluate(sm.frame->lookup());
      if (const auto* l = v.as_list())
        for (const auto& item : *l)
          if (const auto* name = item.as_string();
              name && std::find(tree.no_split_modules.begin(), tree.no_split_modules.end(), *name) ==
                          tree.no_split_modules.end())
            tree.no_split_modules.push_back(*name);
    } catch (const ExprError& e) {
      report("REG003", fmt::format("registry expression failed for {} ({}): {}", config.path, key, e.what()));
      return std::nullopt;
    }
  }

  // get_input_embeddings()/get_output_embeddings(): the module of the first tied-weight pair
  // (the registry lists the head's weight -> the embedding's weight for every tied LM).
  auto module_of = [](const std::string& fqn) { return fqn.substr(0, fqn.rfind('.')); };
  // The first pair whose head exists in this version's tree (gpt_neox lists embed_out and lm_head);
  // `embeddings:` when no pair names them.
  if (!arch.output_embeddings.empty() || !arch.input_embeddings.empty()) {
    for (const auto& m : tree.modules) {
      if (m.path == arch.output_embeddings) tree.output_embeddings = m.path;
      if (m.path == arch.input_embeddings) tree.input_embeddings = m.path;
    }
  }
  for (const auto& t : arch.tied_weights) {
    if (!tree.output_embeddings.empty()) break;
    const std::string in = module_of(t.target), out = module_of(t.alias);
    bool has_in = false, has_out = false;
    for (const auto& m : tree.modules) {
      has_in = has_in || m.path == in;
      has_out = has_out || m.path == out;
    }
    if (!has_out) continue;
    tree.output_embeddings = out;
    if (has_in) tree.input_embeddings = in;
    break;
  }
  if (root_cls != arch.base_model_class)
    for (int c : tree.modules[0].children)
      if (tree.modules[c].name == arch.base_model_prefix) tree.base_model_path = tree.modules[c].path;

  // transformers distributed/mixin.py init_parallel_plans: the base model's plan under its prefix,
  // then the head's `_fsdp_plan`. PreTrainedConfig.base_model_fsdp_plan's default (main) applies
  // when the architecture declares none.
  static const std::vector<std::pair<std::string, std::string>> kDefaultBasePlan = {
      {"embed_tokens", "free_full_weight"}, {"layers.*", "free_full_weight"}, {"norm", "keep_full_weight"}};
  const bool has_head = root_cls != arch.base_model_class && !tree.base_model_path.empty();
  for (const auto& [pattern, strategy] : arch.fsdp_plan_base.value_or(kDefaultBasePlan))
    tree.fsdp_plan.emplace_back(has_head ? tree.base_model_path + "." + pattern : pattern, strategy);
  if (root_cls != arch.base_model_class)
    for (const auto& entry : arch.fsdp_plan_head) tree.fsdp_plan.push_back(entry);
  // The tensor-parallel plan the loaded model uses (modeling_utils.py PreTrainedModel.post_init,
  // transformers 5.12.1): the base model's base_model_tp_plan, collected by the head under the child's
  // name. The head class's own `_tp_plan` ({"lm_head": "colwise_gather_output"}) is not applied: post_init
  // replaces it with {} on the instance before merging the children's plans, so lm_head stays whole on
  // every TP rank (seen in fixtures/oracle2/tp/: lm_head [37, 24] on every rank).
  // A composite model (a VLM) has no base plan of its own: post_init gathers each child's `_tp_plan`
  // under the child's name, so every sub-model that is a base model brings its config's plan under its
  // own path (real load of fixtures/oracle2/models/llava with tp_plan="auto": the plan is the
  // language model's, as "model.language_model.layers.*.self_attn.q_proj" and so on).
  if (arch.tp_plan) {
    tree.tp_plan.emplace();
    for (const auto& [pattern, style] : arch.tp_plan->base)
      if (const TpStyle* st = reg.find_tp_style(style))
        tree.tp_plan->push_back({has_head ? tree.base_model_path + "." + pattern : pattern, *st});
  }
  if (arch.ep_plan)
    for (const auto& [pattern, style] : arch.ep_plan->base)
      if (const TpStyle* st = reg.find_tp_style(style))
        tree.ep_plan.push_back({has_head ? tree.base_model_path + "." + pattern : pattern, *st});
  for (const auto& [key, root] : ex.submodel_roots) {
    const ArchSpec* sub = subs.count(key) ? subs.at(key).arch : nullptr;
    if (!sub || !sub->tp_plan) continue;
    if (!tree.tp_plan) tree.tp_plan.emplace();
    for (const auto& [pattern, style] : sub->tp_plan->base)
      if (const TpStyle* st = reg.find_tp_style(style)) tree.tp_plan->push_back({root + "." + pattern, *st});
  }

  // Tied weights (tie_word_embeddings): the alias keeps its place in the tree, shares the storage.
  // named_parameters() keeps the name it meets first (pre-order over modules, a module's own parameters
  // in registration order): the alias's, where its module comes first (RobertaForCausalLM registers
  // lm_head before roberta, so torch names the shared weight lm_head.decoder.weight). The later name
  // is the one that refers to the other.
  const Value* tie = globals.lookup()("tie_word_embeddings");
  if (tie && tie->truthy()) {
    auto position = [&tree](const std::string& full) {
      const auto dot = full.rfind('.');
      const std::string mod = dot == std::string::npos ? "" : full.substr(0, dot);
      const std::string name = dot == std::string::npos ? full : full.substr(dot + 1);
      for (std::size_t i = 0; i < tree.modules.size(); ++i) {
        if (tree.modules[i].path != mod) continue;
        const auto& ps = tree.modules[i].params;
        for (std::size_t j = 0; j < ps.size(); ++j)
          if (ps[j].name == name) return std::pair<std::size_t, std::size_t>(i, j);
      }
      return std::pair<std::size_t, std::size_t>(tree.modules.size(), 0);
    };
    for (const auto& t : arch.tied_weights) {
      ParamInfo* alias = find_param(tree, t.alias);
      ParamInfo* target = find_param(tree, t.target);
      if (!alias || !target) continue;  // e.g. a base-model root without lm_head
      if (position(t.alias) < position(t.target))
        target->tied_to = t.alias;
      else
        alias->tied_to = t.target;
      tree.tied.push_back(t);
    }
  }
  return tree;
}

std::string qualified_name(std::string_view path, std::string_view name) {
  std::string s;
  s.reserve(path.size() + 1 + name.size());
  append_qualified_name(s, path, name);
  return s;
}

void append_qualified_name(std::string& out, std::string_view path, std::string_view name) {
  if (!path.empty()) out.append(path).append(1, '.');
  out.append(name);
}

ParamInfo* find_param(ModuleTree& tree, const std::string& full_name) {
  const auto dot = full_name.rfind('.');
  const std::string mod = dot == std::string::npos ? "" : full_name.substr(0, dot);
  const std::string name = dot == std::string::npos ? full_name : full_name.substr(dot + 1);
  for (auto& m : tree.modules)
    if (m.path == mod)
      for (auto& p : m.params)
        if (p.name == name) return &p;
  return nullptr;
}

void finalize_counts(ModuleTree& tree) {
  tree.num_params = 0;
  tree.num_tensors = 0;
  tree.dtype_numel.clear();
  std::array<std::int64_t, kNumDTypes> per_dtype{};  // summed here, a map entry per dtype after
  std::array<bool, kNumDTypes> seen{};
  // A folded tree's module stands for as many instances as this says (shardcheck/repeated_blocks.hpp).
  const std::vector<std::int64_t> mult = tree.folded ? module_multiplicity(tree) : std::vector<std::int64_t>();
  for (std::size_t i = 0; i < tree.modules.size(); ++i) {
    Module& m = tree.modules[i];
    const std::int64_t k = mult.empty() ? 1 : mult[i];
    m.own_numel = 0;
    for (const auto& p : m.params) {
      if (p.buffer || !p.tied_to.empty()) continue;
      m.own_numel += p.numel;
      tree.num_params += k * p.numel;
      tree.num_tensors += k;
      per_dtype[static_cast<std::size_t>(p.dtype)] += k * p.numel;
      seen[static_cast<std::size_t>(p.dtype)] = true;
    }
    m.total_numel = m.own_numel;
  }
  for (std::size_t d = 0; d < per_dtype.size(); ++d)
    if (seen[d]) tree.dtype_numel[static_cast<DType>(d)] = per_dtype[d];
  // Pre-order storage: children come after parents, so a reverse sweep accumulates subtrees (a
  // module's total is one instance's; its parent holds all of them).
  for (std::size_t i = tree.modules.size(); i-- > 1;)
    tree.modules[tree.modules[i].parent].total_numel += tree.modules[i].repeat * tree.modules[i].total_numel;
}

}  // namespace shardcheck
