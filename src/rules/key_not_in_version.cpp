// key-not-in-version: a key that the targeted accelerate release does not have yet, or no longer has.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace key_not_in_version {
void check(LintContext& ctx);
}

extern const Rule kKeyNotInVersion;
const Rule kKeyNotInVersion{
    .id = "key-not-in-version",
    .severity = Severity::error,
    .summary = "A key that does not exist in the targeted accelerate version",
    .explanation =
        "Keys come and go between releases (rules/accelerate/schema.yaml, from accelerate's git history): "
        "`enable_cpu_affinity` appeared in v0.29.0 (b8b353b7), `fp8_config` in v0.34.0, `parallelism_config` in "
        "v1.10.0 (6891c570), `tp_config` lived from v1.4.0 to v1.6.x, `ipex_config` was removed in v1.13.0, "
        "`fsdp_version` and `fsdp_reshard_after_forward` appeared in v1.6.0. At the top level an unknown key makes "
        "load_config_from_file raise the 'had unknown keys' ValueError (sd-webui-EasyPhoto#446 with accelerate "
        "< 0.29), so it is an error; inside fsdp_config the key is silently ignored (a warning): "
        "`fsdp_version: 2` on accelerate 1.5 quietly runs FSDP1. Pass --accelerate-version (or --python-env) to "
        "check against the release you run.",
    .fix = "remove a top-level key whose value is the default anyway",
    .check = key_not_in_version::check,
};

namespace key_not_in_version {
std::string history(const KeySpec& k) {
  if (k.since && k.removed) return fmt::format("it exists from {} until {}", k.since->str(), k.removed->str());
  if (k.since) return fmt::format("added in {}", k.since->str());
  if (k.removed) return fmt::format("removed in {}", k.removed->str());
  return "";
}

void check(LintContext& ctx) {
  const Version& v = ctx.version();
  for (const KeyUse& use : ctx.known_keys()) {
    const KeySpec& k = *use.spec;
    if (k.exists_in(v)) continue;
    const YamlEntry& e = *use.entry;
    if (use.top_level()) {
      std::vector<TextEdit> fix;
      if (!k.default_value.empty() && e.value && e.value->is_scalar() &&
          python_str(*e.value) ==
              (k.type == "bool" ? (k.default_value == "true" ? "True" : "False") : k.default_value)) {
        const auto [b, end] = line_span(ctx.doc, e.key_pos.offset, entry_end(e));
        fix.push_back(ctx.edit(b, end - b, ""));
      }
      ctx.report(kKeyNotInVersion, ctx.doc.key_location(e),
                 fmt::format("`{}` does not exist in accelerate {} ({})", e.key, v.str(), history(k)),
                 fmt::format("accelerate {} raises: `ValueError: The config file at {} had unknown keys ({}), please "
                             "try upgrading your `accelerate` version or fix (and potentially remove) these keys from "
                             "your config file.`{}",
                             v.str(), ctx.doc.path, python_list({e.key}),
                             fix.empty() ? "" : " The value is the default: the line can go."),
                 std::move(fix));
    } else {
      std::string consequence = "silently ignored";
      if (k.name == "fsdp_version" && e.value && python_str(*e.value) == "2")
        consequence = "silently ignored: the job runs FSDP1, not FSDP2";
      ctx.report(kKeyNotInVersion, Severity::warning, ctx.doc.key_location(e),
                 fmt::format("`{}` is not read by accelerate {} ({}): {}", e.key, v.str(), history(k), consequence),
                 k.since && v < *k.since ? fmt::format("upgrade accelerate to {} or later", k.since->str())
                                         : "remove the key");
    }
  }
}
}  // namespace key_not_in_version

}  // namespace shardcheck::rules
