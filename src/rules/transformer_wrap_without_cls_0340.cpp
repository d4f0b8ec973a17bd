// transformer-wrap-without-cls-0340: accelerate 0.34.0 splits _no_split_modules into characters.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace transformer_wrap_without_cls_0340 {
void check(LintContext& ctx);
}

extern const Rule kTransformerWrapWithoutCls0340;
const Rule kTransformerWrapWithoutCls0340{
    .id = "transformer-wrap-without-cls-0340",
    .severity = Severity::error,
    .summary = "TRANSFORMER_BASED_WRAP without a class list on accelerate 0.34.0",
    .explanation =
        "In v0.34.0 only, set_auto_wrap_policy (utils/dataclasses.py) defaults the class list to "
        "`\",\".join(model._no_split_modules)` and then iterates over that string, i.e. over characters, so a Llama "
        "model fails with `ValueError: Could not find the transformer layer class L in the model.` (the refactor "
        "3bde6156, #2998, moved the split; fixed by ab89fc7e, #3075, released in v0.34.1). An explicit "
        "fsdp_transformer_layer_cls_to_wrap avoids the bug.",
    .fix = "",
    .check = transformer_wrap_without_cls_0340::check,
};

namespace transformer_wrap_without_cls_0340 {
void check(LintContext& ctx) {
  if (ctx.version() != Version{0, 34, 0} || !ctx.is_fsdp()) return;
  if (ctx.fsdp_enum("fsdp_auto_wrap_policy") != std::optional<std::string>("TRANSFORMER_BASED_WRAP")) return;
  const YamlEntry* cls = ctx.fsdp("fsdp_transformer_layer_cls_to_wrap");
  if (cls && cls->value && !cls->value->is_null()) return;
  ctx.report(kTransformerWrapWithoutCls0340, ctx.doc.value_location(*ctx.fsdp("fsdp_auto_wrap_policy")),
             "TRANSFORMER_BASED_WRAP without `fsdp_transformer_layer_cls_to_wrap` on accelerate 0.34.0 iterates "
             "over the characters of the model's _no_split_modules: `ValueError: Could not find the transformer "
             "layer class L in the model.` (for a Llama model)",
             "upgrade to accelerate 0.34.1 or later, or set `fsdp_transformer_layer_cls_to_wrap` (e.g. "
             "LlamaDecoderLayer)");
}
}  // namespace transformer_wrap_without_cls_0340

}  // namespace shardcheck::rules
