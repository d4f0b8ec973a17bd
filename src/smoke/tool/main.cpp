// shardcheck-smoke: `shardcheck smoke` runs this binary (src/cli/cmd_smoke.cpp). One process is one
// rank when RANK/WORLD_SIZE are set (torchrun, accelerate launch, srun); with --nproc N it is the
// launcher of N local ranks. Torch-free except for the connect_c10d() it calls.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <memory>

#include "cli/plan_flags.hpp"
#include "shardcheck/exit_codes.hpp"
#include "shardcheck/expr.hpp"
#include "shardcheck/peft_model.hpp"
#include "shardcheck/registry.hpp"
#include "shardcheck/report.hpp"
#include "shardcheck/tensor_parallel.hpp"
#include "shardcheck/rules_dir.hpp"
#include "smoke/launcher.hpp"
#include "smoke/plan_reader.hpp"
#include "smoke/report.hpp"
#include "smoke/runner.hpp"

namespace shardcheck::smoke {
namespace {

struct SmokeFlags {
  cli::PlanFlags plan;
  std::string plan_file;
  std::optional<int> nproc;
  std::optional<int> units;
  int sample = 2;
  bool weights = false;
  std::string min_bytes = "32M", max_bytes = "32M";  // nccl-tests defaults
  int factor = 2;
  bool no_sweep = false, no_unit_timing = false;
  int iters = 20, warmup = 5;
  std::optional<double> expect_busbw;
  double timeout = 60;
  std::string backend = "auto";
  int test_shift_rank = -1, test_absent_rank = -1, test_die_rank = -1;
};

struct Planned {
  ShardPlan plan;  // this rank's: with tensor parallelism, the plan of its TP rank's pieces
  std::string strategy;
  int tp = 1;                                  // tensor-parallel ranks, innermost on the mesh
  std::vector<std::int64_t> tp0_bytes;         // TP rank 0's padded unit bytes: every TP rank selects the same units
  std::map<std::string, TpPiece> tp_pieces;    // this rank's piece of every parameter TP cuts
  std::map<std::string, std::string> aliases;  // tied parameter -> stored tensor
  std::string base_prefix;                     // the base model's attribute ("model", "transformer")
  std::vector<std::pair<std::string, std::string>> renames;  // checkpoint renames in force (disk, model)
  std::map<std::string, std::vector<std::string>> fused;     // fused parameter -> its checkpoint globs
  std::string checkpoint_dir;                                // the base model's directory ("" : MODEL)
  // A PeftModel: its adapter_config.json ("" when the LoRA settings came from flags), whether any
  // weight is 4-bit, and the ModulesToSaveWrapper paths (where saved keys of modules_to_save go).
  bool peft = false, quantized = false;
  std::string adapter_config;
  std::set<std::string> saved_modules;
};

// The registry's checkpoint renames that hold for the planned transformers version (the same
// data src/resolve/checkpoint_match.cpp applies when it matches the checkpoint to the tree).
std::vector<std::pair<std::string, std::string>> checkpoint_renames(const std::string& rules_dir,
                                                                    const ModuleTree& tree) {
  std::vector<std::pair<std::string, std::string>> out;
  DiagnosticSink sink;
  auto reg = Registry::load(rules_dir, sink, {tree.model_type});
  const ArchSpec* arch = reg ? reg->find(tree.model_type) : nullptr;
  if (!arch) return out;
  const Value transformers(tree.transformers);
  const Lookup lookup = [&](std::string_view name) -> const Value* {
    return name == "transformers" ? &transformers : nullptr;
  };
  for (const auto& r : arch->renames) {
    try {
      if (!r.condition || r.condition->evaluate(lookup).truthy()) out.emplace_back(r.from, r.to);
    } catch (const ExprError&) {
      // A condition over config fields: the rename is not needed to find this version's names.
    }
  }
  return out;
}

// With tensor parallelism each TP rank loads other pieces (transformers' ceil split): this rank verifies its
// own TP rank's units, which the planner laid out for every TP rank (ShardPlan::tp_unit_sets), and every TP
// rank selects units by TP rank 0's sizes.
void take_tp_rank(Planned& out, int rank) {
  const TensorParallelLayout& layout = *out.plan.tensor_parallel;
  out.tp = layout.tp_size;
  const int t = rank % out.tp;
  const auto set_of = [&](int tp_rank) -> const std::vector<ShardUnit>& {
    return out.plan.tp_unit_sets.at(
        static_cast<std::size_t>(out.plan.tp_unit_set.at(static_cast<std::size_t>(tp_rank))));
  };
  for (const auto& u : set_of(0)) out.tp0_bytes.push_back(u.padded_numel * element_bytes(u.dtype));
  out.plan.units = set_of(t);
  out.plan.tp_rank = t;
  out.tp_pieces = tp_pieces(layout, t);  // --weights: where this rank's pieces lie
}

// Where --weights finds each planned parameter in the checkpoint: tied aliases, the base model's
// attribute, the registry's renames and fused experts, and for a PeftModel the names its frozen parameters
// had before peft renamed them (".base_layer", "original_module", "base_model.model.").
void take_checkpoint_facts(Planned& out, const ModuleTree& tree, const std::string& rules_dir) {
  if (tree.peft) {
    const PeftSummary& peft = *tree.peft;
    out.peft = true;
    out.quantized = tree.quantized_4bit();
    if (peft.adapter.ends_with("adapter_config.json")) out.adapter_config = peft.adapter;
    out.checkpoint_dir = std::filesystem::path(tree.config_path).parent_path().string();
    const auto base_names = peft_base_names(tree);
    for (const auto& [now, before] : base_names) out.aliases[now] = before;
    for (const auto& t : tree.tied) {
      const auto stored = base_names.find(t.target);
      out.aliases[t.alias] = stored == base_names.end() ? t.target : stored->second;
    }
    for (const Module& m : tree.modules)
      if (m.cls == "ModulesToSaveWrapper") out.saved_modules.insert(m.path);
    out.base_prefix = peft.base_model_path;
  } else {
    for (const auto& t : tree.tied) out.aliases[t.alias] = t.target;
    out.base_prefix = tree.base_model_path;
  }
  out.renames = checkpoint_renames(rules_dir, tree);
  for (const Module& m : tree.modules)
    for (const ParamInfo& p : m.params)
      if (!p.fused_from.empty()) out.fused[qualified_name(m.path, p.name)] = p.fused_from;
}

// The plan this rank verifies: from --plan, or computed exactly as `shardcheck plan` would.
Planned make_plan(SmokeFlags& f, const cli::CliContext& ctx, int world, int rank) {
  Planned out;
  if (!f.plan_file.empty()) {
    std::string error;
    auto read = read_plan_json(f.plan_file, error);
    if (!read) throw SmokeFault(ExitCode::usage, error);
    if (read->tensor_parallel && read->plan.tp_unit_sets.empty())
      throw SmokeFault(ExitCode::usage,
                       fmt::format("{} is a tensor-parallel plan written before plans recorded every TP rank's units: "
                                   "make it again with `shardcheck plan --format json`, or give the model instead of "
                                   "--plan",
                                   f.plan_file));
    if (read->plan.world_size != world)
      throw SmokeFault(ExitCode::smoke_world_mismatch,
                       fmt::format("{} is a plan for world size {}, this job has WORLD_SIZE={}", f.plan_file,
                                   read->plan.world_size, world));
    out.plan = std::move(read->plan);
    out.strategy = read->strategy;
    if (read->tensor_parallel) take_tp_rank(out, rank);
    if (f.weights && !f.plan.model.empty()) {
      // The checkpoint's names for the plan's parameters: from the model's tree, as `plan` resolved it.
      auto req = cli::make_request(f.plan, ctx, error);
      if (!req) throw SmokeFault(ExitCode::usage, error);
      const PreflightResult r = run_preflight(*req);
      if (!r.tree) {
        std::fputs(render_diagnostics_text(r.sink.items()).c_str(), stderr);
        throw SmokeFault(r.sink.first_error_exit_code(), "--weights: the model cannot be resolved (above)");
      }
      take_checkpoint_facts(out, *r.tree, ctx.rules_dir);
    }
    return out;
  }
  if (f.plan.world_size && *f.plan.world_size != world)
    throw SmokeFault(ExitCode::smoke_world_mismatch,
                     fmt::format("--world-size {} disagrees with the job's {} ranks", *f.plan.world_size, world));
  f.plan.world_size = world;
  std::string error;
  auto req = cli::make_request(f.plan, ctx, error);
  if (!req) throw SmokeFault(ExitCode::usage, error);
  PreflightResult r = run_preflight(*req);
  const ExitCode code = r.sink.first_error_exit_code();
  if (!r.plan || code != ExitCode::ok) {
    std::fputs(render_diagnostics_text(r.sink.items()).c_str(), stderr);
    throw SmokeFault(code == ExitCode::ok ? ExitCode::findings : code,
                     "the plan has errors (above): nothing to verify");
  }
  out.plan = std::move(*r.plan);
  out.strategy = strategy_name(out.plan.strategy);
  if (out.plan.tensor_parallel) take_tp_rank(out, rank);
  if (r.tree) take_checkpoint_facts(out, *r.tree, ctx.rules_dir);
  return out;
}

// Ranks per shard group. NO_SHARD keeps whole parameters on every rank and all-reduces the
// gradients (fsdp-semantics.md §2.6): a "shard group" of one rank, the whole job its replicas.
// HYBRID_SHARD / _HYBRID_SHARD_ZERO2 shard within a node and FSDP2 HSDP over the mesh's shard
// dimension; the replicas all-reduce.
int shard_group_size(const Planned& p, int world) {
  const int s = p.strategy == "NO_SHARD" ? 1 : p.plan.shard_group;
  if (s < 1 || world % (s * p.tp) != 0)
    throw SmokeFault(ExitCode::usage,
                     fmt::format("the plan shards over groups of {} ranks ({}{}), which does not divide the job's {} "
                                 "ranks",
                                 s, p.strategy, p.tp > 1 ? fmt::format(", x {} TP ranks", p.tp) : "", world));
  return s;
}

std::vector<UnitLayout> layouts(const Planned& p, const SmokeFlags& f, int world) {
  const int shard = shard_group_size(p, world);
  // Units are selected by TP rank 0's sizes (with tensor parallelism), so that every rank runs the same
  // collectives; the TP ranks' plans have the same units, only their sizes may differ.
  std::vector<std::int64_t> bytes = p.tp0_bytes;
  if (bytes.empty())
    for (const auto& u : p.plan.units) bytes.push_back(u.padded_numel * element_bytes(u.dtype));
  if (bytes.size() != p.plan.units.size())
    throw SmokeFault(ExitCode::internal, fmt::format("planner: TP rank {} has {} units, TP rank 0 {}", p.plan.tp_rank,
                                                     p.plan.units.size(), bytes.size()));
  std::vector<UnitLayout> out;
  for (int i : select_units(bytes, f.units.value_or(-1), f.units ? f.sample : 0)) {
    const auto& u = p.plan.units[i];
    if (element_bytes(u.dtype) == 0) continue;  // packed sub-byte kinds are never a flat parameter
    std::string error;
    UnitLayout l = unit_layout(u, i, p.plan.fsdp_version, shard, error);
    l.replicas = world / (shard * p.tp);
    l.tp_rank = p.plan.tp_rank;
    if (!error.empty())  // a hand-edited --plan file; from the planner it would be a bug
      throw SmokeFault(f.plan_file.empty() ? ExitCode::internal : ExitCode::usage,
                       fmt::format("{}: inconsistent plan: {}", f.plan_file.empty() ? "planner" : f.plan_file, error));
    out.push_back(std::move(l));
  }
  return out;
}

int run_as_rank(SmokeFlags& f, const cli::CliContext& ctx, const LaunchEnv& env) {
  const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(f.timeout * 1000));
  Planned planned = make_plan(f, ctx, env.world, env.rank);
  std::vector<UnitLayout> units = layouts(planned, f, env.world);

  RunOptions opt;
  opt.units = std::move(units);
  opt.shift_rank = f.test_shift_rank;
  opt.iters = f.iters;
  opt.warmup = f.warmup;
  // TP ranks may hold units of other sizes: the timing rows are summed over all ranks, so with
  // tensor parallelism only the sweep (the same sizes everywhere) is timed.
  opt.time_units = !f.no_unit_timing && planned.tp == 1;
  if (!f.no_sweep) {
    auto lo = parse_nccl_size(f.min_bytes), hi = parse_nccl_size(f.max_bytes);
    if (!lo || !hi)
      throw SmokeFault(
          ExitCode::usage,
          fmt::format("expected sizes like 1K, 32M or 4096 for -b/-e, found '{}' and '{}'", f.min_bytes, f.max_bytes));
    std::string error;
    opt.sweep = sweep_sizes(*lo, *hi, f.factor, error);
    if (!error.empty()) throw SmokeFault(ExitCode::usage, error);
  }
  std::unique_ptr<WeightReader> reader;
  if (f.weights) {
    if (!f.plan_file.empty() && f.plan.model.empty())
      throw SmokeFault(ExitCode::usage, "--weights reads the checkpoint: give the model directory too");
    if (planned.quantized)
      throw SmokeFault(ExitCode::smoke_weights,
                       "--weights: bitsandbytes makes the 4-bit bytes when the model is loaded; the checkpoint does "
                       "not hold them (drop --weights, or the 4-bit load)");
    if (planned.peft && planned.adapter_config.empty())
      throw SmokeFault(ExitCode::smoke_weights,
                       "--weights: the LoRA settings come from flags, so no adapter weights are saved to compare "
                       "with; give the saved adapter (--adapter DIR) or drop --weights");
    const std::string dir = planned.checkpoint_dir.empty() ? f.plan.model : planned.checkpoint_dir;
    DiagnosticSink sink;
    auto meta = load_checkpoint(dir, sink);
    if (!meta) throw SmokeFault(ExitCode::smoke_weights, fmt::format("--weights: no safetensors files in {}", dir));
    std::optional<CheckpointMeta> adapter;
    std::map<std::string, std::string> adapter_keys;
    if (planned.peft) {
      const auto adapter_dir = std::filesystem::path(planned.adapter_config).parent_path();
      adapter = load_checkpoint(adapter_dir, sink);
      if (!adapter)
        throw SmokeFault(ExitCode::smoke_weights,
                         fmt::format("--weights: the adapter at {} has no adapter_model.safetensors to compare with",
                                     adapter_dir.string()));
      for (const auto& file : adapter->files)
        for (const auto& t : file.tensors) {
          const std::string key(t.name);
          adapter_keys[parameter_of_saved_key(key, "default", planned.saved_modules)] = key;
        }
    }
    if (sink.first_error_exit_code() != ExitCode::ok) {
      std::fputs(render_diagnostics_text(sink.items()).c_str(), stderr);
      throw SmokeFault(sink.first_error_exit_code(), "--weights: the checkpoint is broken (above)");
    }
    reader = std::make_unique<WeightReader>(std::move(*meta), planned.aliases, planned.base_prefix, planned.renames,
                                            planned.fused);
    if (adapter) reader->add_adapter(std::move(*adapter), std::move(adapter_keys));
    reader->set_tp_pieces(planned.tp_pieces);
    opt.weights = reader.get();
  }

  RendezvousSpec spec;
  spec.rank = env.rank;
  spec.world = env.world;
  spec.local_rank = env.local_rank;
  spec.master_addr = env.master_addr;
  spec.master_port = env.master_port;
  spec.shard_size = shard_group_size(planned, env.world);
  spec.tp = planned.tp;
  spec.timeout = timeout;
  spec.cuda = f.backend == "nccl" || (f.backend == "auto" && c10d_has_nccl());
  auto comm = connect_c10d(spec);
  comm->set_phase("joined");
  if (env.rank == f.test_die_rank) ::raise(SIGKILL);  // test only: a rank that dies after joining

  RunResult result = run_rank(*comm, opt);
  RunHeader h;
  h.world = env.world;
  h.shard_size = comm->shard_size();
  h.replicas = comm->replicas();
  h.tp = comm->tp_size();
  h.backend = comm->backend();
  h.device = comm->device();
  h.torch_version = c10d_torch_version();
  h.model = f.plan_file.empty() ? f.plan.model : f.plan_file;
  h.fsdp_version = planned.plan.fsdp_version;
  h.strategy = planned.strategy;
  h.plan_units = static_cast<int>(planned.plan.units.size());
  h.weights = f.weights;
  h.shifted = f.test_shift_rank >= 0;
  h.expect_busbw = f.expect_busbw;
  const Verdict v = judge(h, result);
  if (env.rank == 0) {
    const std::string text =
        f.plan.format == "json" ? render_smoke_json(h, result, v) : render_smoke_text(h, result, v);
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
  }
  return v.exit_code;
}

int run_launcher(SmokeFlags& f, const cli::CliContext& ctx, char** argv, int argc) {
  const int n = *f.nproc;
  // Fail fast, before starting anyone, on a plan that cannot be verified.
  Planned planned = make_plan(f, ctx, n, 0);
  (void)layouts(planned, f, n);
  SuperviseOptions opt;
  opt.nproc = n;
  opt.argv.assign(argv, argv + argc);
  opt.argv[0] = "/proc/self/exe";
  char self[4096] = {};
  if (const ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1); len > 0) opt.argv[0] = self;
  opt.port = pick_free_port();
  opt.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(f.timeout * 1000));
  opt.absent_rank = f.test_absent_rank;
  SuperviseResult r = supervise(opt);
  if (!r.message.empty()) std::fprintf(stderr, "shardcheck smoke: %s\n", r.message.c_str());
  if (!r.rank0_reported && f.plan.format == "json")
    std::fputs(render_smoke_error_json(r.exit_code, r.message).c_str(), stdout);
  return r.exit_code;
}

}  // namespace
}  // namespace shardcheck::smoke

int main(int argc, char** argv) {
  using namespace shardcheck;
  using namespace shardcheck::smoke;
  // A peer that died leaves half-open sockets: writing to one must fail with EPIPE (gloo then throws
  // and the rank reports who is gone), not kill this rank with SIGPIPE. Python, and so every
  // torch.distributed job, starts with SIGPIPE ignored; so do we.
  ::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"shardcheck smoke: verify the shard plan with real all-gather / reduce-scatter (LibTorch c10d)"};
  app.name("shardcheck smoke");
  cli::CliContext ctx;
  ctx.rules_dir = default_rules_dir();
  app.add_option("--rules", ctx.rules_dir, "Directory of rule data (models/, accelerate/)")
      ->check(CLI::ExistingDirectory);
  SmokeFlags f;
  app.add_option("model", f.plan.model, "Model directory or its config.json");
  app.add_option("--format", f.plan.format, "Output format")->check(CLI::IsMember({"text", "json"}));
  cli::add_plan_flags(&app, f.plan);
  app.add_option("--plan", f.plan_file, "Verify this plan (shardcheck plan --format json) instead of planning");
  app.add_option("--nproc", f.nproc, "Start N local ranks (otherwise RANK/WORLD_SIZE/MASTER_* from the launcher)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--units", f.units, "Only the K largest units plus a --sample of the others")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--sample", f.sample, "With --units: this many other units, evenly spread (default 2)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_flag("--weights", f.weights, "Shards hold the checkpoint's real bytes; the gather must equal the files");
  app.add_option("-b,--minbytes", f.min_bytes, "Sweep start size (nccl-tests -b; K/M/G suffixes), default 32M");
  app.add_option("-e,--maxbytes", f.max_bytes, "Sweep end size (nccl-tests -e), default 32M");
  app.add_option("-f,--stepfactor", f.factor, "Sweep multiplication factor (nccl-tests -f), default 2")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("-n,--iters", f.iters, "Timed iterations per size (nccl-tests -n), default 20")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("-w,--warmup-iters", f.warmup, "Untimed iterations first (nccl-tests -w), default 5")
      ->check(CLI::Range(0, 1 << 20));
  app.add_flag("--no-sweep", f.no_sweep, "Skip the message-size sweep");
  app.add_flag("--no-unit-timing", f.no_unit_timing, "Do not time the plan's unit sizes");
  app.add_option("--expect-busbw", f.expect_busbw, "Fail (exit 26) when the average busbw is below 0.9 x this GB/s")
      ->check(CLI::PositiveNumber);
  app.add_option("--timeout", f.timeout, "Seconds to wait for ranks to join and for each collective (default 60)")
      ->check(CLI::Range(0.1, 86400.0));
  app.add_option("--backend", f.backend, "auto (nccl when built with CUDA, else gloo), gloo or nccl")
      ->check(CLI::IsMember({"auto", "gloo", "nccl"}));
  // Test-only fault injection (CI proves each failure is caught); hidden from --help.
  app.add_option("--test-shift-shard", f.test_shift_rank, "")->group("");
  app.add_option("--test-absent-rank", f.test_absent_rank, "")->group("");
  app.add_option("--test-die-rank", f.test_die_rank, "")->group("");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : to_int(ExitCode::usage);
  }
  const bool child = std::getenv("SHARDCHECK_SMOKE_CHILD") != nullptr;
  std::optional<LaunchEnv> env;
  try {
    if (f.plan.model.empty() && f.plan_file.empty())
      throw SmokeFault(ExitCode::usage, "expected a model directory or --plan plan.json");
    if (f.backend == "nccl" && !c10d_has_nccl())
      throw SmokeFault(ExitCode::usage, "--backend nccl: this shardcheck-smoke was built with a CPU-only LibTorch");
    if (f.nproc && !child) return run_launcher(f, ctx, argv, argc);
    env = read_launch_env([](const char* name) { return std::getenv(name); });
    if (!env)
      throw SmokeFault(ExitCode::smoke_launch,
                       "not started as a rank (RANK and WORLD_SIZE are unset): run under torchrun / accelerate "
                       "launch / srun, or give --nproc N");
    return run_as_rank(f, ctx, *env);
  } catch (const SmokeFault& e) {
    const std::string who = env && env->world > 1 ? fmt::format("[rank {}] ", env->rank) : "";
    std::fprintf(stderr, "shardcheck smoke: %s%s\n", who.c_str(), e.what());
    if (f.plan.format == "json" && (!env || env->rank == 0))
      std::fputs(render_smoke_error_json(to_int(e.code), e.what()).c_str(), stdout);
    return to_int(e.code);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardcheck smoke: internal error: %s\n", e.what());
    return to_int(ExitCode::internal);
  }
}
