// config-not-a-mapping: an empty file, or a top level that is a list or a scalar.
#include <fmt/format.h>

#include "shardcheck/lint.hpp"

namespace shardcheck::rules {
namespace config_not_a_mapping {
void check(LintContext& ctx);
}

extern const Rule kConfigNotAMapping;
const Rule kConfigNotAMapping{
    .id = "config-not-a-mapping",
    .severity = Severity::error,
    .summary = "The top level of the file is not a mapping of settings",
    .explanation =
        "load_config_from_file (commands/config/config_args.py, v0.34.0 and v1.14.0) treats the result of "
        "`yaml.safe_load` as a dict: it looks up `compute_environment` and `distributed_type` in it. An empty file "
        "loads as None and a list or a scalar is not a dict, so accelerate fails with a Python TypeError before "
        "printing anything useful.",
    .fix = "",
    .check = config_not_a_mapping::check,
};

namespace config_not_a_mapping {
void check(LintContext& ctx) {
  const YamlNode& r = ctx.root();
  if (r.is_mapping()) return;
  const char* found = r.is_null() ? "an empty document" : r.is_scalar() ? "a scalar" : "a sequence";
  ctx.report(kConfigNotAMapping, ctx.doc.location(r.pos.offset, r.end),
             fmt::format("expected a mapping of accelerate settings at the top level, found {}", found),
             "write `key: value` lines, e.g. run `accelerate config` to generate a file");
}
}  // namespace config_not_a_mapping

}  // namespace shardcheck::rules
