// unknown-top-level-key: a top-level key the config dataclass does not have. accelerate refuses the file.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace unknown_top_level_key {
void check(LintContext& ctx);
}

extern const Rule kUnknownTopLevelKey;
const Rule kUnknownTopLevelKey{
    .id = "unknown-top-level-key",
    .severity = Severity::error,
    .summary = "A top-level key accelerate does not know",
    .explanation =
        "load_config_from_file (commands/config/config_args.py, v0.34.0 through v1.14.0) compares the top-level keys "
        "with the fields of ClusterConfig (compute_environment missing or exactly LOCAL_MACHINE) or SageMakerConfig "
        "(anything else) and raises `ValueError: The config file at ... had unknown keys ([...]), please try upgrading "
        "your `accelerate` version or fix (and potentially remove) these keys from your config file.` The check "
        "covers top-level keys only; SageMaker-only keys in a cluster file (and the reverse) fail the same way "
        "(gemlab-vt/NoiseCLR#2: a mistyped compute_environment made every cluster key unknown).",
    .fix = "",
    .check = unknown_top_level_key::check,
};

namespace unknown_top_level_key {
bool is_sagemaker(const LintContext& ctx) {
  const YamlEntry* e = ctx.top("compute_environment");
  return e && e->value && !(e->value->is_scalar() && e->value->text == "LOCAL_MACHINE");
}

void check(LintContext& ctx) {
  const YamlNode& r = ctx.root();
  if (!r.is_mapping()) return;
  const bool sagemaker = is_sagemaker(ctx);
  const std::string cls = sagemaker ? "SageMakerConfig" : "ClusterConfig";
  std::vector<std::string> candidates;
  for (const auto& [name, k] : ctx.schema.top.keys)
    if (k.exists_in(ctx.version()) && k.only != (sagemaker ? "cluster" : "sagemaker")) candidates.push_back(name);
  for (const auto& e : r.entries) {
    if (r.find(e.key) != &e || ctx.is_flattened(&e)) continue;
    const KeySpec* k = ctx.schema.top.find(e.key);
    std::string why;
    if (k) {
      if (k->only.empty() || k->only == (sagemaker ? "sagemaker" : "cluster")) continue;  // known here
      why = fmt::format("`{}` is a {} field, but this file is loaded as a {}{}", e.key,
                        k->only == "cluster" ? "ClusterConfig" : "SageMakerConfig", cls,
                        sagemaker ? " because compute_environment is not exactly LOCAL_MACHINE" : "");
    } else {
      why = fmt::format("unknown top-level key `{}`", e.key);
      for (const auto& [sname, section] : ctx.schema.sections)
        if (section.find(e.key)) why += fmt::format(" (it belongs under `{}`)", sname);
      if (why.find("belongs") == std::string::npos) {
        const std::string guess = did_you_mean(e.key, candidates);
        if (!guess.empty()) why += fmt::format(" (did you mean `{}`?)", guess);
      }
    }
    ctx.report(kUnknownTopLevelKey, ctx.doc.key_location(e), why,
               fmt::format("accelerate {} raises: `ValueError: The config file at {} had unknown keys ({}), please "
                           "try upgrading your `accelerate` version or fix (and potentially remove) these keys from "
                           "your config file.`",
                           ctx.version().str(), ctx.doc.path, python_list({e.key})));
  }
}
}  // namespace unknown_top_level_key

}  // namespace shardcheck::rules
