// The pipeline's last stage (pipeline/stages.hpp): memory and communication of the plan, whether it
// fits, and the findings that say so.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "pipeline/stages.hpp"
#include "shardcheck/finding_codes.hpp"
#include "shardcheck/text.hpp"
#include "util/stage_timer.hpp"

namespace shardcheck::pipeline {
namespace {

void estimate_memory_and_traffic(const PreflightRequest& req, PreflightResult& r) {
  if (!r.plan->tensor_parallel) r.memory = estimate_memory(*r.plan, *r.tree, r.settings, req.memory);
  r.memory.global_ranks = mesh_ranks(r.settings);
  r.comm = communication(*r.plan, req.bus_bandwidth, req.inter_node_bandwidth);
  if (r.plan->tensor_parallel)
    r.comm.tensor_parallel =
        tensor_parallel_traffic(*r.plan, *r.tree, r.settings, req.memory, req.bus_bandwidth, req.inter_node_bandwidth);
  if (r.settings.context_parallel() > 1)
    r.comm.context_parallel =
        context_parallel_traffic(*r.plan, *r.tree, r.settings, req.memory, req.bus_bandwidth, req.inter_node_bandwidth);
}

// A job that fails before training gets no fit verdict: the numbers are what FSDP would hold once
// the errors above are fixed. True when the verdict is withheld.
bool withhold_verdict(PreflightResult& r) {
  for (const auto& d : r.sink.items())
    if (d.severity == Severity::error) {
      r.memory.verdict = FitVerdict::withheld;
      // An unknown model or adapter layout, a config.json without its fields, a checkpoint that
      // disagrees: shardcheck cannot lay out this model; anything else: torch or accelerate stops it.
      const bool undescribed = d.exit_code == ExitCode::unknown_model || d.exit_code == ExitCode::bad_model_config ||
                               d.exit_code == ExitCode::model_mismatch;
      r.memory.verdict_reason = fmt::format(
          "{} ({}: {})",
          undescribed ? "shardcheck cannot lay out this model as the job builds it" : "the job fails before training",
          d.code, d.message.substr(0, d.message.find(" (")));
      return true;
    }
  return false;
}

// What the recipe asks for that the estimate does not count: an optimizer rules/optimizers.yaml does
// not list (FIT002), a training argument that changes a step's memory (FIT003). Never silence.
void report_recipe_gaps(const PreflightRequest& req, PreflightResult& r) {
  if (!req.memory.optimizer.known)
    r.sink.report(finding("FIT002", req.training_args ? in_file(req.training_args->path) : in_file(r.tree->config_path),
                          fmt::format("optim {} is not modelled (rules/optimizers.yaml lists the optimizers shardcheck "
                                      "counts): its states are counted as adamw_torch's and the fit is not estimated",
                                      req.memory.optimizer.name)));
  if (!req.training_args) return;
  for (const auto& [key, source] : req.training_args->unmodelled) {
    // --trainer dpo models what these keys say (docs/step-peak.md, "TRL's DPO").
    const bool preference_key = key == "beta" || key == "precompute_ref_log_probs";
    if (preference_key && req.memory.preference()) continue;
    r.sink.report(finding(
        "FIT003", setting_location(source, req.training_args->path, nullptr),
        fmt::format("{} changes what a training step holds and is not modelled: the peak below "
                    "leaves it out{}",
                    key, preference_key ? " (a preference trainer's recipe: --trainer dpo models TRL's DPO)" : "")));
  }
}

// FIT001: the plan does not fit, with the remedies that are not already on.
Diagnostic does_not_fit(const PreflightResult& r) {
  // At config.json, a file for SARIF and annotations (req.model may be a directory).
  Diagnostic d = finding(
      "FIT001", in_file(r.tree->config_path),
      r.memory.step.available
          ? fmt::format("the plan needs {} ({} bytes) per GPU on rank {} at its peak, {}, but a GPU has {}",
                        human_bytes(r.memory.peak), r.memory.peak, r.memory.peak_mesh_rank.value_or(r.memory.peak_rank),
                        r.memory.step.peak.name, gpu_label(r.memory))
          : fmt::format("the plan needs {} ({} bytes) per GPU on rank {} but a GPU has {} (params, grads and "
                        "optimizer states sharded; the largest unsharded units resident; {})",
                        human_bytes(r.memory.peak), r.memory.peak, r.memory.peak_mesh_rank.value_or(r.memory.peak_rank),
                        gpu_label(r.memory),
                        r.memory.activations.available ? "activations estimated" : "activations not counted"));
  // Only the remedies that are not already on.
  std::vector<std::string> fixes{"more GPUs (num_processes)"};
  if (!r.settings.offload_params.value) fixes.emplace_back("fsdp_offload_params: true");
  // Under FSDP2 accelerate upcasts trainable low-precision parameters to float32 with mixed precision
  // (fsdp_utils.py fsdp2_prepare_model, 1.14): it helps only where the parameters are float32 already.
  if (!r.settings.param_dtype() &&
      (r.plan->fsdp_version == 1 || r.plan->units.empty() || r.plan->units.back().dtype == DType::F32))
    fixes.emplace_back("mixed_precision: bf16");
  if (r.memory.activations.available && !r.settings.activation_checkpointing.value)
    fixes.emplace_back("fsdp_activation_checkpointing: true");
  if (r.memory.activations.available) fixes.emplace_back("a smaller --micro-batch or --seq-len");
  if (r.plan->fsdp_version == 1 && r.plan->strategy == ShardingStrategy::shard_grad_op)
    fixes.emplace_back("fsdp_sharding_strategy: FULL_SHARD");
  std::string list;
  for (std::size_t i = 0; i < fixes.size(); ++i)
    list += (i == 0 ? "" : i + 1 == fixes.size() ? ", or " : ", ") + fixes[i];
  d.help = fmt::format("use {}; a larger --gpu-memory only if the GPU really has it", list);
  return d;
}

}  // namespace

void fit(const PreflightRequest& req, PreflightResult& r) {
  util::StageTimer timer("plan: memory and communication");
  estimate_memory_and_traffic(req, r);
  if (withhold_verdict(r)) return;
  report_recipe_gaps(req, r);
  if (r.memory.verdict == FitVerdict::may_not_fit)
    r.sink.report(finding(
        "FIT004", in_file(r.tree->config_path),
        fmt::format("the step's peak is {} ({} at rank {}); with the margin of {} for the CUDA context, NCCL and the "
                    "allocator that is more than a GPU's {}, so the job may run out of memory",
                    human_bytes(r.memory.peak), r.memory.step.peak.name, r.memory.step.rank,
                    human_bytes(r.memory.margin), gpu_label(r.memory))));
  if (r.memory.verdict == FitVerdict::does_not_fit) r.sink.report(does_not_fit(r));
}

}  // namespace shardcheck::pipeline
