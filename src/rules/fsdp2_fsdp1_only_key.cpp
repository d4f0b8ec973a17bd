// fsdp2-fsdp1-only-key: FSDP1-only settings left in an FSDP2 config.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace fsdp2_fsdp1_only_key {
void check(LintContext& ctx);
}

extern const Rule kFsdp2Fsdp1OnlyKey;
const Rule kFsdp2Fsdp1OnlyKey{
    .id = "fsdp2-fsdp1-only-key",
    .severity = Severity::warning,
    .summary = "An FSDP1-only setting in an FSDP2 config",
    .explanation =
        "FullyShardedDataParallelPlugin.__post_init__ (utils/dataclasses.py, v1.6.0+) reads FSDP_BACKWARD_PREFETCH, "
        "FSDP_FORWARD_PREFETCH, FSDP_USE_ORIG_PARAMS and FSDP_SYNC_MODULE_STATES only for FSDP1, and FSDP2 never reads "
        "FSDP_SHARDING_STRATEGY (reshard_after_forward replaces it). In Python the plugin warns `backward_prefetch is "
        "not supported in FSDP2`, `use_orig_params is obsolete in FSDP2`, `sync_module_states is obsolete in FSDP2` "
        "and "
        "raises for forward_prefetch. `accelerate to-fsdp2` (commands/to_fsdp2.py) removes these keys, but leaked them "
        "unchanged from v1.6.0 to v1.13.x (fixed by #4065 in v1.14.0). The fix does what to-fsdp2 does: it removes "
        "them, "
        "and turns fsdp_sharding_strategy into fsdp_reshard_after_forward (FULL_SHARD/HYBRID_SHARD -> true, others -> "
        "false).",
    .fix = "remove the key (map fsdp_sharding_strategy to fsdp_reshard_after_forward)",
    .check = fsdp2_fsdp1_only_key::check,
};

namespace fsdp2_fsdp1_only_key {
void check(LintContext& ctx) {
  if (!ctx.is_fsdp() || ctx.fsdp_version() != 2) return;
  const SectionSpec* section = ctx.schema.section("fsdp_config");
  for (const KeyUse& use : ctx.known_keys()) {
    if (use.section != section) continue;
    const KeySpec& k = *use.spec;
    const std::string kind = k.name == "fsdp_sharding_strategy" ? "ignored" : k.fsdp1_only;
    if (kind.empty()) continue;
    const YamlEntry& e = *use.entry;
    const auto [b, end] = line_span(ctx.doc, e.key_pos.offset, entry_end(e));
    std::vector<TextEdit> fix{ctx.edit(b, end - b, "")};
    std::string what;
    if (kind == "removed")
      what = "FSDP2 has no backward prefetch setting";
    else if (kind == "not_implemented")
      what = "forward prefetch is not implemented in FSDP2";
    else if (kind == "obsolete")
      what = "it is obsolete in FSDP2";
    else
      what = "FSDP2 never reads it; fsdp_reshard_after_forward decides resharding";
    if (k.name == "fsdp_sharding_strategy" && !ctx.fsdp("fsdp_reshard_after_forward")) {
      const auto strategy = ctx.fsdp_enum("fsdp_sharding_strategy");
      if (strategy) {
        const bool reshard = *strategy == "FULL_SHARD" || *strategy == "HYBRID_SHARD";
        const std::string key = e.key.rfind("fsdp_", 0) == 0 ? "fsdp_reshard_after_forward" : "reshard_after_forward";
        fix = {ctx.edit(e.key_pos.offset, e.key_end - e.key_pos.offset, key),
               ctx.edit(e.value->pos.offset, e.value->end - e.value->pos.offset, reshard ? "true" : "false")};
      }
    }
    ctx.report(kFsdp2Fsdp1OnlyKey, ctx.doc.key_location(e),
               fmt::format("`{}` has no effect with `fsdp_version: 2`: {}", e.key, what),
               k.name == "fsdp_sharding_strategy" ? "use `fsdp_reshard_after_forward: true|false` instead"
                                                  : "remove it (as `accelerate to-fsdp2` does)",
               std::move(fix));
  }
}
}  // namespace fsdp2_fsdp1_only_key

}  // namespace shardcheck::rules
