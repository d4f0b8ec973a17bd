// env-leaks-into-job: FSDP_*/ACCELERATE_* variables in the caller's shell that reach the training
// processes because `accelerate launch` does not overwrite them.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace env_leaks_into_job {
void check(LintContext& ctx);
}

extern const Rule kEnvLeaksIntoJob;
const Rule kEnvLeaksIntoJob{
    .id = "env-leaks-into-job",
    .severity = Severity::warning,
    .summary = "An environment variable that silently changes the job",
    .explanation =
        "utils/launch.py::prepare_multi_gpu_env starts from os.environ.copy() (v0.34.0 and v1.14.0). Variables the "
        "launcher sets always are overwritten, but FSDP_AUTO_WRAP_POLICY, FSDP_TRANSFORMER_CLS_TO_WRAP, "
        "FSDP_BACKWARD_PREFETCH, FSDP_STATE_DICT_TYPE and FSDP_IGNORED_MODULES are exported only when the config sets "
        "them, so a stale value in the shell reaches FullyShardedDataParallelPlugin, which reads FSDP_* for every "
        "field "
        "not passed in Python. ACCELERATE_USE_FSDP=true makes AcceleratorState pick FSDP even for a MULTI_GPU file. "
        "A stale FSDP_TRANSFORMER_CLS_TO_WRAP is a classic cause of `Could not find the transformer layer class`. "
        "Precedence (utils/dataclasses.py, v1.14.0): explicit plugin arguments > launcher-set variables > inherited "
        "variables > defaults.",
    .fix = "",
    .check = env_leaks_into_job::check,
};

namespace env_leaks_into_job {
void check(LintContext& ctx) {
  if (!ctx.opts.audit_env) return;
  const SectionSpec* fsdp = ctx.schema.section("fsdp_config");
  for (const EnvVar& var : ctx.opts.env) {
    if (var.name == "ACCELERATE_USE_FSDP") {
      const std::string dt = ctx.distributed_type();
      if (env_truthy(var.value) && !dt.empty() && dt != "FSDP")
        ctx.report(kEnvLeaksIntoJob, env_location(ctx, var, ctx.top("distributed_type")),
                   fmt::format("ACCELERATE_USE_FSDP={} in the environment but distributed_type is {}: the launcher "
                               "does not reset it, so Accelerator() switches to FSDP",
                               var.value, dt),
                   "unset ACCELERATE_USE_FSDP");
      continue;
    }
    const SectionSpec* section = nullptr;
    const KeySpec* k = ctx.schema.key_for_env(var.name, &section);
    if (!k || k->exported != "if_set" || section != fsdp || !ctx.is_fsdp()) continue;
    if (ctx.fsdp(k->name)) continue;  // the launcher exports the file's value over it
    ctx.report(kEnvLeaksIntoJob, env_location(ctx, var, ctx.top("fsdp_config")),
               fmt::format("{}={} in the environment applies to the job: the file has no `{}`, so accelerate launch "
                           "does not overwrite it",
                           var.name, var.value, k->name),
               fmt::format("unset {} or set `{}` in fsdp_config", var.name, k->name));
  }
}
}  // namespace env_leaks_into_job

}  // namespace shardcheck::rules
