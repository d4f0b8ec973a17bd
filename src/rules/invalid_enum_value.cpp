// invalid-enum-value: a value that is not one of the accepted names (or not in the targeted version).
#include <fmt/format.h>

#include <cctype>

#include "rules/rule_util.hpp"
#include "shardcheck/text.hpp"

namespace shardcheck::rules {
namespace invalid_enum_value {
void check(LintContext& ctx);
}

extern const Rule kInvalidEnumValue;
const Rule kInvalidEnumValue{
    .id = "invalid-enum-value",
    .severity = Severity::error,
    .summary = "A value that is not one of the accepted choices",
    .explanation =
        "Choices come from accelerate's enums (utils/dataclasses.py: DistributedType, PrecisionType, ShardingStrategy, "
        "BackwardPrefetch, StateDictType, FSDP_AUTO_WRAP_POLICY; v1.14.0) as recorded in rules/accelerate/schema.yaml "
        "with the release that added each. FSDP names are upper-cased by the plugin, so any case works, and the "
        "sharding strategy, backward prefetch and state-dict type also accept 1-based integers. Top-level enums are "
        "compared exactly. The plugin raises `KeyError` for an unknown FSDP name and accelerate launch raises "
        "`Unknown mixed_precision mode: ...`; `fsdp_auto_wrap_policy` raised `AttributeError: 'list' object has no "
        "attribute 'keys'` from v0.34.0 to v1.7.x (accelerate#3600). Before v0.26.0 the sharding strategy was read "
        "with "
        "int(), so only the integer form works there.",
    .fix = "write the integer form where the targeted release reads only integers",
    .check = invalid_enum_value::check,
};

namespace invalid_enum_value {
void check(LintContext& ctx) {
  const Version& v = ctx.version();
  for (const KeyUse& use : ctx.known_keys()) {
    const KeySpec& k = *use.spec;
    if (k.type != "enum" || !ctx.value_is_read(use)) continue;
    const YamlEntry& e = *use.entry;
    if (!e.value || !e.value->is_scalar()) continue;
    const YamlScalar s = e.value->scalar();
    if (s.type == YamlType::boolean || s.type == YamlType::null) continue;  // yaml11-implicit-type / unset
    const EnumMatch m = match_enum(k, *e.value, v);
    const std::string written = python_str(*e.value);
    const SourceLocation where = ctx.doc.value_location(e);
    if (m.matched) {
      if (!m.integer_form && k.integer_forms && k.name_forms_since && v < *k.name_forms_since) {
        std::size_t idx = 0;
        while (idx < k.values.size() && k.values[idx].value != m.canonical) ++idx;
        const std::string number = std::to_string(idx + 1);
        ctx.report(kInvalidEnumValue, where,
                   fmt::format("`{}: {}`: accelerate {} reads this setting with int(), so names fail; names work "
                               "from {}",
                               e.key, written, v.str(), k.name_forms_since->str()),
                   fmt::format("write `{}: {}` ({})", e.key, number, m.canonical),
                   {ctx.edit(e.value->pos.offset, e.value->end - e.value->pos.offset, number)});
      }
      continue;
    }
    // A name that exists in another release?
    for (const auto& ev : k.values) {
      const bool same = k.case_sensitive ? ev.value == written : ascii_upper(ev.value) == ascii_upper(written);
      if (!same) continue;
      ctx.report(kInvalidEnumValue, where,
                 fmt::format("`{}: {}` is not available in accelerate {} ({})", e.key, written, v.str(),
                             ev.since ? "added in " + ev.since->str() : "removed in " + ev.removed->str()),
                 fmt::format("accepted in {}: {}", v.str(), quoted_list(k.value_names(v))));
      goto next;
    }
    {
      std::vector<std::string> lowered;
      for (const auto& n : k.value_names(v)) {
        std::string l = n;
        l = ascii_lower(std::move(l));
        lowered.push_back(l);
      }
      std::string guess = did_you_mean(written, lowered);
      if (!guess.empty())
        for (const auto& n : k.value_names(v)) {
          std::string l = n;
          l = ascii_lower(std::move(l));
          if (l == guess) guess = n;
        }
      std::string message = fmt::format("`{}: {}` is not one of {}", e.key, written, quoted_list(k.value_names(v)));
      if (k.integer_forms) message += fmt::format(" (or 1-{})", k.values.size());
      if (!guess.empty()) message += fmt::format("; did you mean `{}`?", guess);
      std::string help;
      if (!k.invalid_message.empty()) {
        help = k.invalid_message;
        const auto pos = help.find("{value}");
        if (pos != std::string::npos) help.replace(pos, 7, written);
        help = "accelerate fails with: " + help;
      } else if (k.name == "compute_environment") {
        help = "anything but exactly LOCAL_MACHINE loads the file as a SageMakerConfig";
      } else if (use.section->name == "fsdp_config") {
        help = fmt::format("the FSDP plugin fails with `KeyError: '{}'`", ascii_upper(written));
      }
      ctx.report(kInvalidEnumValue, where, message, help);
    }
  next:;
  }
}
}  // namespace invalid_enum_value

}  // namespace shardcheck::rules
