// dora-magnitude-outside-unit: DoRA's magnitude vector in another FSDP1 unit than the lora_A it reads,
// which use_orig_params=True then holds as the rank's 1-D shard. Reproduced by fixtures/peft-oracle.
#include <fmt/format.h>

#include "check/plan_check.hpp"

namespace shardcheck::checks {
namespace dora_magnitude_outside_unit {

constexpr FindingCode kCodes[] = {
    {"PEFT007", Severity::error, ExitCode::findings,
     "DoRA under FSDP1 use_orig_params=True with the magnitude vector in another unit than lora_A",
     "DoRA's DoraLinearLayer.forward (peft 0.20 tuners/lora/dora.py get_lora_weight) reads "
     "lora_A.weight.shape[1] directly. With use_orig_params=True a parameter outside the unit that is "
     "running is the rank's 1-D shard (torch/distributed/fsdp/_flat_param.py _use_sharded_views), and "
     "peft's FSDP wrap policy, which transformers' Trainer installs, gives every leaf with a trainable "
     "weight (lora_A, lora_B, the magnitude vector) a unit of its own: the first forward raises "
     "\"IndexError: tuple index out of range\" (real peft 0.20 + torch 2.14.1, fixtures/peft-oracle "
     "llama-dora-fsdp1-tf-orig-trainer-w4). use_orig_params=False, FSDP2, or a plain accelerate loop "
     "(TRANSFORMER_BASED_WRAP keeps all of them in the decoder layer's unit) run."},
};
constexpr const FindingCode& kDoraOutsideUnit = kCodes[0];

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

// DoRA reads lora_A.weight.shape outside lora_A's unit (peft 0.20 tuners/lora/dora.py
// DoraLinearLayer.get_lora_weight); with use_orig_params=True (torch >= 2.0) and a sharded strategy
// that parameter is the rank's 1-D shard there.
void run(const PlanContext& ctx, DiagnosticSink& sink) {
  const ModuleTree& tree = ctx.tree;
  const FsdpSettings& s = ctx.settings;
  const ShardPlan& plan = ctx.plan;
  if (!tree.peft || ctx.wrap_failed) return;
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
        kDoraOutsideUnit, in_file(tree.config_path),
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

}  // namespace dora_magnitude_outside_unit

extern const PlanCheck kDoraMagnitudeOutsideUnit;
const PlanCheck kDoraMagnitudeOutsideUnit{
    .name = "dora-magnitude-outside-unit",
    .codes = dora_magnitude_outside_unit::kCodes,
    .run = dora_magnitude_outside_unit::run,
};

}  // namespace shardcheck::checks
