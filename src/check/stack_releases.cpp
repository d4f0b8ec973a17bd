// stack-releases: torch, transformers and accelerate releases that cannot run together, or that
// shardcheck has not modelled (rules/versions.yaml); a model_type the transformers release does not
// have yet (the registry's `since`).
#include <fmt/format.h>

#include <tuple>

#include "check/plan_check.hpp"

namespace shardcheck::checks {
namespace stack_releases {

constexpr FindingCode kCodes[] = {
    {"SET005", Severity::error, ExitCode::findings,
     "The torch / transformers / accelerate versions cannot run together",
     "Each version comes from its flag, else the job's Python environment (--python-env, or the active "
     "virtualenv or conda prefix: the packages' dist-info or egg-info metadata), else shardcheck's default "
     "release set, the one its torch 2.x oracle was run with (rules/versions.yaml). A transformers release "
     "that cannot run on the torch given is an error: transformers reports torch as unavailable below its "
     "floor (import_utils.py is_torch_available: torch 2.4 in 5.12.1; 2.2 from 4.56, PR #40317) and builds no "
     "model. So is a version older than any shardcheck models, and a model_type that the transformers "
     "release does not have yet (the registry's `since`). A version newer than the newest checked one is a "
     "warning: the plan assumes the newest known behaviour. When only torch is given and the default "
     "transformers cannot run on it, the transformers of that torch's time is assumed and the output says "
     "so."},
};
constexpr const FindingCode& kCannotRunTogether = kCodes[0];

void run(const ReleaseContext& ctx, DiagnosticSink& sink) {
  const StackVersions& v = ctx.versions;
  const VersionRules& rules = ctx.version_rules;
  const ModuleTree& tree = ctx.tree;
  // FSDP2 with transformers' native plan as the caller (--fsdp2-caller transformers).
  const bool native_fsdp =
      ctx.settings.fsdp_version.value == 2 && ctx.settings.fsdp2_caller.value == Fsdp2Caller::transformers;
  auto report = [&](const Setting<Version>& s, Severity severity, std::string message, std::string help) {
    sink.report(
        milder(setting_finding(kCannotRunTogether, s.source, tree.config_path, std::move(message), std::move(help)),
               severity));
  };
  for (auto [name, s, range] :
       {std::tuple{"torch", &v.torch, &rules.torch}, std::tuple{"transformers", &v.transformers, &rules.transformers},
        std::tuple{"accelerate", &v.accelerate, &rules.accelerate}}) {
    if (s->value < range->oldest)
      report(*s, Severity::error,
             fmt::format("{} {} is older than any release shardcheck models ({} to {})", name, s->value.str(),
                         range->oldest.str(), range->newest.str()),
             fmt::format("give the {} version the job really runs (--{}-version, or --python-env)", name, name));
    else if (s->value > range->newest)
      report(*s, Severity::warning,
             fmt::format("{} {} is newer than the newest release shardcheck was checked against ({}); the plan assumes "
                         "{} behaves as {}",
                         name, s->value.str(), range->newest.str(), name, range->newest.str()),
             "a release that does not exist yet is probably a typo");
  }
  if (auto floor = rules.torch_floor(v.transformers.value); floor && v.torch.value < *floor)
    report(v.torch, Severity::error,
           fmt::format("transformers {} cannot run on torch {}: it needs torch {} or later (transformers {})",
                       v.transformers.value.str(), v.torch.value.str(), floor->str(), v.transformers.source),
           fmt::format("give the transformers version the job runs (--transformers-version), or a torch of at "
                       "least {}",
                       floor->str()));
  if (native_fsdp && v.transformers.value <= rules.native_fsdp_absent_through)
    report(v.transformers, Severity::error,
           fmt::format("transformers {} has no native FSDP2 plan (--fsdp2-caller transformers): no release up to {} "
                       "has one",
                       v.transformers.value.str(), rules.native_fsdp_absent_through.str()),
           "let accelerate shard the model (--fsdp2-caller accelerate), or give the transformers version that has it");
  if (!tree.since.empty())
    if (auto first = Version::parse(tree.since); first && v.transformers.value < *first)
      report(v.transformers, Severity::error,
             fmt::format("model_type {} does not exist in transformers {}: it was added in {}", tree.model_type,
                         v.transformers.value.str(), tree.since),
             fmt::format("this model needs transformers {} or later", tree.since));
}

}  // namespace stack_releases

extern const ReleaseCheck kStackReleases;
const ReleaseCheck kStackReleases{
    .name = "stack-releases",
    .codes = stack_releases::kCodes,
    .run = stack_releases::run,
};

}  // namespace shardcheck::checks
