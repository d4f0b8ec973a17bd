// The pipeline's check and plan stages (pipeline/stages.hpp): the release set checked, the shard plan
// simulated, then checked.
#include "check/plan_check.hpp"
#include "pipeline/stages.hpp"
#include "shardcheck/effective_settings.hpp"
#include "shardcheck/repeated_blocks.hpp"
#include "simulate/tp_planning.hpp"
#include "util/stage_timer.hpp"

namespace shardcheck::pipeline {
namespace {

// The folded plan stands where it is exact; else the tree is materialised and planned again. False
// when the saved-weights check, joined before the tree changes, stops the run.
bool plan_folded(SavedWeightsCheck& saved_weights, PreflightResult& r) {
  DiagnosticSink folded_sink;
  r.plan = plan_fsdp1(*r.tree, r.settings, folded_sink);
  if (folded_plan_exact(*r.tree, r.settings, *r.plan)) {
    r.sink.append(folded_sink);
    return true;
  }
  if (!saved_weights.finish(r)) return false;  // it reads the tree that is about to change
  expand_repeated_blocks(*r.tree);
  r.plan = plan_fsdp1(*r.tree, r.settings, r.sink);
  return true;
}

}  // namespace

void check_release_set(const PreflightRequest& req, const ReleaseSet& release, const LoadedModel& model,
                       PreflightResult& r) {
  const ReleaseContext ctx{
      .tree = *r.tree,
      .settings = r.settings,
      .versions = release.versions,
      .version_rules = release.rules,
      .peft_rules = r.adapter && model.peft_rules ? &*model.peft_rules : nullptr,
      .accelerate_config = req.accelerate_config,
  };
  run_release_checks(ctx, r.sink);
}

std::optional<Simulation> simulate(const PreflightRequest& req, SavedWeightsCheck& saved_weights, PreflightResult& r) {
  util::StageTimer timer("plan: wrap classes");
  const std::size_t errors_before = r.sink.count(Severity::error);
  resolve_wrap_classes(*r.tree, r.settings, r.sink);
  timer.lap("plan: simulate");
  Simulation sim;
  sim.wrap_failed = r.sink.count(Severity::error) > errors_before;  // accelerate would stop here
  sim.tensor_parallel = r.settings.fsdp_version.value == 2 && r.settings.mesh_size("tp") > 1;
  // Expert parallelism: the model's tp_plan property returns the EP plan instead (modeling_utils.py
  // PreTrainedModel.tp_plan, transformers 5.12.1), empty for an architecture without one.
  if (sim.tensor_parallel && r.settings.expert_parallel.value) r.tree->tp_plan = r.tree->ep_plan;
  if (sim.tensor_parallel) sim.tp_not_simulated = tp_not_simulated(*r.tree, r.settings);
  if (sim.tensor_parallel && sim.tp_not_simulated.empty()) {
    TensorParallelPlan tp = plan_tensor_parallel(*r.tree, r.settings, req.memory, r.sink);
    r.plan = std::move(tp.plan);
    r.memory = std::move(tp.memory);
  } else if (r.tree->folded) {
    if (!plan_folded(saved_weights, r)) return std::nullopt;
  } else {
    r.plan = r.settings.fsdp_version.value == 2 ? plan_fsdp2(*r.tree, r.settings, r.sink)
                                                : plan_fsdp1(*r.tree, r.settings, r.sink);
  }
  return sim;
}

void check_plan(const PreflightRequest& req, const ReleaseSet& release, const LoadedModel& model,
                const Simulation& simulation, PreflightResult& r) {
  util::StageTimer timer("plan: checks");
  const PlanContext ctx{
      .tree = *r.tree,
      .settings = r.settings,
      .plan = *r.plan,
      .model_config = model.loaded.inputs ? &model.loaded.inputs->config : nullptr,
      .memory = req.memory,
      .versions = release.versions,
      .wrap_failed = simulation.wrap_failed,
      .tensor_parallel = simulation.tensor_parallel,
      .tp_not_simulated = simulation.tp_not_simulated,
  };
  run_plan_checks(ctx, r.sink);
}

}  // namespace shardcheck::pipeline
