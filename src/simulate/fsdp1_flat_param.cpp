// FSDP1 FlatParameter layout and sharding: torch/distributed/fsdp/flat_param.py (1.13) and
// _flat_param.py (2.x): parameters concatenated in pre-order registration order, alignment and
// world-size padding when use_orig_params=True (2.0+ / 2.1+), then `flat.chunk(W)` right-padded
// (FlatParamHandle._get_shard).
#include <fmt/format.h>

#include "shardcheck/finding_codes.hpp"
#include "simulate/plan_internal.hpp"

namespace shardcheck {
namespace {

Diagnostic unit_error(const ModuleTree& tree, const ShardUnit& unit, std::string_view code, std::string message,
                      std::string help) {
  return finding(code, model_location(tree, unit.path), std::move(message), std::move(help));
}

// FlatParamHandle._validate_tensors_to_flatten (2.x) / FlatParameter checks (1.13): the error
// FSDP raises while wrapping, reported before launch.
void validate_flattenable(const ModuleTree& tree, const ShardUnit& unit, const FsdpSettings& s,
                          const ParamTable& params, const std::vector<int>& owned, DiagnosticSink& sink) {
  if (owned.empty()) return;
  const bool v113 = s.torch_version.value < Version{2, 0, 0};
  const bool orig = s.use_orig_params.value && !v113;
  const ParamEntry& first = params[owned.front()];
  if (!dtype_is_floating(first.dtype)) {
    sink.report(unit_error(
        tree, unit, "PLAN001",
        fmt::format("ValueError: {} (first parameter {} is {})",
                    v113 ? "Integer parameters are unsupported" : "Cannot flatten integer dtype tensors", first.fqn,
                    torch_dtype_name(first.dtype)),
        tree.quantized_4bit() ? "bitsandbytes stores 4-bit weights in bnb_4bit_quant_storage (uint8 by default), which "
                                "FSDP1 cannot flatten: set bnb_4bit_quant_storage to the dtype the model is loaded in "
                                "(e.g. bfloat16 with torch_dtype=bfloat16, peft's FSDP+QLoRA guide), or use FSDP2 "
                                "(accelerate >= 1.14 leaves integer 4-bit weights whole on every rank)"
                              : "FSDP cannot shard integer parameters; mark them as ignored or keep them out of FSDP"));
    return;
  }
  for (int pidx : owned) {
    const ParamEntry& p = params[pidx];
    if (p.dtype != first.dtype) {
      sink.report(unit_error(
          tree, unit, "PLAN002",
          v113 ? fmt::format("ValueError: `FlatParameter` requires uniform dtype but got {} and {} ({} vs {})",
                             torch_dtype_name(first.dtype), torch_dtype_name(p.dtype), first.fqn, p.fqn)
               : fmt::format("ValueError: Must flatten tensors with uniform dtype but got {} and {} ({} vs {})",
                             torch_dtype_name(first.dtype), torch_dtype_name(p.dtype), first.fqn, p.fqn),
          mixed_dtype_help(tree, {first.dtype, p.dtype}, {std::string(first.fqn), std::string(p.fqn)})));
      return;
    }
    if (!orig && p.requires_grad != first.requires_grad) {
      sink.report(unit_error(
          tree, unit, "PLAN003",
          v113 ? fmt::format("ValueError: `FlatParameter` requires uniform `requires_grad` ({} is {}, {} is {})",
                             first.fqn, first.requires_grad, p.fqn, p.requires_grad)
               : fmt::format("ValueError: Must flatten tensors with uniform `requires_grad` when "
                             "`use_orig_params=False` ({} is {}, {} is {})",
                             first.fqn, first.requires_grad, p.fqn, p.requires_grad),
          "set fsdp_use_orig_params: true (torch >= 2.0), or wrap frozen and trainable parameters in separate units"));
      return;
    }
  }
}

}  // namespace

std::int64_t flat_alignment_numel(const FsdpSettings& s, DType unit_dtype) {
  // _get_aligned_numel(unsharded_dtype=_fwd_bwd_param_dtype): 16 bytes of the compute dtype.
  const DType compute = s.param_dtype().value_or(unit_dtype);
  return std::max(1, 16 / std::max(1, dtype_bits(compute) / 8));
}

ShardUnit flat_unit(const ModuleTree& tree, const FsdpSettings& s, const ShardPlan& plan, const ParamTable& params,
                    int module, const std::vector<int>& owned, DiagnosticSink& sink) {
  ShardUnit unit;
  unit.module = module;
  unit.path = tree.modules[module].path;
  unit.cls = tree.modules[module].cls;
  validate_flattenable(tree, unit, s, params, owned, sink);

  const Version& tv = s.torch_version.value;
  const bool orig = s.use_orig_params.value && tv >= Version{2, 0, 0};
  const int w = plan.shard_group;
  unit.dtype = owned.empty() ? DType::F32 : params[owned.front()].dtype;
  unit.requires_grad = false;
  unit.gets_grad = false;
  const std::int64_t align = flat_alignment_numel(s, unit.dtype);

  // At most one alignment padding before each parameter and the world-size padding after them.
  unit.layout.reserve(orig ? 2 * owned.size() + 1 : owned.size());
  unit.params.reserve(owned.size());
  unit.param_numels.reserve(owned.size());
  std::int64_t total = 0;
  auto add_padding = [&](std::int64_t n) {
    unit.layout.push_back(FlatSlot{"", total, n, true, false, false});
    total += n;
  };
  for (int pidx : owned) {
    const ParamEntry& p = params[pidx];
    if (orig && total % align != 0) add_padding(align - total % align);
    unit.layout.push_back(
        FlatSlot{std::string(p.fqn), total, p.numel, false, p.requires_grad, p.requires_grad && !p.unreached});
    unit.params.emplace_back(p.fqn);
    unit.param_numels.push_back(p.numel);
    unit.numel += p.numel;
    unit.requires_grad = unit.requires_grad || p.requires_grad;
    unit.gets_grad = unit.gets_grad || (p.requires_grad && !p.unreached);
    total += p.numel;
  }
  // accelerate's prepare_model (1.14.0 accelerator.py), after FSDP(model) and with mixed precision
  // on: every trainable FlatParameter that is not fp32 is upcast to fp32 (the master copy).
  if (s.param_dtype() && unit.requires_grad && dtype_is_floating(unit.dtype) && unit.dtype != DType::F32)
    unit.dtype = DType::F32;
  set_collective_dtypes(unit, s);
  // World-size padding (#99054, torch 2.1): the flat parameter is padded to a multiple of the
  // process group size so every rank's shard is whole. It applies to NO_SHARD too.
  if (orig && tv >= Version{2, 1, 0} && !owned.empty() && total % w != 0) add_padding(w - total % w);

  if (plan.strategy == ShardingStrategy::no_shard || owned.empty()) {
    unit.shard_numel = total;
    unit.padded_numel = total;
    unit.rank_pad.assign(static_cast<std::size_t>(w), 0);
    return unit;
  }
  ChunkSplit split = chunk_split(total, w);
  unit.shard_numel = split.shard;
  unit.padded_numel = split.shard * w;
  unit.rank_pad = std::move(split.pad);
  return unit;
}

void report_duplicated_tie(const ModuleTree& tree, const ShardUnit& unit, const FsdpSettings& s, DiagnosticSink& sink) {
  std::string names;
  for (const auto& n : unit.duplicated) names += (names.empty() ? "" : ", ") + n;
  sink.report(finding(
      "PLAN004", model_location(tree, unit.path),
      fmt::format(
          "tied parameter(s) {} are flattened again by unit '{}' although another unit already holds them: memory "
          "and communication are counted twice and the tie is broken during training (use_orig_params={})",
          names, unit.path, s.use_orig_params.value ? "True" : "False"),
      "keep every module that uses a tied weight in the same FSDP unit (e.g. do not wrap the embedding alone)"));
}

}  // namespace shardcheck
