// noncanonical-enum-spelling: an accepted but unusual spelling (lower case, or the integer form).
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace noncanonical_enum_spelling {
void check(LintContext& ctx);
}

extern const Rule kNoncanonicalEnumSpelling;
const Rule kNoncanonicalEnumSpelling{
    .id = "noncanonical-enum-spelling",
    .severity = Severity::note,
    .summary = "An accepted but non-canonical spelling of a choice",
    .explanation =
        "The FSDP plugin (utils/dataclasses.py, v0.26.0+) upper-cases names and maps 1-based integers to "
        "ShardingStrategy/BackwardPrefetch/StateDictType members, so `fsdp_sharding_strategy: 1` and `full_shard` both "
        "mean FULL_SHARD. The names are what `accelerate config` writes since v0.26.0 and what readers (and other "
        "tools, such as transformers' Trainer which maps its own options by name) expect; the integer form is easy to "
        "misread (3 is NO_SHARD).",
    .fix = "write the canonical name",
    .check = noncanonical_enum_spelling::check,
};

namespace noncanonical_enum_spelling {
void check(LintContext& ctx) {
  const Version& v = ctx.version();
  for (const KeyUse& use : ctx.known_keys()) {
    const KeySpec& k = *use.spec;
    if (k.type != "enum" || !ctx.value_is_read(use)) continue;
    const YamlEntry& e = *use.entry;
    if (!e.value || !e.value->is_scalar()) continue;
    const EnumMatch m = match_enum(k, *e.value, v);
    if (!m.matched || m.exact) continue;
    if (m.integer_form && k.name_forms_since && v < *k.name_forms_since) continue;   // only integers work there
    if (!m.integer_form && k.name_forms_since && v < *k.name_forms_since) continue;  // invalid-enum-value reports it
    const std::string written = python_str(*e.value);
    ctx.report(kNoncanonicalEnumSpelling, ctx.doc.value_location(e),
               fmt::format("`{}: {}` means {}", e.key, written, m.canonical),
               fmt::format("write `{}: {}`", e.key, m.canonical),
               {ctx.edit(e.value->pos.offset, e.value->end - e.value->pos.offset, m.canonical)});
  }
}
}  // namespace noncanonical_enum_spelling

}  // namespace shardcheck::rules
