// fsdp-config-unused: an fsdp_config block under a distributed_type other than FSDP.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace fsdp_config_unused {
void check(LintContext& ctx);
}

extern const Rule kFsdpConfigUnused;
const Rule kFsdpConfigUnused{
    .id = "fsdp-config-unused",
    .severity = Severity::warning,
    .summary = "fsdp_config is set but distributed_type is not FSDP",
    .explanation =
        "launch.py::_validate_launch_command sets `use_fsdp = distributed_type == FSDP` unless --use_fsdp is passed; "
        "only then does prepare_multi_gpu_env export the FSDP_* variables (v0.34.0 and v1.14.0). A non-empty "
        "fsdp_config under MULTI_GPU or DEEPSPEED is silently unused: the job runs plain DDP (or DeepSpeed).",
    .fix = "",
    .check = fsdp_config_unused::check,
};

namespace fsdp_config_unused {
void check(LintContext& ctx) {
  const YamlNode* m = ctx.section_map("fsdp_config");
  const std::string dt = ctx.distributed_type();
  if (!m || m->entries.empty() || dt.empty() || dt == "FSDP") return;
  ctx.report(kFsdpConfigUnused, ctx.doc.value_location(*ctx.top("distributed_type")),
             fmt::format("distributed_type is {}, so the fsdp_config block (line {}) is not used", dt,
                         ctx.top("fsdp_config")->key_pos.line),
             "set `distributed_type: FSDP` to use it (or pass --use_fsdp), or remove the block");
}
}  // namespace fsdp_config_unused

}  // namespace shardcheck::rules
