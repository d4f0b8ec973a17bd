// cls-list-without-transformer-wrap: a class list that no wrap policy reads.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace cls_list_without_transformer_wrap {
void check(LintContext& ctx);
}

extern const Rule kClsListWithoutTransformerWrap;
const Rule kClsListWithoutTransformerWrap{
    .id = "cls-list-without-transformer-wrap",
    .severity = Severity::warning,
    .summary = "fsdp_transformer_layer_cls_to_wrap is set but the wrap policy is not TRANSFORMER_BASED_WRAP",
    .explanation =
        "FullyShardedDataParallelPlugin.set_auto_wrap_policy (utils/dataclasses.py, v1.14.0; "
        "fsdp_utils.py::fsdp2_prepare_auto_wrap_policy for FSDP2) reads the class list only for "
        "TRANSFORMER_BASED_WRAP. The policy defaults to NO_WRAP when fsdp_auto_wrap_policy is absent "
        "(FSDP_AUTO_WRAP_POLICY is exported only if set), so the list is silently ignored and the whole model becomes "
        "one FSDP unit: no per-layer sharding, the full model is all-gathered at once.",
    .fix = "add `fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP` when no policy is given",
    .check = cls_list_without_transformer_wrap::check,
};

namespace cls_list_without_transformer_wrap {
void check(LintContext& ctx) {
  if (!ctx.is_fsdp()) return;
  const KeyUse* use = ctx.known("fsdp_config", "fsdp_transformer_layer_cls_to_wrap");
  if (!use || ctx.value_is_read(*use)) return;  // the schema's read_when decides, as for every value rule
  const YamlEntry* cls = use->entry;
  if (!cls->value || cls->value->is_null()) return;
  const YamlEntry* policy_entry = ctx.fsdp("fsdp_auto_wrap_policy");
  const auto policy = ctx.fsdp_enum("fsdp_auto_wrap_policy");
  if (policy_entry && !policy) return;  // invalid-enum-value already reports the policy
  const std::string effective = policy.value_or("NO_WRAP");
  if (effective == "TRANSFORMER_BASED_WRAP") return;
  std::vector<TextEdit> fix;
  if (!policy_entry) {
    const std::size_t ls = line_start(ctx.doc, cls->key_pos.line);
    const std::string indent(static_cast<std::size_t>(cls->key_pos.column - 1), ' ');
    const std::string key = cls->key.rfind("fsdp_", 0) == 0 ? "fsdp_auto_wrap_policy" : "auto_wrap_policy";
    fix.push_back(ctx.edit(ls, 0, fmt::format("{}{}: TRANSFORMER_BASED_WRAP\n", indent, key)));
  }
  ctx.report(kClsListWithoutTransformerWrap, ctx.doc.key_location(*cls),
             fmt::format("`{}` is ignored: the wrap policy is {}{}", cls->key, effective,
                         policy_entry ? "" : " (the default, fsdp_auto_wrap_policy is absent)"),
             "set `fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP` or remove the class list", std::move(fix));
}
}  // namespace cls_list_without_transformer_wrap

}  // namespace shardcheck::rules
