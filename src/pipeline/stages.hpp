#pragma once
// The stages of run_preflight (preflight.cpp), in the order it runs them:
//   load (release set, training arguments) -> lint (accelerate config) -> resolve (settings, model)
//   -> adapter (PeftModel) -> release checks -> simulate (wrap classes, plan) -> plan checks
//   (src/check/) -> fit (memory, communication, verdict).
// Each takes the request and what the stages before it produced, adds its findings to the result's
// sink and hands on what the next needs; an empty optional (or false) stops the run with the result
// as it stands, as accelerate or torch would stop the job there.

#include <optional>
#include <string>

#include "pipeline/saved_weights.hpp"
#include "shardcheck/load_tree.hpp"
#include "shardcheck/peft_model.hpp"
#include "shardcheck/preflight.hpp"
#include "shardcheck/stack_versions.hpp"

namespace shardcheck::pipeline {

// load: the release set every later stage depends on (linting, wrapping, the module layout).
struct ReleaseSet {
  VersionRules rules;
  StackVersions versions;
  ResolveOptions resolve;  // the request's, at this transformers release and with the TRL run's load
};
std::optional<ReleaseSet> load_release_set(const PreflightRequest& req, PreflightResult& r);
// load: TRL's ModelConfig in the training-arguments file (dtype, 4-bit load, adapter).
bool read_training_args(const PreflightRequest& req, ReleaseSet& release, PreflightResult& r);

// lint: the accelerate config linted (check) and applied to the settings.
bool lint_accelerate_config(const PreflightRequest& req, PreflightResult& r);

// resolve: the flags over the settings, and one check of the merged settings.
bool settle_settings(const PreflightRequest& req, PreflightResult& r);

// resolve: the model's module tree, and the adapter's files read beside it.
struct LoadedModel {
  LoadedTree loaded;  // its tree moved to the result; its inputs (config.json) kept for the checks
  std::optional<PeftRules> peft_rules;
  DiagnosticSink peft_rules_sink;  // reported once the adapter is built on the tree
};
std::optional<LoadedModel> load_model_files(const PreflightRequest& req, const ResolveOptions& resolve,
                                            PreflightResult& r);

// adapter: the PeftModel built on the tree, its saved weights checked beside the plan.
bool add_adapter(const PreflightRequest& req, const LoadedModel& model, SavedWeightsCheck& saved_weights,
                 PreflightResult& r);

// checks: the release checks of src/check/ (the release set against the model, the adapter and the
// FSDP2 caller), before the plan.
void check_release_set(const PreflightRequest& req, const ReleaseSet& release, const LoadedModel& model,
                       PreflightResult& r);

// simulate: the wrap classes and the shard plan.
struct Simulation {
  bool wrap_failed = false;      // accelerate would stop at wrapping
  bool tensor_parallel = false;  // FSDP2 with a tp mesh dimension above 1
  std::string tp_not_simulated;  // why the TP layout was not simulated; "" when it was
};
std::optional<Simulation> simulate(const PreflightRequest& req, SavedWeightsCheck& saved_weights, PreflightResult& r);

// checks: every plan check of src/check/ over the finished plan.
void check_plan(const PreflightRequest& req, const ReleaseSet& release, const LoadedModel& model,
                const Simulation& simulation, PreflightResult& r);

// fit: memory and communication, the fit verdict and its findings.
void fit(const PreflightRequest& req, PreflightResult& r);

}  // namespace shardcheck::pipeline
