// size-wrap-min-num-params: SIZE_BASED_WRAP whose threshold is missing (float default before 1.13) or 0.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace size_wrap_min_num_params {
void check(LintContext& ctx);
}

extern const Rule kSizeWrapMinNumParams;
const Rule kSizeWrapMinNumParams{
    .id = "size-wrap-min-num-params",
    .severity = Severity::error,
    .summary = "SIZE_BASED_WRAP without a usable fsdp_min_num_params",
    .explanation =
        "`accelerate launch` exports FSDP_MIN_NUM_PARAMS always. Before v1.13.0 its default was the float 1e8, "
        "exported "
        "as '100000000.0', and the plugin's int() fails: `ValueError: invalid literal for int() with base 10: "
        "'100000000.0'` (accelerate#3854, fixed by c7a77460 in v1.13.0). A threshold of 0 makes the size policy None: "
        "'If zero, we silently ignore it' (utils/dataclasses.py), so nothing is wrapped.",
    .fix = "",
    .check = size_wrap_min_num_params::check,
};

namespace size_wrap_min_num_params {
void check(LintContext& ctx) {
  if (!ctx.is_fsdp() || ctx.fsdp_enum("fsdp_auto_wrap_policy") != std::optional<std::string>("SIZE_BASED_WRAP")) return;
  const YamlEntry* min = ctx.fsdp("fsdp_min_num_params");
  const YamlEntry* policy = ctx.fsdp("fsdp_auto_wrap_policy");
  if (!min || !min->value || min->value->is_null()) {
    if (ctx.version() < Version{1, 13, 0})
      ctx.report(kSizeWrapMinNumParams, ctx.doc.value_location(*policy),
                 fmt::format("SIZE_BASED_WRAP without `fsdp_min_num_params`: accelerate {} exports the default 1e8 as "
                             "'100000000.0' and fails with `ValueError: invalid literal for int() with base 10: "
                             "'100000000.0'`",
                             ctx.version().str()),
                 "add `fsdp_min_num_params: 100000000` (or upgrade to accelerate 1.13.0)");
    return;
  }
  const YamlScalar s = min->value->scalar();
  if (min->value->is_scalar() && s.type == YamlType::integer && s.integer <= 0)
    ctx.report(kSizeWrapMinNumParams, Severity::warning, ctx.doc.value_location(*min),
               "`fsdp_min_num_params: 0` disables SIZE_BASED_WRAP: accelerate silently builds no wrap policy",
               "set a parameter count, e.g. 100000000");
}
}  // namespace size_wrap_min_num_params

}  // namespace shardcheck::rules
