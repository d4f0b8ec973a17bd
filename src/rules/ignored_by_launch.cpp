// ignored-by-launch: YAML values that `accelerate launch` never applies because its argparse
// default is not None (rdzv_backend, same_network, enable_cpu_affinity).
#include <fmt/format.h>

#include <cctype>

#include "rules/rule_util.hpp"
#include "shardcheck/text.hpp"

namespace shardcheck::rules {
namespace ignored_by_launch {
void check(LintContext& ctx);
}

extern const Rule kIgnoredByLaunch;
const Rule kIgnoredByLaunch{
    .id = "ignored-by-launch",
    .severity = Severity::warning,
    .summary = "A setting that `accelerate launch` never takes from the file",
    .explanation =
        "launch.py::_validate_launch_command copies a top-level scalar from the config only when "
        "`getattr(args, name, None) is None`. `--rdzv_backend` defaults to \"static\", and `--same_network` and "
        "`--enable_cpu_affinity` are store_true flags defaulting to False, so the YAML values of these keys never "
        "reach "
        "the launcher (v0.34.0 and v1.14.0). A file that says `rdzv_backend: c10d`, `enable_cpu_affinity: true` or, on "
        "several machines, `same_network: true` silently gets the defaults. Pass the setting as a command-line flag.",
    .fix = "",
    .check = ignored_by_launch::check,
};

namespace ignored_by_launch {

void check(LintContext& ctx) {
  if (ctx.version() < Version{0, 34, 0}) return;  // verified from v0.34.0 on
  for (const KeyUse& use : ctx.known_keys()) {
    if (!use.top_level() || !use.spec->launch_ignored || !use.entry->value) continue;
    const YamlEntry& e = *use.entry;
    if (!e.value->is_scalar()) continue;
    const std::string value = ascii_lower(python_str(*e.value));
    if (value == ascii_lower(*use.spec->launch_ignored) || value == "none") continue;
    if (e.key == "same_network" && ctx.num_machines() <= 1) continue;  // only used for multi-node rendezvous
    const std::string flag =
        use.spec->type == "bool" ? fmt::format("--{}", e.key) : fmt::format("--{} {}", e.key, e.value->text);
    // same_network only picks master_addr/port instead of an rdzv endpoint; both usually work: a note.
    ctx.report(kIgnoredByLaunch, e.key == "same_network" ? Severity::note : Severity::warning,
               ctx.doc.value_location(e),
               fmt::format("`{}: {}` has no effect through `accelerate launch`: the launcher's default ({}) wins",
                           e.key, e.value->text, *use.spec->launch_ignored),
               fmt::format("pass `{}` on the `accelerate launch` command line", flag));
  }
}
}  // namespace ignored_by_launch

}  // namespace shardcheck::rules
