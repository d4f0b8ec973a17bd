// multi-node-no-main-ip: several machines but no main_process_ip.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace multi_node_no_main_ip {
void check(LintContext& ctx);
}

extern const Rule kMultiNodeNoMainIp;
const Rule kMultiNodeNoMainIp{
    .id = "multi-node-no-main-ip",
    .severity = Severity::warning,
    .summary = "Several machines but no main_process_ip",
    .explanation =
        "With num_machines > 1 every node must reach the rank-0 machine: the simple launcher asserts `When using "
        "multiple "
        "machines, you need to specify the main process IP.` and torchrun needs --master_addr / --rdzv_endpoint "
        "(commands/launch.py, utils/launch.py, v1.14.0). It may be passed on the command line "
        "(--main_process_ip), hence a warning.",
    .fix = "",
    .check = multi_node_no_main_ip::check,
};

namespace multi_node_no_main_ip {
void check(LintContext& ctx) {
  if (ctx.num_machines() <= 1) return;
  const YamlEntry* ip = ctx.top("main_process_ip");
  if (ip && ip->value && ip->value->is_scalar() && ip->value->scalar().type != YamlType::null) return;
  ctx.report(kMultiNodeNoMainIp, ip ? ctx.doc.key_location(*ip) : ctx.doc.key_location(*ctx.top("num_machines")),
             fmt::format("num_machines {} without main_process_ip: accelerate fails with `When using multiple "
                         "machines, you need to specify the main process IP.` unless --main_process_ip is passed",
                         ctx.num_machines()),
             "add `main_process_ip: <address of machine 0>` and `main_process_port`");
}
}  // namespace multi_node_no_main_ip

}  // namespace shardcheck::rules
