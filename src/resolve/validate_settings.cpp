// The settings a job runs with, checked once after the accelerate config, the environment and the
// flags are merged (shardcheck/validate_settings.hpp). Sources: accelerate 1.14.0
// commands/launch.py and utils/launch.py (prepare_multi_gpu_env), utils/dataclasses.py
// (FullyShardedDataParallelPlugin.set_auto_wrap_policy), parallelism_config.py; torch
// fully_sharded_data_parallel.py / _init_utils.py.
#include "shardcheck/validate_settings.hpp"

#include <fmt/format.h>

#include "shardcheck/finding_codes.hpp"

namespace shardcheck {
namespace {

constexpr int kMaxRanks = 1 << 20;  // far above any job; keeps every per-rank table small

struct Validator {
  FsdpSettings& s;
  const std::string& fallback_file;
  DiagnosticSink& sink;
  bool runnable = true;

  // At the setting's source, with the catalogue's severity; an error stops the plan.
  template <class T>
  void report(const char* code, const Setting<T>& setting, std::string message, std::string help) {
    if (catalogued_severity(code) == Severity::error) runnable = false;
    sink.report(setting_finding(code, setting.source, fallback_file, std::move(message), std::move(help)));
  }

  void processes() {
    Setting<int>& w = s.world_size;
    Setting<int>& m = s.num_machines;
    if (m.value < 1 || m.value > kMaxRanks) {
      report("SET001", m, fmt::format("expected num_machines of at least 1, found {}", m.value),
             "set num_machines to the number of nodes the job runs on");
      return;
    }
    if (w.value == 0 && !w.source.starts_with("--")) {
      // utils/launch.py prepare_multi_gpu_env: nproc_per_node = str(num_processes // num_machines)
      // if num_processes and num_machines else "1": zero processes means one per machine.
      report("SET002", w,
             fmt::format("num_processes is 0: accelerate launch starts one process per machine, so FSDP runs on {} "
                         "rank(s)",
                         m.value),
             "set num_processes to the total number of GPUs (processes) over all machines");
      w.value = m.value;
      return;
    }
    if (w.value < 1 || w.value > kMaxRanks) {
      report("SET001", w,
             fmt::format("expected num_processes (the world size) between 1 and {}, found {}", kMaxRanks, w.value),
             "set num_processes to the total number of GPUs (processes) over all machines");
      return;
    }
    if (w.value % m.value != 0)
      report("SET003", w,
             fmt::format("num_processes {} is not divisible by num_machines {}: accelerate launch starts "
                         "num_processes // num_machines = {} process(es) per machine, {} in all",
                         w.value, m.value, w.value / m.value, w.value / m.value * m.value),
             "num_processes counts the processes of all machines together: make it a multiple of num_machines");
  }

  void wrap_policy() {
    if (s.fsdp_version.value != 1 && s.fsdp_version.value != 2) {
      report("SET001", s.fsdp_version, fmt::format("expected fsdp_version 1 or 2, found {}", s.fsdp_version.value),
             "set fsdp_version: 1 or 2");
      return;
    }
    if (s.policy.value != WrapPolicyKind::size || s.min_num_params.value > 0) return;
    const bool flag = s.min_num_params.source.starts_with("--");
    if (flag && s.min_num_params.value < 0) {
      report("SET001", s.min_num_params,
             fmt::format("expected a positive --min-num-params, found {}", s.min_num_params.value),
             "give the number of parameters above which a module becomes a unit");
      return;
    }
    // FullyShardedDataParallelPlugin.set_auto_wrap_policy: "If zero, we silently ignore it" (the
    // size policy is replaced by None unless min_num_params > 0), for FSDP1 and FSDP2 alike.
    report("SET004", s.min_num_params,
           fmt::format("SIZE_BASED_WRAP with min_num_params {}: accelerate silently drops the policy, so nothing is "
                       "auto-wrapped and every parameter stays in the root unit",
                       s.min_num_params.value),
           "set fsdp_min_num_params (accelerate config's default is 100000000), or use TRANSFORMER_BASED_WRAP");
    s.policy = {WrapPolicyKind::none, s.min_num_params.source};
  }

  // accelerate refuses every parallelism_config size above 1 under FSDP1 (the lint rule
  // parallelism-requires-fsdp2 says so of a file; this is the same for flags and the environment):
  // cp in AcceleratorState (state.py, 1.10.0+), the others in ParallelismConfig._validate_accelerator.
  // accelerate 1.14 fsdp2_prepare_model shards over mesh[fsdp_dim_names], ("dp_replicate",
  // "dp_shard_cp") or ("dp_shard_cp",), but build_device_mesh (parallelism_config.py) keeps only dims
  // above 1 and flattens dp_shard_cp from dp_shard and cp: with both at 1 (pure replication, or TP
  // alone) the key does not exist and prepare raises before any fully_shard (torch 2.14.1 +
  // accelerate 1.14.0: fixtures/oracle2/tp/llama_tp-fsdp2-tf-d1-t2-w2.json, fixtures/fuzz/seed-1).
  // The plan is still made: it is what FSDP would hold with dp_shard above 1.
  void report_no_shard_dimension(int tp) {
    const bool replicate = s.dp_replicate.value > 1;
    // The mesh's names: its own dims, then the flattened ones build_device_mesh makes, in its order.
    std::string valid;
    const auto add = [&](std::string_view name) { valid += fmt::format("{}'{}'", valid.empty() ? "" : ", ", name); };
    for (const MeshDim& d : s.mesh_dims()) add(d.name);
    if (replicate) add("dp");     // dp_dim_names: dp_replicate (dp_shard is 1)
    if (replicate) add("dp_cp");  // dp_cp_dim_names: dp_replicate (cp is 1)
    const std::string requested = replicate ? "('dp_replicate', 'dp_shard_cp')" : "('dp_shard_cp',)";
    const std::string& source = replicate ? s.dp_replicate.source : s.tp_size.source;
    sink.report(setting_finding(
        "PLAN023", source, fallback_file,
        fmt::format(
            "FSDP2 with {} over {} processes leaves dp_shard_size 1, and accelerate's mesh then has no "
            "dp_shard_cp dimension to shard over: KeyError at prepare: \"Invalid mesh_dim_names {} "
            "specified. Valid mesh_dim_names are [{}].\"",
            replicate ? fmt::format("dp_replicate_size {}", s.dp_replicate.value) : fmt::format("tp_size {}", tp),
            s.world_size.value, requested, valid),
        replicate ? "FSDP2 cannot replicate without sharding through accelerate: keep dp_shard_size at least 2 "
                    "(fewer replicas), or use plain DDP (distributed_type: MULTI_GPU) for pure replication"
                  : fmt::format("use more processes than tp_size ({}), so that dp_shard_size is at least 2, or "
                                "tensor parallelism without FSDP",
                                tp)));
  }

  void fsdp1_mesh() {
    // torch FSDP1 _init_utils.py _init_process_group_state (2.0 to 2.14.1): a hybrid strategy with no
    // auto-wrap policy, process group or device mesh is "manual wrapping", refused at FSDP(...);
    // accelerate's FSDP1 path passes neither a group nor a mesh (fuzz seed 1, torch 2.14.1). The lint
    // rule hybrid-shard-no-wrap says the same of a config file.
    // The plan is still made: what the units would be with a policy that wraps nothing.
    if (is_hybrid(s.sharding_strategy.value) && s.policy.value == WrapPolicyKind::none)
      sink.report(setting_finding(
          "PLAN036", s.sharding_strategy.source, fallback_file,
          fmt::format("ValueError: Manual wrapping with ShardingStrategy.{} requires explicit specification of "
                      "process group or device_mesh. (no auto-wrap policy)",
                      strategy_name(s.sharding_strategy.value)),
          "give an auto-wrap policy (TRANSFORMER_BASED_WRAP or SIZE_BASED_WRAP), or FULL_SHARD"));
    for (const Setting<int>* size : {&s.cp_size, &s.tp_size, &s.sp_size, &s.dp_replicate}) {
      // A shell's PARALLELISM_CONFIG_* alone builds no ParallelismConfig (accelerate reads them only under
      // ACCELERATE_USE_PARALLELISM_CONFIG, which launch sets for a file that has one).
      if (size->value <= 1 || size->source.starts_with("env ")) continue;
      const bool cp = size == &s.cp_size;
      report("SET008", *size,
             cp ? std::string("ValueError: Using `cp_size>1` requires FSDP2, but the provided `fsdp_plugin` is using "
                              "FSDP1.")
                : fmt::format("ValueError: ParallelismConfig is only compatible DistributedType.FSDP (version 2) or "
                              "DistributedType.Multi{{Device}}{}, but got DistributedType.FSDP. (a mesh size of {} "
                              "under FSDP1)",
                              s.accelerate_version.value >= Version{1, 12, 0} ? " or DistributedType.DEEPSPEED" : "",
                              size->value),
             "use FSDP2 (fsdp_version 2) for N-D parallelism, or drop the parallelism sizes");
      return;
    }
  }

  void mesh() {
    // Expert parallelism shares the experts out over the TP ranks (transformers' EP plan replaces the
    // TP plan): without FSDP2 and a tp dimension there is nothing it could apply to.
    if (s.expert_parallel.value && (s.fsdp_version.value != 2 || s.tp_size.value <= 1))
      report("SET006", s.expert_parallel,
             fmt::format("expected FSDP2 with tp_size above 1 for expert parallelism, found fsdp_version {} and "
                         "tp_size {}",
                         s.fsdp_version.value, s.tp_size.value),
             "expert parallelism splits the experts over the tensor-parallel ranks: give --fsdp-version 2 and "
             "--tp-size (parallelism_config_tp_size), or drop --expert-parallel");
    if (s.fsdp_version.value != 2) {
      fsdp1_mesh();
      return;
    }
    Setting<int>& r = s.dp_replicate;
    if (r.value < 1 || r.value > kMaxRanks) {
      report("SET001", r, fmt::format("expected dp_replicate_size of at least 1, found {}", r.value),
             "dp_replicate_size is the number of HSDP replicas of the shard group");
      return;
    }
    // ParallelismConfig.__post_init__ (accelerate 1.13.0+): CP and SP split the same dimension.
    if (s.cp_size.value > 1 && s.sp_size.value > 1 && s.accelerate_version.value >= Version{1, 13, 0}) {
      report("SET007", s.sp_size,
             fmt::format("ValueError: Context Parallelism (CP) and Sequence Parallelism (SP) are mutually exclusive. "
                         "Got cp_size={} and sp_size={}. Please set either cp_size=1 or sp_size=1.",
                         s.cp_size.value, s.sp_size.value),
             "under FSDP2 use cp_size (context parallelism) alone");
      return;
    }
    if (s.sp_size.value > 1 && !s.mesh_dropped_for_sp())
      // accelerate 1.12.x: sp is a mesh dim FSDP does not shard over, and nothing splits the sequence.
      sink.report(setting_finding(
          "PLAN025", s.sp_size.source, fallback_file,
          fmt::format(
              "sp_size {} is DeepSpeed's sequence parallelism, which FSDP never sets up: accelerate {} keeps sp "
              "as a mesh dimension outside FSDP's, so its {} ranks hold and compute the same thing",
              s.sp_size.value, s.accelerate_version.value.str(), s.sp_size.value),
          "use cp_size for context parallelism under FSDP2, or DeepSpeed for sequence parallelism"));
    if (s.mesh_dropped_for_sp()) {
      // DeepSpeed's sequence parallelism: no mesh, no num_processes check (_validate_accelerator skips it).
      sink.report(setting_finding(
          "PLAN025", s.sp_size.source, fallback_file,
          fmt::format("sp_size {} is DeepSpeed's sequence parallelism, which FSDP never sets up: accelerate builds no "
                      "device mesh for it, so FSDP2 shards over all {} processes, every rank runs the whole sequence{}",
                      s.sp_size.value, s.world_size.value,
                      s.tp_size.value > 1 || s.cp_size.value > 1 || s.dp_replicate.value > 1
                          ? ", and the mesh's dp_replicate, cp and tp groups do not exist"
                          : ""),
          "use cp_size for context parallelism under FSDP2, or DeepSpeed for sequence parallelism"));
      return;
    }
    // parallelism_config.py _validate_accelerator: the mesh must cover every process.
    const int tp = std::max(1, s.tp_size.value);
    const int others = r.value * tp * std::max(1, s.cp_size.value) * std::max(1, s.sp_size.value);
    if (s.world_size.value % others != 0)
      report("SET003", r,
             fmt::format("the device mesh dp_replicate {} x tp {} (x cp {}, sp {}) does not divide num_processes {}",
                         r.value, tp, s.cp_size.value, s.sp_size.value, s.world_size.value),
             "accelerate requires dp_replicate_size x dp_shard_size x tp_size (x cp, sp) = num_processes");
    else if ((tp > 1 || s.cp_size.value > 1) && r.value > 1 && s.dp_shard() == 1)
      // ParallelismConfig.__post_init__ (accelerate parallelism_config.py, 1.10+) refuses TP or CP over
      // plain replicas before any mesh exists (the lint rule parallelism-tp-with-pure-dp says the same
      // of the file).
      sink.report(setting_finding(
          "PLAN023", s.tp_size.value > 1 ? s.tp_size.source : s.cp_size.source, fallback_file,
          fmt::format("ValueError: Tensor/Context parallelism (tp/cp_size > 1) cannot be used with pure data "
                      "parallelism (dp_replicate_size > 1 and dp_shard_size == 1): {} processes leave dp_shard_size "
                      "1 beside dp_replicate_size {}",
                      s.world_size.value, r.value),
          "give dp_shard_size at least 2 (HSDP + TP/CP), or move the replicas to dp_shard_size"));
    else if (s.shard_group_size() == 1 && s.world_size.value > 1)
      report_no_shard_dimension(tp);
  }
};

}  // namespace

bool validate_settings(FsdpSettings& s, const std::string& fallback_file, DiagnosticSink& sink) {
  FsdpSettings copy = s;
  Validator v{copy, fallback_file, sink};
  v.processes();
  if (v.runnable) v.wrap_policy();
  if (v.runnable) v.mesh();
  if (v.runnable) s = std::move(copy);
  return v.runnable;
}

}  // namespace shardcheck
