// `shardcheck plan MODEL [flags]`: what FSDP will do with this model — units, per-rank shards.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "shardcheck/model_source.hpp"
#include "shardcheck/module_tree.hpp"
#include "shardcheck/registry.hpp"
#include "shardcheck/report.hpp"
#include "shardcheck/shard_plan.hpp"

namespace shardcheck::cli {
namespace {

struct PlanArgs {
  std::string model, format = "text";
  std::string transformers_version, torch_version, accelerate_version;
  std::optional<int> world_size, num_machines, fsdp_version;
  std::string strategy, policy, wrap_cls, frozen, mixed_precision;
  std::optional<std::int64_t> min_num_params;
  std::optional<bool> use_orig_params, reshard_after_forward;
  bool config_only = false;
  std::string gpu_memory = "80GiB";
};

// "80GiB", "80GB", "81920MiB", "85899345920" -> bytes.
std::optional<std::uint64_t> parse_size(const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (...) {
    return std::nullopt;
  }
  std::string unit = text.substr(used);
  const std::pair<const char*, double> units[] = {{"", 1},        {"B", 1},      {"KiB", 1024.0}, {"MiB", 1048576.0},
                                                  {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}, {"KB", 1e3},
                                                  {"MB", 1e6},    {"GB", 1e9},   {"TB", 1e12}};
  for (auto [name, factor] : units)
    if (unit == name && v >= 0) return static_cast<std::uint64_t>(v * factor);
  return std::nullopt;
}

template <class T, class V>
void from_cli(Setting<T>& s, const std::optional<V>& v, const char* flag) {
  if (!v) return;
  s.value = *v;
  s.source = flag;
}

std::vector<std::string> split_classes(const std::string& list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

int usage(const std::string& msg) {
  std::fprintf(stderr, "shardcheck plan: %s\n", msg.c_str());
  return to_int(ExitCode::usage);
}

int run_plan(const PlanArgs& a, const CliContext& ctx) {
  FsdpSettings s;
  from_cli(s.world_size, a.world_size, "--world-size");
  from_cli(s.num_machines, a.num_machines, "--num-machines");
  from_cli(s.fsdp_version, a.fsdp_version, "--fsdp-version");
  from_cli(s.min_num_params, a.min_num_params, "--min-num-params");
  from_cli(s.use_orig_params, a.use_orig_params, "--use-orig-params");
  if (a.reshard_after_forward) {
    s.reshard_after_forward.value = *a.reshard_after_forward;
    s.reshard_after_forward.source = "--reshard-after-forward";
  }
  if (!a.strategy.empty()) {
    auto st = parse_strategy(a.strategy);
    if (!st) return usage(fmt::format("expected FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD or "
                                      "_HYBRID_SHARD_ZERO2 (or 1-5) for --sharding-strategy, found '{}'", a.strategy));
    s.sharding_strategy = {*st, "--sharding-strategy"};
  }
  if (!a.policy.empty())
    s.policy = {a.policy == "transformer" ? WrapPolicyKind::transformer
                : a.policy == "size"      ? WrapPolicyKind::size
                                          : WrapPolicyKind::none,
                "--policy"};
  if (!a.wrap_cls.empty()) s.wrap_classes = {split_classes(a.wrap_cls), "--wrap-cls"};
  if (!a.frozen.empty()) s.frozen = {a.frozen, "--frozen"};
  if (!a.mixed_precision.empty()) s.mixed_precision = {a.mixed_precision, "--mixed-precision"};
  for (auto [text, setting, flag] : {std::tuple{&a.torch_version, &s.torch_version, "--torch-version"},
                                     std::tuple{&a.accelerate_version, &s.accelerate_version, "--accelerate-version"}}) {
    if (text->empty()) continue;
    auto v = Version::parse(*text);
    if (!v) return usage(fmt::format("expected a version like 2.4.1 for {}, found '{}'", flag, *text));
    *setting = {*v, flag};
  }
  const auto gpu = parse_size(a.gpu_memory);
  if (!gpu) return usage(fmt::format("expected a size like 80GiB for --gpu-memory, found '{}'", a.gpu_memory));
  if (s.world_size.value < 1) return usage("--world-size must be at least 1");
  if (s.num_machines.value < 1 || s.world_size.value % s.num_machines.value != 0)
    return usage(fmt::format("--world-size {} is not divisible by --num-machines {}", s.world_size.value,
                             s.num_machines.value));

  ResolveOptions opts;
  if (!a.transformers_version.empty()) {
    auto v = Version::parse(a.transformers_version);
    if (!v) return usage(fmt::format("expected a version for --transformers-version, found '{}'", a.transformers_version));
    opts.transformers = *v;
  }

  DiagnosticSink sink;
  std::optional<ModuleTree> tree;
  if (auto inputs = load_model(a.model, a.config_only, sink); inputs && !sink.has_errors())
    if (auto registry = Registry::load_for(ctx.rules_dir, inputs->config, sink))
      tree = build_module_tree(inputs->config, inputs->checkpoint ? &*inputs->checkpoint : nullptr, *registry, opts,
                               sink);
  if (!tree) {
    std::fputs(render_diagnostics_text(sink.items()).c_str(), stderr);
    return to_int(sink.first_error_exit_code());
  }
  if (s.policy.value == WrapPolicyKind::transformer && s.wrap_classes.value.empty())
    s.wrap_classes = {tree->no_split_modules, "model _no_split_modules"};

  const ShardPlan plan = s.fsdp_version.value == 2 ? plan_fsdp2(*tree, s, sink) : plan_fsdp1(*tree, s, sink);
  MemoryOptions mopts;
  mopts.gpu_memory = *gpu;
  const MemoryEstimate mem = estimate_memory(plan, *tree, s, mopts);
  const CommVolume comm = communication(plan, s);
  if (a.format == "json") {
    std::fputs(render_plan_json(plan, s, mem, comm, sink.items()).c_str(), stdout);
  } else {
    std::fputs(render_plan_text(plan, s, mem, comm, TextStyle{ctx.color}).c_str(), stdout);
    std::fputs(render_diagnostics_text(sink.items()).c_str(), stderr);
  }
  return to_int(sink.first_error_exit_code());
}

}  // namespace

void register_plan(CLI::App& app, CliContext& ctx) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand("plan", "Simulate FSDP auto-wrap and sharding: units and per-rank shards");
  cmd->add_option("model", a->model, "Model directory or its config.json")->required();
  cmd->add_option("--format", a->format, "Output format")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--world-size", a->world_size, "Total number of ranks");
  cmd->add_option("--num-machines", a->num_machines, "Nodes (hybrid strategies shard within a node)");
  cmd->add_option("--fsdp-version", a->fsdp_version, "1 or 2")->check(CLI::IsMember({1, 2}));
  cmd->add_option("--sharding-strategy", a->strategy, "FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, ...");
  cmd->add_option("--policy", a->policy, "Auto-wrap policy")->check(CLI::IsMember({"transformer", "size", "none"}));
  cmd->add_option("--wrap-cls", a->wrap_cls, "Comma-separated layer classes to wrap (default: _no_split_modules)");
  cmd->add_option("--min-num-params", a->min_num_params, "Size policy threshold");
  cmd->add_option("--use-orig-params", a->use_orig_params, "true/false");
  cmd->add_option("--mixed-precision", a->mixed_precision, "no, bf16 or fp16")
      ->check(CLI::IsMember({"no", "bf16", "fp16"}));
  cmd->add_option("--reshard-after-forward", a->reshard_after_forward, "FSDP2: true/false");
  cmd->add_option("--frozen", a->frozen, "Regex of parameter names that do not require grad");
  cmd->add_option("--torch-version", a->torch_version, "FSDP semantics of this torch release (default 2.9)");
  cmd->add_option("--accelerate-version", a->accelerate_version, "accelerate release (default 1.14)");
  cmd->add_option("--transformers-version", a->transformers_version, "Module layout of this transformers release");
  cmd->add_flag("--config-only", a->config_only, "Ignore safetensors files");
  cmd->add_option("--gpu-memory", a->gpu_memory, "Memory of one GPU (default 80GiB)");
  cmd->callback([a, &ctx] { ctx.exit_code = run_plan(*a, ctx); });
}

}  // namespace shardcheck::cli
