// missing-distributed-type: accelerate requires distributed_type from v0.34.0.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace missing_distributed_type {
void check(LintContext& ctx);
}

extern const Rule kMissingDistributedType;
const Rule kMissingDistributedType{
    .id = "missing-distributed-type",
    .severity = Severity::error,
    .summary = "distributed_type is missing",
    .explanation =
        "process_config (commands/config/config_args.py, factored out in v0.34.0, commit 1a6af0bd) raises "
        "`ValueError: A `distributed_type` must be specified in the config file.` when the key is absent. Older "
        "releases fell back to the dataclass default.",
    .fix = "",
    .check = missing_distributed_type::check,
};

namespace missing_distributed_type {
void check(LintContext& ctx) {
  if (!ctx.root().is_mapping() || ctx.top("distributed_type")) return;
  const KeySpec* k = ctx.schema.top.find("distributed_type");
  if (!k) return;
  const bool fails = k->required_from && ctx.version() >= *k->required_from;
  ctx.report(kMissingDistributedType, fails ? Severity::error : Severity::warning, ctx.doc.location(0, 0),
             fails ? fmt::format("`distributed_type` is missing: accelerate {} raises `ValueError: {}`",
                                 ctx.version().str(), k->required_message)
                   : "`distributed_type` is missing (required from accelerate 0.34.0)",
             "add e.g. `distributed_type: FSDP`");
}
}  // namespace missing_distributed_type

}  // namespace shardcheck::rules
