// The whole one-way pipeline behind `plan` and `check`, as its stages (pipeline/stages.hpp says what
// each takes and gives). A stage that finds what stops the job stops the run: the result then holds
// what was found so far.
#include "shardcheck/preflight.hpp"

#include "pipeline/stages.hpp"

namespace shardcheck {

PreflightResult run_preflight(const PreflightRequest& req) {
  using namespace pipeline;
  PreflightResult r;  // the one object returned (NRVO): the saved-weights thread reads its tree
  r.settings = req.defaults;
  std::optional<ReleaseSet> release = load_release_set(req, r);
  if (!release || !read_training_args(req, *release, r)) return r;
  if (!lint_accelerate_config(req, r)) return r;
  if (!settle_settings(req, r)) return r;
  std::optional<LoadedModel> model = load_model_files(req, release->resolve, r);
  if (!model) return r;
  SavedWeightsCheck saved_weights;  // beside the plan; its findings take their place after the adapter's
  if (!add_adapter(req, *model, saved_weights, r)) return r;
  check_release_set(req, *release, *model, r);
  const std::optional<Simulation> simulation = simulate(req, saved_weights, r);
  if (!simulation) return r;
  check_plan(req, *release, *model, *simulation, r);
  if (!saved_weights.finish(r)) return r;
  fit(req, r);
  return r;
}

}  // namespace shardcheck
