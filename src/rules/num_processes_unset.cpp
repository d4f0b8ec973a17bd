// num-processes-unset: a distributed config without num_processes needs --num_processes at launch.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace num_processes_unset {
void check(LintContext& ctx);
}

extern const Rule kNumProcessesUnset;
const Rule kNumProcessesUnset{
    .id = "num-processes-unset",
    .severity = Severity::warning,
    .summary = "num_processes is missing or -1",
    .explanation =
        "process_config fills num_processes only for distributed_type NO; otherwise the ClusterConfig default -1 "
        "stays, and `accelerate launch` (launch.py, v0.34.0 and v1.14.0) stops with `You need to manually pass in "
        "`--num_processes` using this config yaml.` unless --num_processes is given on the command line.",
    .fix = "",
    .check = num_processes_unset::check,
};

namespace num_processes_unset {
void check(LintContext& ctx) {
  const std::string dt = ctx.distributed_type();
  if (dt.empty() || dt == "NO" || ctx.schema.top.keys.count("num_processes") == 0) return;
  const YamlEntry* e = ctx.top("num_processes");
  const auto n = ctx.top_int("num_processes");
  if (e && (!n || *n != -1)) return;
  ctx.report(kNumProcessesUnset, e ? ctx.doc.value_location(*e) : ctx.file_location(),
             e ? "`num_processes: -1`: accelerate launch fails with `You need to manually pass in `--num_processes` "
                 "using this config yaml.`"
               : "`num_processes` is missing: accelerate launch fails with `You need to manually pass in "
                 "`--num_processes` using this config yaml.`",
             "add `num_processes: <total GPUs>` or pass --num_processes when launching");
}
}  // namespace num_processes_unset

}  // namespace shardcheck::rules
