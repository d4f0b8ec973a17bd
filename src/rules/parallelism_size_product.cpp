// parallelism-size-product: parallelism_config sizes whose product is not num_processes.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace parallelism_size_product {
void check(LintContext& ctx);
}

extern const Rule kParallelismSizeProduct;
const Rule kParallelismSizeProduct{
    .id = "parallelism-size-product",
    .severity = Severity::error,
    .summary = "parallelism_config sizes do not multiply to num_processes",
    .explanation =
        "ParallelismConfig (accelerate v1.10.0+) builds one device mesh whose dimensions are dp_replicate x dp_shard x "
        "tp x cp; every process must sit in exactly one mesh position, so the product must equal num_processes. "
        "Mismatches surface late and cryptically: `KeyError: \"A parameter in the optimizer couldn't be switched to "
        "its "
        "sharded version.\"` (accelerate#3821) or `KeyError: \"Invalid mesh_dim_names ('dp_shard_cp',) specified.\"` "
        "(accelerate#3798: 'You had FSDP enabled in the command, but gave all the ranks to TP').",
    .fix = "",
    .check = parallelism_size_product::check,
};

namespace parallelism_size_product {
void check(LintContext& ctx) {
  const auto sizes = parallelism_sizes(ctx);
  const auto n = ctx.top_int("num_processes");
  if (!sizes || !n || *n <= 0) return;
  std::int64_t product = 1;
  std::string formula;
  for (auto [dim, size] : {std::pair{"dp_replicate", sizes->dp_replicate}, std::pair{"dp_shard", sizes->dp_shard},
                           std::pair{"tp", sizes->tp}, std::pair{"cp", sizes->cp}, std::pair{"sp", sizes->sp}}) {
    if (!size.entry) continue;
    if (size.value < 1) return;  // "auto" sizes (-1) are resolved at run time
    product *= size.value;
    formula += fmt::format("{}{} {}", formula.empty() ? "" : " x ", dim, size.value);
    if (product > (1LL << 40)) return;
  }
  if (formula.empty() || product == *n) return;
  ctx.report(kParallelismSizeProduct, ctx.doc.key_location(*ctx.top("parallelism_config")),
             fmt::format("parallelism sizes multiply to {} ({}) but num_processes is {}", product, formula, *n),
             "make dp_replicate x dp_shard x tp x cp equal num_processes");
}
}  // namespace parallelism_size_product

}  // namespace shardcheck::rules
