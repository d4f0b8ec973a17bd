// value-out-of-range: an integer outside the range the schema gives the key (`min`/`max` in
// rules/accelerate/schema.yaml): a negative num_processes, zero machines, a port above 65535.
#include <fmt/format.h>

#include <charconv>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace value_out_of_range {
void check(LintContext& ctx);
}

extern const Rule kValueOutOfRange;
const Rule kValueOutOfRange{
    .id = "value-out-of-range",
    .severity = Severity::error,
    .summary = "An integer setting is outside the values accelerate can launch with",
    .explanation =
        "Integers reach torchrun and the FSDP plugin unchecked: accelerate launch passes num_processes // "
        "num_machines as --nproc_per_node and num_machines as --nnodes (utils/launch.py prepare_multi_gpu_env, "
        "v1.14.0), so a negative process count or zero machines starts nothing or fails in torchrun; a port must "
        "be a TCP port; ParallelismConfig raises `ValueError: ... must be at least 1` for a mesh size below 1; a "
        "negative fsdp_min_num_params silently disables the size policy. The ranges are data (schema.yaml "
        "`min`/`max`); a key's own default (num_processes: -1, \"unset\") is left to its rule.",
    .fix = "",
    .check = value_out_of_range::check,
};

namespace value_out_of_range {
void check(LintContext& ctx) {
  for (const KeyUse& use : ctx.known_keys()) {
    const KeySpec& k = *use.spec;
    if ((!k.min && !k.max) || !use.entry->value || !use.entry->value->is_scalar() || !ctx.value_is_read(use)) continue;
    const YamlNode& n = *use.entry->value;
    if (n.text == k.default_value) continue;
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(n.text.data(), n.text.data() + n.text.size(), v);
    if (ec != std::errc() || end != n.text.data() + n.text.size()) continue;  // not an integer: wrong-type's
    const bool low = k.min && v < *k.min, high = k.max && v > *k.max;
    if (!low && !high) continue;
    const std::string range = k.min && k.max ? fmt::format("{} to {}", *k.min, *k.max)
                              : k.min        ? fmt::format("at least {}", *k.min)
                                             : fmt::format("at most {}", *k.max);
    ctx.report(
        kValueOutOfRange, ctx.doc.value_location(*use.entry),
        fmt::format("`{}`: expected {}, found {}", use.entry->key, range, v),
        use.entry->key == "num_processes" ? "num_processes is the total number of processes over all machines" : "");
  }
}
}  // namespace value_out_of_range

}  // namespace shardcheck::rules
