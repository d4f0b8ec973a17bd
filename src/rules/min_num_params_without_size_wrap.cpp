// min-num-params-without-size-wrap: a size threshold that no policy reads.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace min_num_params_without_size_wrap {
void check(LintContext& ctx);
}

extern const Rule kMinNumParamsWithoutSizeWrap;
const Rule kMinNumParamsWithoutSizeWrap{
    .id = "min-num-params-without-size-wrap",
    .severity = Severity::warning,
    .summary = "fsdp_min_num_params is set but the wrap policy is not SIZE_BASED_WRAP",
    .explanation =
        "The plugin reads FSDP_MIN_NUM_PARAMS only for SIZE_BASED_WRAP (utils/dataclasses.py::__post_init__ and "
        "set_auto_wrap_policy, v1.14.0). With TRANSFORMER_BASED_WRAP or NO_WRAP the threshold is ignored; "
        "transformers' "
        "Trainer even rejects the combination with a class list (`min_num_params and transformer_layer_cls_to_wrap are "
        "mutually exclusive`).",
    .fix = "",
    .check = min_num_params_without_size_wrap::check,
};

namespace min_num_params_without_size_wrap {
void check(LintContext& ctx) {
  if (!ctx.is_fsdp()) return;
  const KeyUse* use = ctx.known("fsdp_config", "fsdp_min_num_params");
  if (!use || ctx.value_is_read(*use)) return;  // the schema's read_when decides, as for every value rule
  const YamlEntry* min = use->entry;
  if (!min->value || min->value->is_null()) return;
  const YamlEntry* policy_entry = ctx.fsdp("fsdp_auto_wrap_policy");
  const auto policy = ctx.fsdp_enum("fsdp_auto_wrap_policy");
  if (policy_entry && !policy) return;
  const std::string effective = policy.value_or("NO_WRAP");
  if (effective == "SIZE_BASED_WRAP") return;
  ctx.report(kMinNumParamsWithoutSizeWrap, ctx.doc.key_location(*min),
             fmt::format("`{}` is ignored: the wrap policy is {}{}", min->key, effective,
                         policy_entry ? "" : " (the default)"),
             "remove it, or set `fsdp_auto_wrap_policy: SIZE_BASED_WRAP`");
}
}  // namespace min_num_params_without_size_wrap

}  // namespace shardcheck::rules
