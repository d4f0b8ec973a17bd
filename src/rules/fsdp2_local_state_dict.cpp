// fsdp2-local-state-dict: FSDP2 has no LOCAL_STATE_DICT.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace fsdp2_local_state_dict {
void check(LintContext& ctx);
}

extern const Rule kFsdp2LocalStateDict;
const Rule kFsdp2LocalStateDict{
    .id = "fsdp2-local-state-dict",
    .severity = Severity::error,
    .summary = "LOCAL_STATE_DICT with FSDP2",
    .explanation =
        "FullyShardedDataParallelPlugin.set_state_dict_type (utils/dataclasses.py, v1.6.0+) raises `ValueError: FSDP2 "
        "does not support LOCAL_STATE_DICT. Please set `fsdp_state_dict_type` to `SHARDED_STATE_DICT` or "
        "`FULL_STATE_DICT`.` `accelerate to-fsdp2` does not remap it either.",
    .fix = "use SHARDED_STATE_DICT",
    .check = fsdp2_local_state_dict::check,
};

namespace fsdp2_local_state_dict {
void check(LintContext& ctx) {
  if (!ctx.is_fsdp() || ctx.fsdp_version() != 2) return;
  if (ctx.fsdp_enum("fsdp_state_dict_type") != std::optional<std::string>("LOCAL_STATE_DICT")) return;
  const YamlEntry* e = ctx.fsdp("fsdp_state_dict_type");
  ctx.report(kFsdp2LocalStateDict, ctx.doc.value_location(*e),
             "FSDP2 fails with `ValueError: FSDP2 does not support LOCAL_STATE_DICT. Please set `fsdp_state_dict_type` "
             "to `SHARDED_STATE_DICT` or `FULL_STATE_DICT`.`",
             "write `SHARDED_STATE_DICT`",
             {ctx.edit(e->value->pos.offset, e->value->end - e->value->pos.offset, "SHARDED_STATE_DICT")});
}
}  // namespace fsdp2_local_state_dict

}  // namespace shardcheck::rules
