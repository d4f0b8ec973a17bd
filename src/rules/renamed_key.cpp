// renamed-key: a key under its old name (fsdp_backward_prefetch_policy -> fsdp_backward_prefetch).
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace renamed_key {
void check(LintContext& ctx);
}

extern const Rule kRenamedKey;
const Rule kRenamedKey{
    .id = "renamed-key",
    .severity = Severity::warning,
    .summary = "A key under a name that the targeted accelerate deprecated or ignores",
    .explanation =
        "Renames come from rules/accelerate/schema.yaml (`renamed_to`). `fsdp_backward_prefetch_policy` became "
        "`fsdp_backward_prefetch` in v0.26.0: v0.26.0-v0.34.x still map the old name with `FutureWarning: "
        "fsdp_backward_prefetch_policy is deprecated and will be removed in version 0.27.0 of Accelerate. Use "
        "fsdp_backward_prefetch instead`, and from v1.0.0 (79a84264, 'The Great Deprecation') the old key is "
        "silently ignored, so backward prefetching quietly falls back to the default. The official "
        "usage_guides/fsdp.md sample still shows the old name. `accelerate config update` does not rename it.",
    .fix = "rename the key (or drop it when the new name is already present)",
    .check = renamed_key::check,
};

namespace renamed_key {
void check(LintContext& ctx) {
  const Version& v = ctx.version();
  for (const KeyUse& use : ctx.known_keys()) {
    const KeySpec& k = *use.spec;
    if (k.renamed_to.empty()) continue;
    const bool ignored = k.ignored_from && v >= *k.ignored_from;
    const bool deprecated = k.deprecated && v >= *k.deprecated;
    if (!ignored && !deprecated) continue;
    if (!use.top_level() && use.section->name == "fsdp_config" && !k.fsdp1_only.empty() && ctx.fsdp_version() == 2)
      continue;  // FSDP2 drops the key entirely: fsdp2-fsdp1-only-key reports it
    const YamlEntry& e = *use.entry;
    std::string new_name = k.renamed_to;
    // Keep the writer's style: without the optional prefix if the old key had none.
    if (use.section->prefix_optional && e.key.rfind(use.section->prefix, 0) != 0 &&
        new_name.rfind(use.section->prefix, 0) == 0)
      new_name = new_name.substr(use.section->prefix.size());
    const bool new_present =
        use.section->name.empty() ? ctx.top(k.renamed_to) != nullptr : ctx.fsdp(k.renamed_to) != nullptr;
    std::vector<TextEdit> fix;
    if (new_present) {
      const auto [b, end] = line_span(ctx.doc, e.key_pos.offset, entry_end(e));
      fix.push_back(ctx.edit(b, end - b, ""));
    } else {
      fix.push_back(ctx.edit(e.key_pos.offset, e.key_end - e.key_pos.offset, new_name));
    }
    const std::string message =
        ignored ? fmt::format("`{}` is silently ignored since accelerate {}: it was renamed to `{}`", e.key,
                              k.ignored_from->str(), k.renamed_to)
                : fmt::format("`{}` is deprecated since accelerate {} (FutureWarning); use `{}`", e.key,
                              k.deprecated->str(), k.renamed_to);
    ctx.report(kRenamedKey, ctx.doc.key_location(e), message,
               new_present ? fmt::format("`{}` is already set; delete this line", k.renamed_to)
                           : fmt::format("rename it to `{}`", new_name),
               std::move(fix));
  }
}
}  // namespace renamed_key

}  // namespace shardcheck::rules
