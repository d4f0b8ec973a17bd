// reshard-after-forward-value: fsdp_reshard_after_forward must be a truth value for FSDP2 and a
// sharding strategy for FSDP1.
#include <fmt/format.h>

#include "rules/rule_util.hpp"
#include "shardcheck/text.hpp"

namespace shardcheck::rules {
namespace reshard_after_forward_value {
void check(LintContext& ctx);
}

extern const Rule kReshardAfterForwardValue;
const Rule kReshardAfterForwardValue{
    .id = "reshard-after-forward-value",
    .severity = Severity::error,
    .summary = "fsdp_reshard_after_forward has the wrong kind of value",
    .explanation =
        "Since v1.6.0 the plugin reads FSDP_RESHARD_AFTER_FORWARD with str_to_bool for FSDP2, so a strategy name left "
        "over from an FSDP1 file fails with `ValueError: invalid truth value full_shard` (utils/dataclasses.py, "
        "utils/environment.py). For FSDP1 the setting is a ShardingStrategy name, and a boolean there is not one "
        "(`reshard_after_forward set to True. This is not supported with FSDP1, please set to a `str` or an instance "
        "of "
        "`torch.distributed.fsdp.fully_sharded_data_parallel.ShardingStrategy``). `accelerate to-fsdp2` maps "
        "FULL_SHARD "
        "and HYBRID_SHARD to true and the other strategies to false; the fix does the same.",
    .fix = "map a strategy name to true/false for FSDP2",
    .check = reshard_after_forward_value::check,
};

namespace reshard_after_forward_value {
void check(LintContext& ctx) {
  if (!ctx.is_fsdp() || ctx.version() < Version{1, 6, 0}) return;
  const YamlEntry* e = ctx.fsdp("fsdp_reshard_after_forward");
  if (!e || !e->value || !e->value->is_scalar()) return;
  const auto truth = ctx.fsdp_bool("fsdp_reshard_after_forward");
  const KeySpec* strategy_spec = ctx.schema.fsdp_key("fsdp_sharding_strategy");
  const EnumMatch as_strategy = strategy_spec ? match_enum(*strategy_spec, *e->value, ctx.version()) : EnumMatch{};
  const std::string written = python_str(*e->value);
  const std::size_t b = e->value->pos.offset, len = e->value->end - e->value->pos.offset;
  if (ctx.fsdp_version() == 2) {
    if (truth) return;
    std::vector<TextEdit> fix;
    if (as_strategy.matched && !as_strategy.integer_form) {
      const bool reshard = as_strategy.canonical == "FULL_SHARD" || as_strategy.canonical == "HYBRID_SHARD";
      fix.push_back(ctx.edit(b, len, reshard ? "true" : "false"));
    }
    std::string lower = written;
    lower = ascii_lower(std::move(lower));
    ctx.report(kReshardAfterForwardValue, ctx.doc.value_location(*e),
               fmt::format("`{}: {}` with FSDP2: the plugin fails with `ValueError: invalid truth value {}`", e->key,
                           written, lower),
               fix.empty() ? "FSDP2 takes true (reshard, like FULL_SHARD) or false (like SHARD_GRAD_OP)"
                           : fmt::format("write `{}: {}`", e->key, fix.front().text),
               std::move(fix));
    return;
  }
  if (as_strategy.matched || !e->value->is_scalar()) return;
  if (e->value->scalar().type == YamlType::boolean || truth)
    ctx.report(kReshardAfterForwardValue, Severity::warning, ctx.doc.value_location(*e),
               fmt::format("`{}: {}` with FSDP1: FSDP1 expects a sharding strategy name here, not a truth value",
                           e->key, e->value->text),
               "for FSDP1 set `fsdp_sharding_strategy` (e.g. FULL_SHARD); or set `fsdp_version: 2`");
}
}  // namespace reshard_after_forward_value

}  // namespace shardcheck::rules
