#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <regex>
#include <stdexcept>
#include <unordered_map>

#include "simulate/plan_internal.hpp"

namespace shardcheck {

ParamTable::ParamTable(const ModuleTree& tree, const FsdpSettings& s)
    : first_(tree.modules.size() + 1, 0), ignored_module_(tree.modules.size(), false) {
  std::optional<std::regex> frozen;
  if (!s.frozen.value.empty()) frozen.emplace(s.frozen.value);
  // accelerate (utils/dataclasses.py, v1.10+): modules whose name re.fullmatch-es the pattern;
  // torch then ignores their whole subtree (_get_ignored_modules).
  std::optional<std::regex> ignored;
  if (!s.ignored_modules.value.empty()) ignored.emplace(s.ignored_modules.value);
  for (std::size_t m = 0; m < tree.modules.size(); ++m) {
    const Module& mod = tree.modules[m];
    ignored_module_[m] = (mod.parent >= 0 && ignored_module_[static_cast<std::size_t>(mod.parent)]) ||
                         (ignored && std::regex_match(mod.path, *ignored));
  }
  // Only the targets of tied aliases need finding by name (a PeftModel has ~10k parameters).
  std::unordered_map<std::string, int> index;
  for (const auto& mod : tree.modules)
    for (const auto& p : mod.params)
      if (!p.tied_to.empty()) index.emplace(p.tied_to, -1);
  std::vector<std::string> alias_targets;  // per entry, only when the model has tied aliases
  std::size_t count = 0, name_bytes = 0;
  for (const auto& mod : tree.modules)
    for (const auto& p : mod.params) {
      ++count;
      name_bytes += mod.path.size() + 1 + p.name.size();
    }
  entries_.reserve(count);
  names_.reserve(name_bytes);  // never grows past this: the views into it stay valid
  for (int m = 0; m < static_cast<int>(tree.modules.size()); ++m) {
    const Module& mod = tree.modules[m];
    first_[static_cast<std::size_t>(m)] = static_cast<int>(entries_.size());
    for (const auto& p : mod.params) {
      if (p.buffer) continue;  // buffers are never flattened or sharded
      ParamEntry e;
      const std::size_t at = names_.size();
      append_qualified_name(names_, mod.path, p.name);
      e.fqn = std::string_view(names_).substr(at);
      e.module = m;
      e.shape = p.shape;
      e.numel = p.numel;
      e.dtype = p.dtype;
      e.requires_grad = p.requires_grad && !(frozen && std::regex_search(e.fqn.begin(), e.fqn.end(), *frozen));
      e.unreached = p.unreached;
      e.ignored = ignored_module_[static_cast<std::size_t>(m)];
      e.packed_4bit = p.packed_4bit();
      const int idx = static_cast<int>(entries_.size());
      if (!index.empty()) {
        if (const auto it = index.find(std::string(e.fqn)); it != index.end()) it->second = idx;
        alias_targets.push_back(p.tied_to);
      }
      entries_.push_back(e);  // trivially copyable: views and numbers
    }
  }
  first_.back() = static_cast<int>(entries_.size());
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    entries_[i].storage = static_cast<int>(i);
    if (index.empty() || alias_targets[i].empty()) continue;
    if (auto it = index.find(alias_targets[i]); it != index.end() && it->second >= 0) entries_[i].storage = it->second;
  }
  if (!index.empty()) share_flags_of_tied_parameters();
  for (ParamEntry& e : entries_) apply_preparation(e, tree, s);
}

// A tied weight is one Parameter under several names: requires_grad_(False) through any of its names
// freezes it under all of them (the fuzzer's freezing, scripts/oracle/fuzz_oracle.py, reaches every
// name with named_parameters(remove_duplicate=False)), and ignoring the module of any name takes the
// Parameter out of every unit and group: torch collects ignored *Parameters* (FSDP1
// _init_utils.py _get_ignored_params, FSDP2 fully_shard(ignored_params=...), torch 2.14.1), so the
// embedding's unit loses a weight its tied head's module was ignored for.
void ParamTable::share_flags_of_tied_parameters() {
  for (const ParamEntry& e : entries_) {
    ParamEntry& owner = entries_[static_cast<std::size_t>(e.storage)];
    owner.requires_grad = owner.requires_grad && e.requires_grad;
    owner.ignored = owner.ignored || e.ignored;
  }
  for (ParamEntry& e : entries_) {
    const ParamEntry& owner = entries_[static_cast<std::size_t>(e.storage)];
    e.requires_grad = owner.requires_grad;
    e.ignored = owner.ignored;
  }
}

// What the caller does to a parameter before fully_shard, once its flags are final.
void ParamTable::apply_preparation(ParamEntry& e, const ModuleTree& tree, const FsdpSettings& s) {
  // accelerate 1.14 fsdp2_prepare_model (PR #3987) with torch >= 2.7: frozen Params4bit of an
  // integer storage dtype go to fully_shard's ignored_params and stay whole on every rank.
  if (s.fsdp_version.value == 2 && e.packed_4bit && !dtype_is_floating(e.dtype) && !e.requires_grad &&
      s.accelerate_version.value >= Version{1, 14, 0} && s.torch_version.value >= Version{2, 7, 0})
    e.ignored = true;
  // FSDP2: accelerate upcasts trainable low-precision parameters to fp32 before fully_shard when
  // mixed precision is on (fsdp_utils.py fsdp2_prepare_model, 1.14.0). FSDP1 upcasts each unit's
  // FlatParameter only after FSDP(model) (accelerator.py prepare_model), so the flattening sees the
  // loaded dtypes (flat_unit).
  // Not when the model holds any Params4bit (model_has_params4bit).
  if (s.fsdp_version.value == 2 && s.param_dtype() && e.requires_grad && dtype_is_floating(e.dtype) &&
      e.dtype != DType::F32 && !tree.quantized_4bit())
    e.dtype = DType::F32;
}

std::vector<IgnoredParam> ignored_params(const ParamTable& params) {
  std::vector<IgnoredParam> out;
  std::vector<bool> seen(params.size(), false);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ParamEntry& p = params[static_cast<int>(i)];
    if (!p.ignored || seen[static_cast<std::size_t>(p.storage)]) continue;
    seen[static_cast<std::size_t>(p.storage)] = true;
    out.push_back({std::string(p.fqn), p.numel, p.dtype, p.requires_grad});
  }
  return out;
}

SourceLocation model_location(const ModuleTree& tree, const std::string& path) {
  SourceLocation loc;
  loc.file = tree.config_path;
  loc.model_path = path;
  return loc;
}

std::string torch_dtype_name(DType d) {
  switch (d) {
    case DType::F32:
      return "torch.float32";
    case DType::BF16:
      return "torch.bfloat16";
    case DType::F16:
      return "torch.float16";
    case DType::F64:
      return "torch.float64";
    case DType::F8_E4M3:
      return "torch.float8_e4m3fn";
    case DType::F8_E5M2:
      return "torch.float8_e5m2";
    case DType::I64:
      return "torch.int64";
    case DType::I32:
      return "torch.int32";
    case DType::I8:
      return "torch.int8";
    case DType::U8:
      return "torch.uint8";
    case DType::BOOL:
      return "torch.bool";
    default:
      return fmt::format("torch.{}", dtype_name(d));
  }
}

static bool is_fp8(DType d) { return dtype_name(d).starts_with("F8_"); }

std::string mixed_dtype_help(const ModuleTree& tree, const std::vector<DType>& dtypes,
                             const std::vector<std::string>& names) {
  const bool adapter = std::any_of(names.begin(), names.end(), [](const std::string& n) {
    return n.find(".lora_") != std::string::npos || n.find(".modules_to_save.") != std::string::npos;
  });
  if (adapter)
    return "peft keeps LoRA adapters in float32 (get_peft_model's autocast_adapter_dtype) beside the base model's "
           "dtype: under FSDP1 let transformers' Trainer prepare the model (peft's wrap policy gives each LoRA matrix "
           "its own unit), or use FSDP2 with mixed_precision (accelerate upcasts trainable parameters), or load the "
           "model in float32";
  if (std::any_of(dtypes.begin(), dtypes.end(), is_fp8))
    return "an FP8 checkpoint's quantised layers (transformers FP8Linear / FP8Experts) hold F8 weights beside F32 "
           "block scales, which FSDP cannot shard together, and transformers marks FP8 models as not trainable: load "
           "it dequantised (from_pretrained(..., quantization_config=FineGrainedFP8Config(dequantize=True))) and "
           "check that with --dequantize";
  // transformers' _keep_in_fp32_modules(_strict): the half-precision load left these in float32.
  const bool half =
      std::any_of(dtypes.begin(), dtypes.end(), [](DType d) { return d == DType::F16 || d == DType::BF16; });
  const bool has_fp32 = std::find(dtypes.begin(), dtypes.end(), DType::F32) != dtypes.end();
  if (half && has_fp32 && !tree.keep_in_fp32_modules_strict.empty())
    return fmt::format(
        "transformers loads the parameters matching _keep_in_fp32_modules_strict ({}) in float32 "
        "whenever the model loads in float16 or bfloat16: load it in float32 and train with "
        "mixed_precision, or give those modules units of their own",
        fmt::join(tree.keep_in_fp32_modules_strict, ", "));
  if (half && has_fp32 && !tree.keep_in_fp32_modules.empty())
    return fmt::format(
        "transformers loads the parameters matching _keep_in_fp32_modules ({}) in float32 when the "
        "model loads in float16: load it in bfloat16 (or float32 with mixed_precision), or give those "
        "modules units of their own",
        fmt::join(tree.keep_in_fp32_modules, ", "));
  return "load the model in one dtype (torch_dtype=...), or wrap the differing parameters in their own unit";
}

// accelerate's MixedPrecision(param_dtype=reduce_dtype=bf16/fp16) (FSDP1 flat_param.py
// _fwd_bwd_param_dtype = param_dtype or the original, _reduce_dtype = reduce_dtype or param_dtype;
// FSDP2 _fsdp_param.py init_dtype_attrs, where param_dtype equal to the original is dropped, which
// gathers in the same dtype); torchtitan and transformers' native FSDP2 reduce in fp32. Without mixed
// precision all three are the unit's dtype.
void set_collective_dtypes(ShardUnit& unit, const FsdpSettings& s) {
  unit.compute_dtype = s.param_dtype().value_or(unit.dtype);
  unit.reduce_dtype = s.reduce_dtype().value_or(unit.compute_dtype);
}

ShardPlan plan_header(const FsdpSettings& s, int fsdp_version) {
  // validate_settings (shardcheck/validate_settings.hpp) guarantees these before any simulation.
  if (s.world_size.value < 1 || s.shard_group_size() < 1 || s.world_size.value % s.shard_group_size() != 0)
    throw std::invalid_argument(fmt::format("simulator precondition: world size {} with a shard group of {}",
                                            s.world_size.value, s.shard_group_size()));
  ShardPlan plan;
  plan.fsdp_version = fsdp_version;
  plan.torch_version = s.torch_version.value;
  plan.world_size = s.world_size.value;
  plan.strategy = s.sharding_strategy.value;
  plan.shard_group = s.shard_group_size();
  plan.replicate_group = fsdp_version == 2          ? s.mesh_size("dp_replicate")
                         : is_hybrid(plan.strategy) ? std::max(1, s.num_machines.value)
                                                    : 1;
  const int per_node = std::max(1, s.gpus_per_node());
  const auto spans = [&](const std::vector<int>& group) {
    return s.num_machines.value > 1 && !group.empty() && *std::max_element(group.begin(), group.end()) >= per_node;
  };
  if (fsdp_version == 2) {
    plan.mesh = s.mesh_dims();
    plan.shard_peers = s.mesh_group(0, {"dp_shard", "cp"});
    if (s.mesh_size("tp") > 1) plan.tp_peers = s.mesh_group(0, {"tp"});
    plan.shard_spans_nodes = spans(plan.shard_peers);
    plan.replicate_spans_nodes = spans(s.mesh_group(0, {"dp_replicate"}));
    plan.tp_spans_nodes = spans(plan.tp_peers);
  } else {
    // FSDP1: ranks 0..W-1 shard together, or each machine's ranks under the hybrid strategies, whose
    // replicas are then one rank per machine.
    plan.shard_spans_nodes = s.num_machines.value > 1 && plan.shard_group > per_node;
    plan.replicate_spans_nodes = s.num_machines.value > 1 && plan.replicate_group > 1;
  }
  // fully_sharded_data_parallel.py / _init_utils.py: a shard group of one rank means NO_SHARD
  // (2.x warns "FSDP is switching to use `NO_SHARD` instead of ... since the world size is 1").
  if (plan.shard_group == 1 && fsdp_version == 1) plan.strategy = ShardingStrategy::no_shard;
  return plan;
}

ChunkSplit chunk_split(std::int64_t n, int w) {
  ChunkSplit c;
  c.shard = chunk_size(n, w);
  c.pad.reserve(static_cast<std::size_t>(std::max(w, 0)));
  for (int r = 0; r < w; ++r) c.pad.push_back(c.shard - chunk_real(n, c.shard, r));
  return c;
}

}  // namespace shardcheck
