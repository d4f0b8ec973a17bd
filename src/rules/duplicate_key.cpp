// duplicate-key: the same key twice in one mapping. PyYAML keeps the last value without a word.
#include <fmt/format.h>

#include "shardcheck/lint.hpp"

namespace shardcheck::rules {
namespace duplicate_key {
void check(LintContext& ctx);
}

extern const Rule kDuplicateKey;
const Rule kDuplicateKey{
    .id = "duplicate-key",
    .severity = Severity::warning,
    .summary = "A key appears twice in the same mapping",
    .explanation =
        "PyYAML's SafeLoader (used by accelerate's load_config_from_file) builds a dict and silently keeps the last "
        "value of a repeated key; YAML 1.2 forbids duplicates. The earlier line looks like it configures something "
        "but has no effect. For fsdp_config the same happens across spellings: `sharding_strategy` and "
        "`fsdp_sharding_strategy` are the same setting (launch.py adds the prefix) and the later one wins.",
    .fix = "",
    .check = duplicate_key::check,
};

namespace duplicate_key {
void walk(LintContext& ctx, const YamlNode& n, int depth) {
  if (depth > 64) return;
  if (n.is_mapping()) {
    for (const auto& e : n.entries) {
      const YamlEntry* last = n.find(e.key);
      if (last != &e)
        ctx.report(kDuplicateKey, ctx.doc.key_location(e),
                   fmt::format("duplicate key `{}`: the value on line {} replaces this one", e.key, last->key_pos.line),
                   "delete one of the two lines");
      if (e.value) walk(ctx, *e.value, depth + 1);
    }
  }
  for (const auto& i : n.items) walk(ctx, *i, depth + 1);
}

void check(LintContext& ctx) {
  walk(ctx, ctx.root(), 0);
  // Two spellings of one FSDP key (with and without the fsdp_ prefix).
  const YamlNode* fsdp = ctx.section_map("fsdp_config");
  const SectionSpec* spec = ctx.schema.section("fsdp_config");
  if (!fsdp || !spec) return;
  for (const auto& e : fsdp->entries) {
    const std::string canonical = spec->canonical(e.key);
    const YamlEntry* winner = ctx.fsdp(canonical);
    if (winner && winner != &e && winner->key != e.key && spec->find(e.key))
      ctx.report(kDuplicateKey, ctx.doc.key_location(e),
                 fmt::format("`{}` and `{}` (line {}) are the same setting; the later one wins", e.key, winner->key,
                             winner->key_pos.line),
                 "keep one spelling");
  }
}
}  // namespace duplicate_key

}  // namespace shardcheck::rules
