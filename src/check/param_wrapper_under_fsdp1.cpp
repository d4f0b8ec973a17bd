// param-wrapper-under-fsdp1: peft's ParamWrapper adapters, which FSDP1 cannot train. Reproduced by
// fixtures/peft-oracle.
#include <fmt/format.h>

#include "check/plan_check.hpp"

namespace shardcheck::checks {
namespace param_wrapper_under_fsdp1 {

constexpr FindingCode kCodes[] = {
    {"PEFT014", Severity::error, ExitCode::findings, "FSDP1 cannot train peft's ParamWrapper adapters",
     "A ParamWrapper applies its LoRA delta through torch.nn.utils.parametrize on the wrapped parameter in "
     "every forward, and under FSDP1 that parameter is a view into a FlatParameter. On the oracle's Qwen3-MoE "
     "with all-linear (torch 2.14.1, accelerate 1.14.0) every FSDP1 setting fails in the first step: "
     "\"Output 0 of View is a view and its base ... has been modified inplace\", or with use_orig_params and "
     "the Trainer's policy \"inconsistent tensor size\" at the optimizer step (use_orig_params=False with "
     "accelerate's policy stops earlier, at wrapping, on mixed requires_grad). FSDP2 runs the same model: "
     "use fsdp_version: 2, or target the attention projections only."},
};
constexpr const FindingCode& kParamWrapperFsdp1 = kCodes[0];

// peft's ParamWrapper (target_parameters, and transformers 5 MoE experts under all-linear) applies its
// delta with torch.nn.utils.parametrize on the wrapped parameter in every forward, which FSDP1's
// parameters, views into a FlatParameter, do not survive. The oracle's Qwen3-MoE (fixtures/peft-oracle,
// torch 2.14.1) fails in the first step in every FSDP1 setting tried, with the message depending on
// use_orig_params and the policy; FSDP2 runs.
void run(const PlanContext& ctx, DiagnosticSink& sink) {
  const ModuleTree& tree = ctx.tree;
  const FsdpSettings& s = ctx.settings;
  if (!tree.peft || ctx.wrap_failed || ctx.plan.fsdp_version != 1) return;
  for (const auto& m : tree.modules) {
    if (m.cls != "ParamWrapper") continue;
    const bool orig_trainer = s.use_orig_params.value && s.policy.value == WrapPolicyKind::peft;
    Diagnostic d = finding(
        kParamWrapperFsdp1, in_file(tree.config_path),
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
}

}  // namespace param_wrapper_under_fsdp1

extern const PlanCheck kParamWrapperUnderFsdp1;
const PlanCheck kParamWrapperUnderFsdp1{
    .name = "param-wrapper-under-fsdp1",
    .codes = param_wrapper_under_fsdp1::kCodes,
    .run = param_wrapper_under_fsdp1::run,
};

}  // namespace shardcheck::checks
