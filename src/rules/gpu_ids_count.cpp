// gpu-ids-count: gpu_ids listing fewer (or more) GPUs than processes per machine.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace gpu_ids_count {
void check(LintContext& ctx);
}

extern const Rule kGpuIdsCount;
const Rule kGpuIdsCount{
    .id = "gpu-ids-count",
    .severity = Severity::error,
    .summary = "gpu_ids does not match the processes per machine",
    .explanation =
        "The launcher exports gpu_ids as CUDA_VISIBLE_DEVICES (utils/launch.py, v1.14.0) and starts num_processes // "
        "num_machines processes per machine, each using the GPU of its local rank. With fewer ids than processes the "
        "extra ranks have no device (`CUDA error: invalid device ordinal`); with more, GPUs sit idle. For MULTI_GPU, "
        "accelerate launch itself refuses fewer than two ids: `Less than two GPU ids were configured and tried to run "
        "on on multiple GPUs.` (text as of v1.14.0).",
    .fix = "",
    .check = gpu_ids_count::check,
};

namespace gpu_ids_count {
void check(LintContext& ctx) {
  const YamlEntry* e = ctx.top("gpu_ids");
  if (!e || !e->value || !e->value->is_scalar()) return;
  const std::string ids = python_str(*e->value);
  if (ids == "all" || ids == "None" || ids.empty()) return;
  std::size_t count = 1;
  for (char c : ids) count += c == ',';
  const auto n = ctx.top_int("num_processes");
  const std::int64_t machines = std::max<std::int64_t>(1, ctx.num_machines());
  if (ctx.distributed_type() == "MULTI_GPU" && count < 2) {
    ctx.report(kGpuIdsCount, ctx.doc.value_location(*e),
               fmt::format("gpu_ids '{}' lists one GPU for MULTI_GPU: accelerate launch fails with `Less than two GPU "
                           "ids were configured and tried to run {}multiple GPUs. Please ensure at least two are "
                           "specified for `--gpu_ids`, or use `--gpu_ids='all'`.`",
                           ids, ctx.version() <= Version{1, 14, 0} ? "on on " : "on "),
               "list at least two GPUs, or use 'all'");
    return;
  }
  if (!n || *n <= 0) return;
  const std::int64_t per_node = *n / machines;
  if (static_cast<std::int64_t>(count) < per_node)
    ctx.report(kGpuIdsCount, ctx.doc.value_location(*e),
               fmt::format("gpu_ids '{}' makes {} GPU{} visible, but {} processes run per machine: ranks {}-{} have no "
                           "GPU (`CUDA error: invalid device ordinal`)",
                           ids, count, count == 1 ? "" : "s", per_node, count, per_node - 1),
               "list one GPU per process, or lower num_processes");
  else if (static_cast<std::int64_t>(count) > per_node)
    ctx.report(kGpuIdsCount, Severity::warning, ctx.doc.value_location(*e),
               fmt::format("gpu_ids '{}' lists {} GPUs but only {} processes run per machine: {} GPU{} stay idle", ids,
                           count, per_node, count - static_cast<std::size_t>(per_node),
                           count - static_cast<std::size_t>(per_node) == 1 ? "" : "s"),
               "raise num_processes or list fewer GPUs");
}
}  // namespace gpu_ids_count

}  // namespace shardcheck::rules
