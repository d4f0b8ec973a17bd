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
        "machines, you need to specify the main process IP.`, while the torchrun launchers (FSDP, MULTI_GPU, "
        "DeepSpeed's "
        "standard multinode launcher) pass `--rdzv_endpoint None:<port>`, so the nodes never meet; DeepSpeed's other "
        "multinode launchers (pdsh, the default, ...) take machine 0 from the hostfile and need no address "
        "(commands/launch.py, utils/launch.py prepare_multi_gpu_env, v1.14.0). It may be passed on the command line "
        "(--main_process_ip), hence a warning.",
    .fix = "",
    .check = multi_node_no_main_ip::check,
};

namespace multi_node_no_main_ip {
// DeepSpeed's own multinode launchers (pdsh, the default, and openmpi, mvapich, mpich, nossh) take the
// hosts from the hostfile and pass --master_addr only `if main_process_ip` (utils/launch.py
// prepare_deepspeed_cmd_env, v1.14.0): the deepspeed runner then uses the hostfile's first host. Only its
// "standard" launcher goes through torchrun's rendezvous.
bool deepspeed_own_launcher(const LintContext& ctx) {
  if (ctx.distributed_type() != "DEEPSPEED") return false;
  const YamlNode* ds = ctx.section_map("deepspeed_config");
  const YamlEntry* l = ds ? ds->find("deepspeed_multinode_launcher") : nullptr;
  return !(l && l->value && l->value->is_scalar() && l->value->text == "standard");
}

void check(LintContext& ctx) {
  if (ctx.num_machines() <= 1 || deepspeed_own_launcher(ctx)) return;
  const YamlEntry* ip = ctx.top("main_process_ip");
  if (ip && ip->value && ip->value->is_scalar() && ip->value->scalar().type != YamlType::null) return;
  ctx.report(kMultiNodeNoMainIp, ip ? ctx.doc.key_location(*ip) : ctx.doc.key_location(*ctx.top("num_machines")),
             // Only the simple launcher asserts; the torchrun launchers (FSDP, MULTI_*, DeepSpeed's standard
             // multinode launcher) build `--rdzv_endpoint {main_process_ip}:{port}` from None
             // (utils/launch.py prepare_multi_gpu_env, prepare_deepspeed_cmd_env, v1.14.0).
             ctx.distributed_type().empty() || ctx.distributed_type() == "NO"
                 ? fmt::format("num_machines {} without main_process_ip: accelerate fails with `When using multiple "
                               "machines, you need to specify the main process IP.` unless --main_process_ip is passed",
                               ctx.num_machines())
                 : fmt::format("num_machines {} without main_process_ip: accelerate launch gives torchrun the "
                               "rendezvous address `None:<port>` (--rdzv_endpoint), which no node can reach, unless "
                               "--main_process_ip is passed",
                               ctx.num_machines()),
             "add `main_process_ip: <address of machine 0>` and `main_process_port`");
}
}  // namespace multi_node_no_main_ip

}  // namespace shardcheck::rules
