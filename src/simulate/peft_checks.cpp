// Failures of a PEFT model that depend on how FSDP split it into units (shardcheck/shard_plan.hpp
// check_peft_plan). Each is reproduced by fixtures/peft-oracle.
#include <fmt/format.h>

#include "shardcheck/quantization.hpp"
#include "shardcheck/shard_plan.hpp"
#include "shardcheck/finding_codes.hpp"

namespace shardcheck {
namespace {

// The unit whose forward manages module m: its own, else its nearest ancestor's.
int managing_unit(const ModuleTree& tree, const std::vector<int>& unit_at, int m) {
  while (m >= 0 && unit_at[static_cast<std::size_t>(m)] < 0) m = tree.modules[static_cast<std::size_t>(m)].parent;
  return m < 0 ? -1 : unit_at[static_cast<std::size_t>(m)];
}

int find_module(const ModuleTree& tree, const std::string& path) {
  for (std::size_t i = 0; i < tree.modules.size(); ++i)
    if (tree.modules[i].path == path) return static_cast<int>(i);
  return -1;
}

}  // namespace

void check_peft_plan(const ModuleTree& tree, const FsdpSettings& s, const ShardPlan& plan, DiagnosticSink& sink) {
  // PEFT015: before accelerate 1.14, fsdp2_prepare_model hands integer-stored Params4bit to
  // fully_shard like any parameter (PR #3987 "Auto-exclude non-floating frozen Params4bit from
  // fully_shard to prevent QLoRA crash" excluded them in 1.14). The oracle ran accelerate 1.13.0 so on
  // CPU with bitsandbytes' CPU backend (fixtures/peft-oracle/*-acc113-*): the layout below is what it
  // builds and a step ran; the crash the PR fixes was reported on GPUs, so this is a warning.
  if (plan.fsdp_version == 2 && tree.bnb_4bit && !dtype_is_floating(tree.bnb_4bit->quant_storage) &&
      s.accelerate_version.value < Version{1, 14, 0}) {
    sink.report(finding(
        "PEFT015", in_file(tree.config_path),
        fmt::format(
            "accelerate {} shards bitsandbytes' {}-stored 4-bit weights with FSDP2 (fully_shard turns each Params4bit "
            "into a plain DTensor); accelerate 1.14 leaves them whole on every rank because that crashed QLoRA runs",
            s.accelerate_version.value.str(), dtype_name(tree.bnb_4bit->quant_storage)),
        "upgrade accelerate to 1.14, or set bnb_4bit_quant_storage to the dtype the model is loaded in (e.g. "
        "bfloat16), as peft's FSDP+QLoRA guide does"));
  }
  // PEFT014: peft's ParamWrapper (target_parameters, and transformers 5 MoE experts under all-linear)
  // applies its delta with torch.nn.utils.parametrize on the wrapped parameter in every forward,
  // which FSDP1's parameters, views into a FlatParameter, do not survive. The oracle's Qwen3-MoE
  // (fixtures/peft-oracle, torch 2.14.1) fails in the first step in every FSDP1 setting tried, with
  // the message depending on use_orig_params and the policy; FSDP2 runs.
  if (plan.fsdp_version == 1)
    for (const auto& m : tree.modules) {
      if (m.cls != "ParamWrapper") continue;
      const bool orig_trainer = s.use_orig_params.value && s.policy.value == WrapPolicyKind::peft;
      Diagnostic d = finding(
          "PEFT014", in_file(tree.config_path),
          fmt::format(
              "RuntimeError: {} (first training step): FSDP1 and peft's ParamWrapper on '{}' (its adapter "
              "parametrizes the wrapped parameter in every forward, which FSDP1's views into its FlatParameter do not "
              "allow)",
              orig_trainer ? "inconsistent tensor size, expected tensor [...] and src [...] to have the same number of "
                             "elements"
                           : "Output 0 of View is a view and its base or another view of its base has been modified "
                             "inplace. This view is the output of a function that returns multiple views.",
              m.path),
          "use FSDP2 (fsdp_version: 2), or leave the experts out of target_modules (e.g. [q_proj, k_proj, "
          "v_proj, o_proj])");
      d.location.model_path = m.path;
      sink.report(std::move(d));
      break;
    }
  // PEFT007: DoRA reads lora_A.weight.shape outside lora_A's unit (peft 0.20 tuners/lora/dora.py
  // DoraLinearLayer.get_lora_weight); with use_orig_params=True (torch >= 2.0) and a sharded strategy
  // that parameter is the rank's 1-D shard there.
  if (plan.fsdp_version != 1 || !s.use_orig_params.value || s.torch_version.value < Version{2, 0, 0} ||
      plan.strategy == ShardingStrategy::no_shard)
    return;
  std::vector<int> unit_at(tree.modules.size(), -1);
  for (std::size_t u = 0; u < plan.units.size(); ++u)
    if (plan.units[u].module >= 0) unit_at[static_cast<std::size_t>(plan.units[u].module)] = static_cast<int>(u);
  for (std::size_t i = 0; i < tree.modules.size(); ++i) {
    const Module& mag = tree.modules[i];
    if (mag.cls != "DoraLinearLayer") continue;
    // <layer>.lora_magnitude_vector.<adapter>  ->  <layer>.lora_A.<adapter>
    const std::string layer =
        tree.modules[static_cast<std::size_t>(tree.modules[static_cast<std::size_t>(mag.parent)].parent)].path;
    const int lora_a = find_module(tree, layer + ".lora_A." + mag.name);
    if (lora_a < 0) continue;
    const int mag_unit = managing_unit(tree, unit_at, static_cast<int>(i));
    const int a_unit = managing_unit(tree, unit_at, lora_a);
    if (mag_unit == a_unit) continue;
    Diagnostic d = finding(
        "PEFT007", in_file(tree.config_path),
        fmt::format(
            "IndexError: tuple index out of range at the first forward: DoRA's magnitude vector '{}' (unit '{}') reads "
            "'{}.lora_A.{}.weight'.shape[1], which with use_orig_params=True is the rank's 1-D shard outside unit '{}'",
            mag.path, module_label(plan.units[static_cast<std::size_t>(mag_unit)].path), layer, mag.name,
            module_label(plan.units[static_cast<std::size_t>(a_unit)].path)),
        "use fsdp_use_orig_params: false, or FSDP2 (fsdp_version: 2)");
    d.location.model_path = mag.path;
    sink.report(std::move(d));
    return;  // the first forward stops at the first one
  }
}

}  // namespace shardcheck
