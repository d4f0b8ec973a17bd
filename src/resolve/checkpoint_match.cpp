// Matches safetensors tensors to the expanded module tree, the way from_pretrained pairs state-dict
// keys with parameters (transformers modeling_utils.py: base_model_prefix added or stripped,
// _keys_to_ignore_on_load_unexpected, 5.x weight conversions). Every disagreement is reported.
#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <optional>
#include <span>
#include <system_error>
#include <thread>

#include "resolve/tree_internal.hpp"
#include "util/name_table.hpp"

namespace shardcheck {
namespace {

std::string join(const std::string& a, const std::string& b) { return a.empty() ? b : a + "." + b; }

std::string shape_str(std::span<const std::int64_t> s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// `*` stands for exactly one dotted component ("*.gate_proj.weight" matches "7.gate_proj.weight").
bool glob_match(std::string_view glob, std::string_view name) {
  std::size_t g = 0, n = 0;
  while (g < glob.size()) {
    if (glob[g] == '*') {
      const std::size_t start = n;
      while (n < name.size() && name[n] != '.') ++n;
      if (n == start) return false;
      ++g;
    } else {
      if (n >= name.size() || glob[g] != name[n]) return false;
      ++g;
      ++n;
    }
  }
  return n == name.size();
}

// A glob with its one `*` split out, as every registry `from:` glob is ("*.down_proj.weight"):
// matching is a prefix and a suffix compare plus a scan of the one component in between, instead
// of a walk character by character (DeepSeek-V3 matches 89k tensors against six globs each).
// Globs with no star or several take glob_match.
class Glob {
 public:
  explicit Glob(std::string glob) : glob_(std::move(glob)) {
    const std::size_t star = glob_.find('*');
    single_star_ = star != std::string::npos && glob_.find('*', star + 1) == std::string::npos;
    if (single_star_) {
      prefix_ = std::string_view(glob_).substr(0, star);
      suffix_ = std::string_view(glob_).substr(star + 1);
    }
  }
  Glob(const Glob& other) : Glob(other.glob_) {}  // the views point into glob_
  Glob& operator=(const Glob&) = delete;

  bool matches(std::string_view name) const {
    if (!single_star_) return glob_match(glob_, name);
    if (name.size() <= prefix_.size() + suffix_.size() || !util::same_text(name.substr(0, prefix_.size()), prefix_) ||
        !util::same_text(name.substr(name.size() - suffix_.size()), suffix_))
      return false;
    const std::string_view component = name.substr(prefix_.size(), name.size() - prefix_.size() - suffix_.size());
    return component.find('.') == std::string_view::npos;  // non-empty by the size test
  }

 private:
  std::string glob_;
  bool single_star_ = false;
  std::string_view prefix_, suffix_;
};

// "^model\.layers\.${num_hidden_layers}\." -> "^model\.layers\.61\."
std::string interpolate(const std::string& pattern, const Frame& globals) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '$' && i + 1 < pattern.size() && pattern[i + 1] == '{') {
      const std::size_t close = pattern.find('}', i);
      if (close == std::string::npos) throw ExprError("unterminated ${ in " + pattern);
      Value v = Expr::parse(pattern.substr(i + 2, close - i - 2)).evaluate(globals.lookup());
      out += v.as_string() ? *v.as_string() : v.repr();
      i = close;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

std::string sample(const std::vector<std::string>& names, std::size_t max = 8) {
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < max; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > max) s += fmt::format(", ... ({} more)", names.size() - max);
  return s;
}

// Tensor names are probed as string_views (prefixes of a name, the name without
// base_model_prefix) without allocating a string per probe; DeepSeek-V3 has 92k tensors.
template <class V>
using NameMap = util::NameIndex<V>;

struct FusedAccumulator {
  std::int64_t numel = 0;
  std::size_t tensors = 0;
  std::optional<DType> dtype;
};

// Fused parameters (5.x MoE experts: gate_up_proj [E, 2I, H] gathers every
// experts.<j>.gate_proj.weight and experts.<j>.up_proj.weight): a tensor goes to the deepest fused
// module whose path is a dotted prefix of its name and one of whose globs matches the rest of the
// name; if none of that module's globs matches, shallower fused modules are tried.
//
// DeepSeek-V3 sends ~89k of its 92k tensors here. A checkpoint lists one module's tensors together,
// so the module that took the previous tensor is tried first, without hashing any prefix; that
// shortcut is exact because it is only taken when no fused module lies below that module, so no
// deeper candidate can exist.
class FusedMatcher {
 public:
  FusedMatcher(const ModuleTree& tree, const FusedSources& fused) {
    for (const auto& [key, globs] : fused) {
      const std::size_t slot = slots_.size();
      slots_.push_back(key);
      const std::string& path = tree.modules[key.first].path;
      if (path.empty()) continue;  // the root ("") is never a dotted prefix of a name
      auto [module, fresh] = module_of_path_.try_emplace(path, modules_.size());
      if (fresh) modules_.push_back({path, {}, false, false});
      for (const std::string& glob : globs) modules_[*module].globs.emplace_back(Glob(glob), slot);
    }
    seen_.resize(slots_.size());
    for (FusedModule& outer : modules_)
      for (const FusedModule& inner : modules_)
        if (inner.path.size() > outer.path.size() && inner.path.starts_with(outer.path) &&
            inner.path[outer.path.size()] == '.')
          outer.has_fused_descendant = true;
  }

  // Marks the fused modules above `param_path` (a parameter of the tree) one of whose globs
  // matches the rest of the path: for those, a name that a glob takes might instead be that
  // parameter, so quick_slot() must not answer for them.
  void mark_ambiguous(std::string_view param_path) {
    for (std::size_t dot = param_path.find('.'); dot != std::string_view::npos; dot = param_path.find('.', dot + 1))
      if (const std::size_t* module = module_of_path_.find(param_path.substr(0, dot)))
        if (glob_slot(modules_[*module], param_path.substr(dot + 1))) modules_[*module].ambiguous = true;
  }

  // The cursor shortcut of slot_of() alone, without its walk: the slot when the module that took
  // the previous tensor takes this one too and no parameter path can be the name (see
  // mark_ambiguous). Lets the caller skip the parameter lookup for the ~89k expert tensors of
  // DeepSeek-V3, which arrive module by module; exact, because a name a glob of such a module takes
  // is no parameter's path, and no deeper fused module exists to claim it first.
  std::optional<std::size_t> quick_slot(std::string_view name, std::size_t last) const {
    if (last >= modules_.size()) return std::nullopt;
    const FusedModule& m = modules_[last];
    const std::size_t n = m.path.size();
    if (m.ambiguous || m.has_fused_descendant || name.size() <= n || name[n] != '.' ||
        !util::same_text(name.substr(0, n), m.path))
      return std::nullopt;
    return glob_slot(m, name.substr(n + 1));
  }

  // The fused parameter (its slot) that gathers the tensor named `name`; nullopt when none does.
  // `last` is the caller's memory of the module that took its previous tensor (one per thread).
  std::optional<std::size_t> slot_of(std::string_view name, std::size_t& last) const {
    std::size_t dot = name.rfind('.');
    if (last < modules_.size()) {
      const FusedModule& m = modules_[last];
      const std::size_t n = m.path.size();
      if (!m.has_fused_descendant && name.size() > n && name[n] == '.' &&
          util::same_text(name.substr(0, n), m.path)) {
        if (auto slot = glob_slot(m, name.substr(n + 1))) return slot;
        dot = name.rfind('.', n - 1);  // on to the modules above it
      }
    }
    for (; dot != std::string_view::npos && dot > 0; dot = name.rfind('.', dot - 1)) {
      const std::size_t* module = module_of_path_.find(name.substr(0, dot));
      if (!module) continue;
      if (auto slot = glob_slot(modules_[*module], name.substr(dot + 1))) {
        last = *module;
        return slot;
      }
    }
    return std::nullopt;
  }

  // Adds a tensor of `numel` elements of `dtype` to what fused parameter `slot` gathered.
  void take(std::size_t slot, std::int64_t numel, DType dtype) {
    FusedAccumulator& acc = seen_[slot];
    acc.numel += numel;
    acc.tensors += 1;
    if (!acc.dtype) acc.dtype = dtype;
  }

  // What each fused parameter gathered, in (module, parameter) order; parameters that gathered
  // nothing are left out.
  template <class F>
  void for_each_gathered(F&& f) const {
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (seen_[i].tensors > 0) f(slots_[i], seen_[i]);
  }

 private:
  struct FusedModule {
    std::string path;
    std::vector<std::pair<Glob, std::size_t>> globs;  // (glob, slot), in parameter then glob order
    bool has_fused_descendant;
    bool ambiguous;  // a parameter path under it matches one of its globs (mark_ambiguous)
  };

  static std::optional<std::size_t> glob_slot(const FusedModule& m, std::string_view rest) {
    for (const auto& [glob, slot] : m.globs)
      if (glob.matches(rest)) return slot;
    return std::nullopt;
  }

  std::vector<std::pair<int, int>> slots_;    // fused parameters in FusedSources order
  std::vector<FusedAccumulator> seen_;        // per slot
  std::vector<FusedModule> modules_;
  NameMap<std::size_t> module_of_path_;       // path -> index into modules_
};

// What one checkpoint tensor is to the tree. Decided for all tensors first, on two threads (each
// decision is a few hash lookups and glob matches: DeepSeek-V3 has 92k tensors), then applied in
// checkpoint order on one, so diagnostics and first-seen dtypes come out as in a serial walk.
// The deciding threads also copy each tensor's element count and dtype here while its
// description is in their cache: the serial pass then streams this compact array instead of
// chasing 92k descriptions and their shapes a second time (that was 2 ms of cache misses).
struct Resolution {
  enum Kind : std::uint8_t { parameter, fused, ignored, scale, unexpected } kind = unexpected;
  DType dtype = DType::F32;
  int module = 0, param = 0;  // parameter: the ParamInfo
  std::size_t slot = 0;       // fused: the FusedMatcher slot
  std::int64_t numel = 0;
};

// Whether "<prefix><name>" can be a parameter path: only when the first dotted component of `name`
// is the first component after `prefix` of some parameter path (gpt2's base checkpoint "h.0.mlp..."
// under "transformer."). Saves building and hashing "<prefix><name>" for each tensor of a head
// checkpoint, whose names already carry the prefix ("model.layers.0..." never needs "model.model.").
class PrefixedCandidates {
 public:
  PrefixedCandidates(const ModuleTree& tree, std::string_view prefix) {
    for (const Module& m : tree.modules) {
      if (m.params.empty()) continue;  // no parameter path passes through it alone
      const std::string path = join(m.path, "");  // "a.b." or "" for the root
      if (path.size() > prefix.size() && path.starts_with(prefix)) {
        add(first_component(std::string_view(path).substr(prefix.size())));
      } else if (path == prefix) {
        for (const ParamInfo& p : m.params) add(p.name);
      }
    }
  }
  bool may_match(std::string_view name) const {
    const std::string_view first = first_component(name);
    return std::find(firsts_.begin(), firsts_.end(), first) != firsts_.end();
  }

 private:
  static std::string_view first_component(std::string_view s) { return s.substr(0, s.find('.')); }
  void add(std::string_view first) {
    if (std::find(firsts_.begin(), firsts_.end(), first) == firsts_.end()) firsts_.emplace_back(first);
  }
  std::vector<std::string> firsts_;  // a handful: the base model's direct children
};

}  // namespace

void match_checkpoint(ModuleTree& tree, const ArchSpec& arch, const CheckpointMeta& ckpt, const FusedSources& fused,
                      const Frame& globals, DiagnosticSink& sink) {
  tree.from_checkpoint = true;
  const std::string ckpt_label = ckpt.dir.string();
  auto report = [&](std::string code, Severity sev, std::string msg, ExitCode ec, std::string help = {}) {
    Diagnostic d;
    d.code = std::move(code);
    d.severity = sev;
    d.location.file = ckpt_label;
    d.message = std::move(msg);
    d.help = std::move(help);
    d.exit_code = ec;
    sink.report(std::move(d));
  };

  std::size_t num_params = 0;
  for (const Module& m : tree.modules) num_params += m.params.size();
  NameMap<std::pair<int, int>> by_path(num_params);
  FusedMatcher fused_matcher(tree, fused);
  for (int mi = 0; mi < static_cast<int>(tree.modules.size()); ++mi) {
    const Module& m = tree.modules[mi];
    for (int pi = 0; pi < static_cast<int>(m.params.size()); ++pi) {
      std::string path = join(m.path, m.params[pi].name);
      fused_matcher.mark_ambiguous(path);
      by_path.try_emplace(std::move(path), std::pair{mi, pi});
    }
  }

  std::vector<std::pair<std::string, std::string>> renames;
  std::vector<std::regex> ignores;
  const CheckpointDequantize* dequant = nullptr;  // the checkpoint loads dequantised
  try {
    for (const auto& r : arch.renames)
      if (!r.condition || r.condition->evaluate(globals.lookup()).truthy()) renames.emplace_back(r.from, r.to);
    for (const auto& pattern : arch.ignore_unexpected) ignores.emplace_back(interpolate(pattern, globals));
    if (arch.dequantize && (!arch.dequantize->condition ||
                            arch.dequantize->condition->evaluate(globals.lookup()).truthy()))
      dequant = &*arch.dequantize;
  } catch (const std::exception& e) {
    report("REG005", Severity::error, fmt::format("{}: bad checkpoint rule: {}", arch.source, e.what()), ExitCode::bad_rules);
    return;
  }

  // Dequantised loading: a weight stored in a quantised dtype becomes a parameter of the dtype the
  // registry expanded (the model's), not the stored one.
  auto loads_as_model_dtype = [dequant](DType stored) {
    return dequant && std::find(dequant->dtypes.begin(), dequant->dtypes.end(), stored) != dequant->dtypes.end();
  };

  const bool head_root = tree.architecture != arch.base_model_class;
  const std::string prefix = arch.base_model_prefix.empty() ? "" : arch.base_model_prefix + ".";
  std::vector<std::string> unexpected, wrong_shape;

  const PrefixedCandidates prefixed_candidates(tree, prefix);
  // `prefixed`: the calling thread's buffer for "<prefix><name>".
  auto lookup = [&](std::string_view name, std::string& prefixed) -> const std::pair<int, int>* {
    if (const auto* hit = by_path.find(name)) return hit;
    // A base-model checkpoint loaded into a head class gains the prefix (gpt2's "h.0..." keys);
    // a head checkpoint loaded into the base model loses it.
    if (!prefix.empty() && head_root && prefixed_candidates.may_match(name)) {
      prefixed.assign(prefix).append(name);
      if (const auto* hit = by_path.find(prefixed)) return hit;
    }
    if (!prefix.empty() && !head_root && name.starts_with(prefix))
      if (const auto* hit = by_path.find(name.substr(prefix.size()))) return hit;
    return nullptr;
  };

  // Whether lookup() tries a spelling of `name` other than itself.
  auto alternate_spellings = [&](std::string_view name) {
    return !prefix.empty() && (head_root ? prefixed_candidates.may_match(name) : name.starts_with(prefix));
  };

  // Tensors in checkpoint order, as (file, tensor) pairs.
  std::size_t count = 0;
  for (const auto& file : ckpt.files) count += file.tensors.size();
  std::vector<const TensorInfo*> tensors;
  std::vector<const SafetensorsFile*> file_of;
  tensors.reserve(count);
  file_of.reserve(count);
  for (const auto& file : ckpt.files)
    for (const auto& t : file.tensors) {
      tensors.push_back(&t);
      file_of.push_back(&file);
    }
  std::vector<Resolution> resolved(tensors.size());
  auto resolve_range = [&](std::size_t first, std::size_t last) {
    std::string prefixed, renamed;  // this thread's buffers
    std::size_t fused_cursor = static_cast<std::size_t>(-1);
    for (std::size_t i = first; i < last; ++i) {
      const TensorInfo& t = *tensors[i];
      std::string_view name = t.name;
      if (!renames.empty()) {  // only when a rename applies (5.x block_sparse_moe -> mlp, ...)
        renamed = t.name;
        for (const auto& [from, to] : renames)
          for (std::size_t pos = 0; (pos = renamed.find(from, pos)) != std::string::npos; pos += to.size())
            renamed.replace(pos, from.size(), to);
        name = renamed;
      }
      Resolution& r = resolved[i];
      r.numel = t.numel();
      r.dtype = t.dtype;
      // The fused module that took the previous tensor, before any lookup, when that cannot change
      // the answer: no other spelling of the name is tried (lookup's prefix forms), and it is not
      // a scale the dequantiser consumes first.
      if (!alternate_spellings(name) && !(dequant && name.ends_with(dequant->scales_suffix)))
        if (auto slot = fused_matcher.quick_slot(name, fused_cursor)) {
          r.kind = Resolution::fused;
          r.slot = *slot;
          continue;
        }
      // A scale is folded into its weight by the dequantising loader before 5.x fuses experts,
      // so it never reaches a fused parameter; testing it first also spares DeepSeek-V3's 44k
      // expert scales the fused walk.
      if (const auto* hit = lookup(name, prefixed)) {
        r.kind = Resolution::parameter;
        r.module = hit->first;
        r.param = hit->second;
      } else if (dequant && name.ends_with(dequant->scales_suffix)) {
        r.kind = Resolution::scale;
      } else if (auto slot = fused_matcher.slot_of(name, fused_cursor)) {
        r.kind = Resolution::fused;
        r.slot = *slot;
      } else {
        const bool ignored = std::any_of(ignores.begin(), ignores.end(), [&name](const std::regex& re) {
          return std::regex_search(name.begin(), name.end(), re);
        });
        r.kind = ignored ? Resolution::ignored : Resolution::unexpected;
      }
    }
  };
  const std::size_t half = tensors.size() / 2;
  std::optional<std::jthread> helper;
  if (tensors.size() >= 4096 && std::thread::hardware_concurrency() > 1) {  // small models: not worth a thread
    try {
      helper.emplace([&] { resolve_range(half, tensors.size()); });
    } catch (const std::system_error&) {
    }
  }
  resolve_range(0, helper ? half : tensors.size());
  helper.reset();  // joins

  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Resolution& r = resolved[i];
    switch (r.kind) {
      case Resolution::parameter: {
        const TensorInfo& t = *tensors[i];
        ParamInfo& p = tree.modules[r.module].params[r.param];
        if (!std::ranges::equal(p.shape, t.shape)) {
          wrong_shape.emplace_back(t.name);
          report("MT002", Severity::error,
                 fmt::format("tensor '{}' in {} has shape {}, but the {} layout for this config.json expects {}",
                             t.name, file_of[i]->path, shape_str(t.shape), arch.model_type, shape_str(p.shape)),
                 ExitCode::model_mismatch,
                 "the checkpoint and config.json disagree, or the registry is wrong for this model");
          break;
        }
        if (!loads_as_model_dtype(t.dtype)) p.dtype = t.dtype;  // else the template's (model) dtype
        p.in_checkpoint = true;
        break;
      }
      case Resolution::fused:
        fused_matcher.take(r.slot, r.numel, r.dtype);
        break;
      case Resolution::scale:  // folded into its weight while loading: not a parameter
      case Resolution::ignored:
        tree.checkpoint_only_numel += r.numel;
        tree.checkpoint_only_tensors += 1;
        break;
      case Resolution::unexpected:
        unexpected.emplace_back(tensors[i]->name);
        break;
    }
  }

  fused_matcher.for_each_gathered([&](std::pair<int, int> key, const FusedAccumulator& acc) {
    ParamInfo& p = tree.modules[key.first].params[key.second];
    const std::string path = join(tree.modules[key.first].path, p.name);
    if (acc.numel != p.numel) {
      report("MT004", Severity::error,
             fmt::format("'{}' {} fuses {} checkpoint tensors with {} elements, expected {}", path, shape_str(p.shape),
                         acc.tensors, acc.numel, p.numel),
             ExitCode::model_mismatch);
      return;
    }
    p.in_checkpoint = true;
    if (!loads_as_model_dtype(*acc.dtype)) p.dtype = *acc.dtype;
  });

  std::vector<std::string> missing;
  for (const auto& m : tree.modules)
    for (const auto& p : m.params)
      if (!p.in_checkpoint && p.tied_to.empty() && !p.buffer) missing.push_back(join(m.path, p.name));
  // A tied alias saved anyway (some writers keep lm_head.weight) is fine; an untied head absent
  // from the checkpoint is not.
  if (!unexpected.empty())
    report("MT001", Severity::warning,
           fmt::format("{} checkpoint tensor(s) have no place in the {} module tree and would be dropped on load: {}",
                       unexpected.size(), tree.architecture, sample(unexpected)),
           ExitCode::model_mismatch,
           "check --transformers-version and the model_type; transformers warns \"Some weights of the model "
           "checkpoint were not used\"");
  if (!missing.empty())
    report("MT003", Severity::error,
           fmt::format("{} parameter(s) of {} are missing from the checkpoint and would be randomly initialised: {}",
                       missing.size(), tree.architecture, sample(missing)),
           ExitCode::model_mismatch,
           "the download may be incomplete, or config.json describes a different model than the weights");
}

}  // namespace shardcheck
