// Matches safetensors tensors to the expanded module tree, the way from_pretrained pairs state-dict
// keys with parameters (transformers modeling_utils.py: base_model_prefix added or stripped,
// _keys_to_ignore_on_load_unexpected, 5.x weight conversions). Every disagreement is reported.
#include <fmt/format.h>

#include "shardcheck/finding_codes.hpp"
#include "shardcheck/quantization.hpp"

#include <algorithm>
#include <regex>
#include <optional>
#include <span>
#include <system_error>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "resolve/tree_internal.hpp"
#include "util/name_table.hpp"
#include "util/stage_timer.hpp"
#include "resolve/checkpoint_matcher.hpp"

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
      if (!m.has_fused_descendant && name.size() > n && name[n] == '.' && util::same_text(name.substr(0, n), m.path)) {
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

  std::vector<std::pair<int, int>> slots_;  // fused parameters in FusedSources order
  std::vector<FusedAccumulator> seen_;      // per slot
  std::vector<FusedModule> modules_;
  NameMap<std::size_t> module_of_path_;  // path -> index into modules_
};

// What one checkpoint tensor is to the tree. Decided per file, on the thread that read the file's
// header while its table is in cache (CheckpointMatcher::file_read), or after the load on two
// threads for files read before the tree was ready; then applied in checkpoint order on one
// thread, so that diagnostics and first-seen dtypes come out as in a serial walk. Each tensor's
// element count and dtype are copied here while its description is in cache: the serial pass
// streams this compact array instead of chasing 92k descriptions and shapes again.
struct Resolution {
  enum Kind : std::uint8_t { parameter, fused, ignored, scale, unexpected };
  std::int64_t numel = 0;
  std::uint32_t module = 0;  // parameter: the ParamInfo's module; fused: unused
  std::uint32_t index = 0;   // parameter: its index in the module; fused: the FusedMatcher slot
  Kind kind = unexpected;
  DType dtype = DType::F32;
};

// Whether "<prefix><name>" can be a parameter path: only when the first dotted component of `name`
// is the first component after `prefix` of some parameter path (gpt2's base checkpoint "h.0.mlp..."
// under "transformer."). Saves building and hashing "<prefix><name>" for each tensor of a head
// checkpoint, whose names already carry the prefix ("model.layers.0..." never needs "model.model.").
class PrefixedCandidates {
 public:
  PrefixedCandidates(const ModuleTree& tree, std::string_view prefix) {
    for (const Module& m : tree.modules) {
      if (m.params.empty()) continue;             // no parameter path passes through it alone
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

// Everything the per-tensor decision needs, built once from the expanded tree; read-only while
// files are decided, so that the loader's threads may decide files concurrently.
struct CheckpointMatcher::Impl {
  Impl(const ModuleTree& tree, const ArchSpec& arch, const FusedSources& fused, const Frame& globals)
      : arch(arch),
        by_path(count_params(tree)),
        fused_matcher(tree, fused),
        head_root(tree.architecture != arch.base_model_class),
        prefix(arch.base_model_prefix.empty() ? "" : arch.base_model_prefix + "."),
        prefixed_candidates(tree, prefix),
        quantized_4bit(tree.quantized_4bit()) {
    for (int mi = 0; mi < static_cast<int>(tree.modules.size()); ++mi) {
      const Module& m = tree.modules[mi];
      for (int pi = 0; pi < static_cast<int>(m.params.size()); ++pi) {
        std::string path = join(m.path, m.params[pi].name);
        fused_matcher.mark_ambiguous(path);
        by_path.try_emplace(std::move(path), std::pair{mi, pi});
      }
    }
    try {
      for (const auto& r : arch.renames)
        if (!r.condition || r.condition->evaluate(globals.lookup()).truthy()) renames.emplace_back(r.from, r.to);
      for (const auto& pattern : arch.ignore_unexpected) ignores.emplace_back(interpolate(pattern, globals));
      if (arch.dequantize &&
          (!arch.dequantize->condition || arch.dequantize->condition->evaluate(globals.lookup()).truthy()))
        dequant = &*arch.dequantize;
    } catch (const std::exception& e) {
      setup_error = fmt::format("{}: bad checkpoint rule: {}", arch.source, e.what());
    }
  }

  static std::size_t count_params(const ModuleTree& tree) {
    std::size_t n = 0;
    for (const Module& m : tree.modules) n += m.params.size();
    return n;
  }

  // Dequantised loading: a weight stored in a quantised dtype becomes a parameter of the dtype the
  // registry expanded (the model's), not the stored one.
  bool loads_as_model_dtype(DType stored) const {
    return dequant && std::find(dequant->dtypes.begin(), dequant->dtypes.end(), stored) != dequant->dtypes.end();
  }

  // `prefixed`: the calling thread's buffer for "<prefix><name>".
  const std::pair<int, int>* lookup(std::string_view name, std::string& prefixed) const {
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
  }

  // Whether lookup() tries a spelling of `name` other than itself.
  bool alternate_spellings(std::string_view name) const {
    return !prefix.empty() && (head_root ? prefixed_candidates.may_match(name) : name.starts_with(prefix));
  }

  // Decides what each of `tensors` is. Thread-safe: reads only shared tables.
  void resolve(std::span<const TensorInfo> tensors, Resolution* out) const {
    std::string prefixed, renamed;  // this call's buffers
    std::size_t fused_cursor = static_cast<std::size_t>(-1);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const TensorInfo& t = tensors[i];
      std::string_view name = t.name;
      if (!renames.empty()) {  // only when a rename applies (5.x block_sparse_moe -> mlp, ...)
        renamed = t.name;
        for (const auto& [from, to] : renames) apply_checkpoint_rename(renamed, from, to);
        name = renamed;
      }
      Resolution& r = out[i];
      r = Resolution{};
      r.numel = t.numel();
      r.dtype = t.dtype;
      // The fused module that took the previous tensor, before any lookup, when that cannot change
      // the answer: no other spelling of the name is tried (lookup's prefix forms), and it is not
      // a scale the dequantiser consumes first.
      if (!alternate_spellings(name) && !(dequant && name.ends_with(dequant->scales_suffix)))
        if (auto slot = fused_matcher.quick_slot(name, fused_cursor)) {
          r.kind = Resolution::fused;
          r.index = static_cast<std::uint32_t>(*slot);
          continue;
        }
      // A scale is folded into its weight by the dequantising loader before 5.x fuses experts,
      // so it never reaches a fused parameter; testing it first also spares DeepSeek-V3's 44k
      // expert scales the fused walk.
      if (const auto* hit = lookup(name, prefixed)) {
        r.kind = Resolution::parameter;
        r.module = static_cast<std::uint32_t>(hit->first);
        r.index = static_cast<std::uint32_t>(hit->second);
      } else if (dequant && name.ends_with(dequant->scales_suffix)) {
        r.kind = Resolution::scale;
      } else if (auto slot = fused_matcher.slot_of(name, fused_cursor)) {
        r.kind = Resolution::fused;
        r.index = static_cast<std::uint32_t>(*slot);
      } else {
        // A pre-quantized bitsandbytes checkpoint's quantization state rides beside each packed weight.
        const bool ignored = (quantized_4bit && is_bnb_4bit_state_tensor(name)) ||
                             std::any_of(ignores.begin(), ignores.end(), [&name](const std::regex& re) {
                               return std::regex_search(name.begin(), name.end(), re);
                             });
        r.kind = ignored ? Resolution::ignored : Resolution::unexpected;
      }
    }
  }

  // The decisions for one file, identified by the address and count of its tensors.
  struct Decided {
    const TensorInfo* tensors = nullptr;
    std::size_t count = 0;
    std::vector<Resolution> resolutions;
  };

  const ArchSpec& arch;
  NameMap<std::pair<int, int>> by_path;
  FusedMatcher fused_matcher;
  const bool head_root;
  const std::string prefix;
  const PrefixedCandidates prefixed_candidates;
  std::vector<std::pair<std::string, std::string>> renames;
  std::vector<std::regex> ignores;
  const CheckpointDequantize* dequant = nullptr;  // the checkpoint loads dequantised
  bool quantized_4bit = false;                    // a pre-quantized bitsandbytes checkpoint (quantization.hpp)
  std::optional<std::string> setup_error;         // REG005, reported by apply()

  std::mutex decided_mutex;
  std::vector<Decided> decided;  // by file_read, in no particular order
};

CheckpointMatcher::CheckpointMatcher(const ModuleTree& tree, const ArchSpec& arch, const FusedSources& fused,
                                     const Frame& globals)
    : impl_(std::make_unique<Impl>(tree, arch, fused, globals)) {}
CheckpointMatcher::~CheckpointMatcher() = default;

void CheckpointMatcher::file_read(const SafetensorsFile& file) noexcept {
  if (impl_->setup_error || file.tensors.empty()) return;
  try {
    Impl::Decided d{file.tensors.data(), file.tensors.size(), std::vector<Resolution>(file.tensors.size())};
    impl_->resolve(file.tensors, d.resolutions.data());
    const std::lock_guard lock(impl_->decided_mutex);
    impl_->decided.push_back(std::move(d));
  } catch (...) {
    // Out of memory, or a regex too complex to run: apply() decides this file again on its own
    // thread, where the failure surfaces as it did before files were decided early.
  }
}

void CheckpointMatcher::apply(ModuleTree& tree, const CheckpointMeta& ckpt, DiagnosticSink& sink) {
  Impl& m = *impl_;
  tree.from_checkpoint = true;
  util::StageTimer timer("match: decide files not seen");
  const std::string ckpt_label = ckpt.dir.string();
  auto report = [&](const char* code, std::string msg, std::string help = {}) {
    sink.report(finding(code, in_file(ckpt_label), std::move(msg), std::move(help)));
  };
  if (m.setup_error) {
    report("REG005", *m.setup_error);
    return;
  }

  // Each file's decisions: those file_read made, else made here.
  std::vector<const std::vector<Resolution>*> of_file(ckpt.files.size(), nullptr);
  {
    const std::lock_guard lock(m.decided_mutex);
    std::unordered_map<const TensorInfo*, const Impl::Decided*> by_address;
    for (const Impl::Decided& d : m.decided) by_address.emplace(d.tensors, &d);
    for (std::size_t f = 0; f < ckpt.files.size(); ++f) {
      const auto& tensors = ckpt.files[f].tensors;
      auto it = by_address.find(tensors.data());
      if (it != by_address.end() && it->second->count == tensors.size()) of_file[f] = &it->second->resolutions;
    }
  }
  std::vector<std::vector<Resolution>> late(ckpt.files.size());
  std::vector<std::size_t> undecided;
  std::size_t undecided_tensors = 0;
  for (std::size_t f = 0; f < ckpt.files.size(); ++f)
    if (!of_file[f] && !ckpt.files[f].tensors.empty()) {
      undecided.push_back(f);
      undecided_tensors += ckpt.files[f].tensors.size();
      late[f].resize(ckpt.files[f].tensors.size());
      of_file[f] = &late[f];
    }
  auto decide = [&](std::size_t first, std::size_t last) {
    for (std::size_t k = first; k < last; ++k) m.resolve(ckpt.files[undecided[k]].tensors, late[undecided[k]].data());
  };
  // Two threads when there is much to do (each decision is a few hash lookups and glob matches),
  // split where half the undecided tensors lie on either side.
  std::size_t split = 0;
  for (std::size_t seen = 0; split < undecided.size() && 2 * seen < undecided_tensors; ++split)
    seen += ckpt.files[undecided[split]].tensors.size();
  std::optional<std::jthread> helper;
  if (undecided_tensors >= 4096 && undecided.size() > 1 && std::thread::hardware_concurrency() > 1) {
    try {
      helper.emplace([&] { decide(split, undecided.size()); });
    } catch (const std::system_error&) {
    }
  }
  decide(0, helper ? split : undecided.size());
  helper.reset();  // joins
  timer.lap("match: apply in order");

  std::vector<std::string> unexpected, wrong_shape;
  for (std::size_t f = 0; f < ckpt.files.size(); ++f) {
    const SafetensorsFile& file = ckpt.files[f];
    if (file.tensors.empty()) continue;
    const std::vector<Resolution>& decided = *of_file[f];
    for (std::size_t i = 0; i < file.tensors.size(); ++i) {
      const Resolution& r = decided[i];
      switch (r.kind) {
        case Resolution::parameter: {
          const TensorInfo& t = file.tensors[i];
          ParamInfo& p = tree.modules[r.module].params[r.index];
          if (!std::ranges::equal(p.shape, t.shape)) {
            wrong_shape.emplace_back(t.name);
            report("MT002",
                   fmt::format("tensor '{}' in {} has shape {}, but the {} layout for this config.json expects {}",
                               t.name, file.path, shape_str(t.shape), m.arch.model_type, shape_str(p.shape)),
                   "the checkpoint and config.json disagree, or the registry is wrong for this model");
            break;
          }
          if (!m.loads_as_model_dtype(t.dtype)) p.dtype = t.dtype;  // else the template's (model) dtype
          p.in_checkpoint = true;
          break;
        }
        case Resolution::fused:
          m.fused_matcher.take(r.index, r.numel, r.dtype);
          break;
        case Resolution::scale:  // folded into its weight while loading: not a parameter
        case Resolution::ignored:
          tree.checkpoint_only_numel += r.numel;
          tree.checkpoint_only_tensors += 1;
          break;
        case Resolution::unexpected:
          unexpected.emplace_back(file.tensors[i].name);
          break;
      }
    }
  }

  m.fused_matcher.for_each_gathered([&](std::pair<int, int> key, const FusedAccumulator& acc) {
    ParamInfo& p = tree.modules[key.first].params[key.second];
    const std::string path = join(tree.modules[key.first].path, p.name);
    if (acc.numel != p.numel) {
      report("MT004", fmt::format("'{}' {} fuses {} checkpoint tensors with {} elements, expected {}", path,
                                  shape_str(p.shape), acc.tensors, acc.numel, p.numel));
      return;
    }
    p.in_checkpoint = true;
    if (!m.loads_as_model_dtype(*acc.dtype)) p.dtype = *acc.dtype;
  });

  timer.lap("match: missing and unexpected");
  std::vector<std::string> missing;
  for (const auto& mod : tree.modules)
    for (const auto& p : mod.params)
      if (!p.in_checkpoint && p.tied_to.empty() && !p.buffer) missing.push_back(join(mod.path, p.name));
  // A tied alias saved anyway (some writers keep lm_head.weight) is fine; an untied head absent
  // from the checkpoint is not.
  if (!unexpected.empty())
    report("MT001",
           fmt::format("{} checkpoint tensor(s) have no place in the {} module tree and would be dropped on load: {}",
                       unexpected.size(), tree.architecture, sample(unexpected)),
           "check --transformers-version and the model_type; transformers warns \"Some weights of the model "
           "checkpoint were not used\"");
  if (!missing.empty())
    report("MT003",
           fmt::format("{} parameter(s) of {} are missing from the checkpoint and would be randomly initialised: {}",
                       missing.size(), tree.architecture, sample(missing)),
           "the download may be incomplete, or config.json describes a different model than the weights");
}

void match_checkpoint(ModuleTree& tree, const ArchSpec& arch, const CheckpointMeta& ckpt, const FusedSources& fused,
                      const Frame& globals, DiagnosticSink& sink) {
  CheckpointMatcher matcher(tree, arch, fused, globals);
  matcher.apply(tree, ckpt, sink);
}

}  // namespace shardcheck
