#include "cli/plan_flags.hpp"
#include "cli/choices.hpp"

#include "shardcheck/training_args.hpp"

#include <fmt/format.h>

#include <tuple>

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <map>
#include <fstream>
#include <functional>

#include "shardcheck/environment.hpp"
#include "shardcheck/optimizers.hpp"
#include "shardcheck/text.hpp"
#include "util/bounded_read.hpp"

namespace shardcheck::cli {
namespace {

template <class T, class V>
void from_cli(Setting<T>& s, const std::optional<V>& v, const char* flag) {
  if (!v) return;
  s.value = *v;
  s.source = flag;
}

// "80GiB", "80GB", "81920MiB", "85899345920" -> bytes.
std::optional<std::uint64_t> parse_size(const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (...) {
    return std::nullopt;
  }
  const std::string unit = text.substr(used);
  const std::pair<const char*, double> units[] = {
      {"", 1},     {"B", 1},    {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
      {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},     {"TB", 1e12}};
  for (auto [name, factor] : units)
    // 1.8e19 is just under 2^64: larger values (and NaN) would overflow the conversion.
    if (unit == name && v >= 0 && v * factor < 1.8e19) return static_cast<std::uint64_t>(v * factor);
  return std::nullopt;
}

// rules/gpus.yaml: preset name -> bytes (GiB with two decimals, as PyTorch prints them).
std::optional<std::map<std::string, std::uint64_t>> load_gpu_presets(const std::string& rules_dir, std::string& error) {
  const std::string path = rules_dir + "/gpus.yaml";
  try {
    const YAML::Node root = YAML::LoadFile(path);
    std::map<std::string, std::uint64_t> out;
    for (const auto& entry : root["gpus"]) {
      const double gib = std::stod(entry.second["gib"].as<std::string>());
      out.emplace(entry.first.as<std::string>(), static_cast<std::uint64_t>(gib * 1073741824.0));
    }
    return out;
  } catch (const std::exception& e) {
    error = fmt::format("{}: cannot read the GPU presets: {}", path, e.what());
    return std::nullopt;
  }
}

// The step's recipe: the loop, the optimizer, gradient accumulation and the loss, from the flags over
// the training arguments. A Trainer / TRL recipe means the Trainer's loop and its default optimizer
// (transformers 5.12.1 training_args.py: adamw_torch_fused with torch >= 2.8); a plain accelerate
// loop builds torch.optim.AdamW (foreach).
bool set_recipe(const PlanFlags& f, const std::optional<TrainingArgs>& args, const CliContext& ctx,
                PreflightRequest& req, std::string& error) {
  // TRL's trainers are transformers Trainers: --trainer means the Trainer's loop too.
  if (args || f.caller == "trainer" || !f.trainer.empty()) req.memory.loop = TrainingLoop::trainer;
  std::string optim = f.optim;
  if (optim.empty() && args && args->optim) optim = args->optim->value;
  if (optim.empty()) optim = req.memory.loop == TrainingLoop::trainer ? "adamw_torch_fused" : "adamw_torch";
  auto model = load_optimizer(ctx.rules_dir, optim, error);
  if (!model) return false;
  req.memory.optimizer = std::move(*model);
  if (f.gradient_accumulation)
    req.memory.gradient_accumulation = static_cast<int>(*f.gradient_accumulation);
  else if (args && args->gradient_accumulation)
    req.memory.gradient_accumulation =
        static_cast<int>(std::min<std::int64_t>(args->gradient_accumulation->value, 1 << 20));
  req.memory.fused_loss = f.liger || (args && args->liger && args->liger->value);
  // TRL's DPO: the reference is a second model unless the recipe precomputes its log-probs (a PEFT
  // model's reference is the policy with its adapter off, decided once the tree is built:
  // effective_reference in shardcheck/memory.hpp).
  if (f.trainer == "dpo")
    req.memory.reference = args && args->precompute_ref_log_probs && args->precompute_ref_log_probs->value
                               ? PreferenceReference::precomputed
                               : PreferenceReference::model;
  if (args && args->gradient_checkpointing)
    req.memory.recipe_checkpointing_source = args->gradient_checkpointing->source;
  return true;
}

// --torch-version and the other releases of the stack; false (with `error`) for one that does not parse.
bool read_version_flags(const PlanFlags& f, VersionRequest& versions, std::string& error) {
  for (auto [text, setting, flag] :
       {std::tuple{&f.torch_version, &versions.torch, "--torch-version"},
        std::tuple{&f.accelerate_version, &versions.accelerate, "--accelerate-version"},
        std::tuple{&f.transformers_version, &versions.transformers, "--transformers-version"},
        std::tuple{&f.peft_version, &versions.peft, "--peft-version"},
        std::tuple{&f.bitsandbytes_version, &versions.bitsandbytes, "--bitsandbytes-version"},
        std::tuple{&f.trl_version, &versions.trl, "--trl-version"}}) {
    if (text->empty()) continue;
    auto v = Version::parse(*text);
    if (!v) {
      error = fmt::format("expected a version like 2.4.1 for {}, found '{}'", flag, *text);
      return false;
    }
    *setting = Setting<Version>{*v, flag};
  }
  return true;
}

// The job's Python environment: named, or the one active in this shell.
void find_python_env(const PlanFlags& f, VersionRequest& versions) {
  if (!f.python_env.empty()) {
    versions.python_env = f.python_env;
    versions.python_env_source = "--python-env";
    return;
  }
  for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (const char* dir = std::getenv(var); dir && *dir) {
      versions.python_env = dir;
      versions.python_env_source = fmt::format("env {}", var);
      return;
    }
}

// The GPU nobody named: an H100 80GB, the GPU most FSDP fine-tunes run on, at the memory torch reports
// for it (rules/gpus.yaml), not the marketed 80 GB; every verdict then says it was assumed.
constexpr const char* kAssumedGpu = "h100-80gb";

// A GPU's memory in bytes into `opts`: a preset of rules/gpus.yaml (--gpu, or the assumed one) or a size
// with its unit (--gpu-memory). False with `error` for a bad value.
bool gpu_memory(const PlanFlags& f, const CliContext& ctx, MemoryOptions& opts, std::string& error) {
  if (!f.gpu.empty() && !f.gpu_memory.empty()) {
    error = "--gpu and --gpu-memory both give the GPU's memory: use one";
    return false;
  }
  if (f.gpu_memory.empty()) {
    const std::string name = f.gpu.empty() ? kAssumedGpu : f.gpu;
    const auto presets = load_gpu_presets(ctx.rules_dir, error);
    if (!presets) return false;
    const auto it = presets->find(name);
    if (it == presets->end()) {
      std::vector<std::string> names;
      std::string list;
      for (const auto& [preset, bytes] : *presets) {
        names.push_back(preset);
        list += (list.empty() ? "" : ", ") + preset;
      }
      error = fmt::format("expected one of {} for --gpu, found '{}'", list, f.gpu);
      // A suggestion keeps the GPU model (`h100` of h100-80gb): one letter off `b200` is another GPU,
      // not a typo of h200. A family name (`a100`, `H100`) gets the presets it starts.
      const auto model = [](std::string_view s) { return ascii_lower(std::string(s.substr(0, s.find('-')))); };
      std::vector<std::string> same_model;
      for (const auto& n : names)
        if (model(n) == model(f.gpu)) same_model.push_back(n);
      std::string family;
      std::size_t count = 0;
      for (const auto& n : names)
        if (!f.gpu.empty() && ascii_lower(n).starts_with(ascii_lower(f.gpu)))
          family += (count++ ? ", '" : "'") + n + "'";
      if (const std::string guess = did_you_mean(f.gpu, same_model); !guess.empty())
        error += fmt::format("; did you mean '{}'? Otherwise give", guess);
      else if (count)
        error += fmt::format("; did you mean {}{}? Otherwise give", count > 1 ? "one of " : "", family);
      else
        error += "; give";
      error += " the GPU's memory with --gpu-memory (e.g. 79.11GiB)";
      return false;
    }
    opts.gpu_memory = it->second;
    opts.gpu_name = name;
    opts.gpu_assumed = f.gpu.empty();
    return true;
  }
  // A unit is required: a bare "80" meant 80 bytes, and nobody means that.
  const std::size_t unit_at = f.gpu_memory.find_first_not_of("0123456789.");
  const auto gpu = unit_at == std::string::npos ? std::nullopt : parse_size(f.gpu_memory);
  if (!gpu || *gpu == 0) {
    error = fmt::format(
        "expected a GPU memory size with its unit, like 80GiB or 79.6GiB (GiB = 2^30 bytes; GB = 10^9), "
        "for --gpu-memory, found '{}'",
        f.gpu_memory);
    return false;
  }
  opts.gpu_memory = *gpu;
  return true;
}

// The run's training arguments (--training-args): what they state, under the flags. False (with
// `error`) for a file that cannot be read.
bool read_training_args_file(const PlanFlags& f, PreflightRequest& req, std::optional<TrainingArgs>& args,
                             std::string& error) {
  if (f.training_args.empty()) return true;
  auto loaded = load_training_args(f.training_args);
  if (const auto* message = std::get_if<std::string>(&loaded)) {
    error = *message;
    return false;
  }
  args = std::get<TrainingArgs>(std::move(loaded));
  if (!f.seq_len && args->seq_len && args->micro_batch) {
    req.memory.seq_len = args->seq_len->value;
    req.memory.micro_batch = args->micro_batch->value;
    req.memory.seq_len_is_cap = true;
  }
  if (f.load_dtype.empty() && args->load_dtype) req.resolve.load_dtype = args->load_dtype->value;
  req.training_args = args;
  return true;
}

// nccl-tests prints busbw in GB/s (1e9 bytes); "350GB/s", "350 GB/s", "350" all mean that.
bool read_bandwidth_flags(const PlanFlags& f, PreflightRequest& req, std::string& error) {
  for (auto [flag, given, out] :
       {std::tuple{"--bus-bandwidth", &f.bus_bandwidth, &req.bus_bandwidth},
        std::tuple{"--inter-node-bandwidth", &f.inter_node_bandwidth, &req.inter_node_bandwidth}}) {
    if (given->empty()) continue;
    std::string text;
    for (char c : *given)
      if (c != ' ') text += c;
    if (text.ends_with("/s")) text.resize(text.size() - 2);
    auto bw = parse_size(text.find_first_not_of("0123456789.") == std::string::npos ? text + "GB" : text);
    if (!bw || *bw == 0) {
      error = fmt::format("expected a bandwidth like 350GB/s for {}, found '{}'", flag, *given);
      return false;
    }
    *out = static_cast<double>(*bw);
  }
  return true;
}

// The FSDP_* / ACCELERATE_* variables the job sees: an --env-file, else this shell's (unless --no-env).
bool read_environment(const PlanFlags& f, PreflightRequest& req, std::string& error) {
  if (f.env_file.empty()) {
    if (!f.no_env) req.env = fsdp_environment_of_process();
    return true;
  }
  std::ifstream in(f.env_file);
  if (!in) {
    error = fmt::format("cannot read --env-file {}", f.env_file);
    return false;
  }
  constexpr std::size_t kMaxBytes = std::size_t{1} << 20;  // NAME=value lines: a few KiB
  std::string text;
  if (!util::read_bounded(in, kMaxBytes, text)) {
    error = fmt::format(
        "expected an --env-file of at most {} bytes of NAME=value lines, found more (or an "
        "unreadable file) in {}",
        kMaxBytes, f.env_file);
    return false;
  }
  req.env = parse_env_file(text);
  return true;
}

// The command line over the settings, applied after the accelerate config and the environment.
std::function<void(FsdpSettings&)> settings_overrides(const PlanFlags& f, std::optional<ShardingStrategy> strategy,
                                                      const std::optional<TrainingArgs>& args) {
  return [f, strategy, args](FsdpSettings& s) {
    // The Trainer makes bf16/fp16 accelerate's mixed precision (over the accelerate config) and
    // gradient_checkpointing checkpoints every layer; flags below still win.
    if (args && args->gradient_checkpointing) s.activation_checkpointing = *args->gradient_checkpointing;
    if (args && args->mixed_precision) s.mixed_precision = *args->mixed_precision;
    from_cli(s.world_size, f.world_size, "--world-size");
    from_cli(s.num_machines, f.num_machines, "--num-machines");
    from_cli(s.fsdp_version, f.fsdp_version, "--fsdp-version");
    from_cli(s.min_num_params, f.min_num_params, "--min-num-params");
    from_cli(s.use_orig_params, f.use_orig_params, "--use-orig-params");
    from_cli(s.offload_params, f.offload_params, "--offload-params");
    from_cli(s.activation_checkpointing, f.activation_checkpointing, "--activation-checkpointing");
    from_cli(s.dp_replicate, f.dp_replicate, "--dp-replicate");
    from_cli(s.tp_size, f.tp_size, "--tp-size");
    from_cli(s.expert_parallel, f.expert_parallel, "--expert-parallel");
    from_cli(s.cp_size, f.cp_size, "--cp-size");
    from_cli(s.sp_size, f.sp_size, "--sp-size");
    from_cli(s.cp_comm_strategy, f.cp_comm_strategy, "--cp-comm-strategy");
    if (!f.backward_prefetch.empty())
      s.backward_prefetch = {*parse_prefetch(f.backward_prefetch), "--backward-prefetch"};
    if (!f.caller.empty()) s.trainer = {f.caller == "trainer", "--caller"};
    if (!f.fsdp2_caller.empty()) s.fsdp2_caller = {*parse_caller(f.fsdp2_caller), "--fsdp2-caller"};
    from_cli(s.sharding_strategy, strategy, "--sharding-strategy");
    if (f.reshard_after_forward) s.reshard_after_forward = {*f.reshard_after_forward, "--reshard-after-forward"};
    if (!f.policy.empty())
      s.policy = {f.policy == "transformer" ? WrapPolicyKind::transformer
                  : f.policy == "size"      ? WrapPolicyKind::size
                                            : WrapPolicyKind::none,
                  "--policy"};
    if (!f.wrap_cls.empty()) s.wrap_classes = {python_split(f.wrap_cls, ','), "--wrap-cls"};  // as accelerate splits it
    if (!f.frozen.empty()) s.frozen = {f.frozen, "--frozen"};
    if (!f.ignored_modules.empty()) s.ignored_modules = {f.ignored_modules, "--ignored-modules"};
    if (const auto mp = parse_mixed_precision(f.mixed_precision)) s.mixed_precision = {*mp, "--mixed-precision"};
  };
}

}  // namespace

void add_plan_flags(CLI::App* cmd, PlanFlags& f) {
  cmd->add_option("--config", f.config, "accelerate config file (FSDP settings are read from it)");
  cmd->add_option("--module-tree", f.module_tree,
                  "The model from a dump of the live object (python3 -m shardcheck dump; docs/module-tree.md) "
                  "instead of MODEL");
  cmd->add_option("--env-file", f.env_file, "Read FSDP_*/ACCELERATE_* variables from this file instead of the shell");
  cmd->add_flag("--no-env", f.no_env, "Ignore FSDP_*/ACCELERATE_* variables of the shell");
  cmd->add_option("--world-size", f.world_size, "Total number of ranks");
  cmd->add_option("--num-machines", f.num_machines, "Nodes (hybrid strategies shard within a node)");
  cmd->add_option("--fsdp-version", f.fsdp_version, "1 or 2")->check(one_of({"1", "2"}));
  cmd->add_option("--sharding-strategy", f.strategy, "FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, ...");
  cmd->add_option("--policy", f.policy, "Auto-wrap policy")->check(one_of({"transformer", "size", "none"}));
  cmd->add_option("--wrap-cls", f.wrap_cls, "Comma-separated layer classes to wrap (default: _no_split_modules)");
  cmd->add_option("--min-num-params", f.min_num_params, "Size policy threshold");
  cmd->add_option("--use-orig-params", f.use_orig_params, "true/false");
  cmd->add_option("--offload-params", f.offload_params, "true/false: CPU offload of parameters and gradients");
  cmd->add_option("--mixed-precision", f.mixed_precision, "no, bf16 or fp16")->check(one_of({"no", "bf16", "fp16"}));
  cmd->add_option("--reshard-after-forward", f.reshard_after_forward, "FSDP2: true/false");
  cmd->add_option("--frozen", f.frozen,
                  "Regex searched in parameter names, tied aliases included: a Parameter any of whose names "
                  "matches does not require grad");
  cmd->add_option("--torch-version", f.torch_version,
                  "FSDP semantics of this torch release (default: the Python environment's, else 2.14.1)");
  cmd->add_option("--accelerate-version", f.accelerate_version,
                  "accelerate release (default: the Python environment's, else 1.14.0)");
  cmd->add_option("--transformers-version", f.transformers_version,
                  "Module layout of this transformers release (default: the Python environment's, else 5.12.1)");
  cmd->add_option("--peft-version", f.peft_version, "peft release of a LoRA run (default: the Python environment's)");
  cmd->add_option("--bitsandbytes-version", f.bitsandbytes_version,
                  "bitsandbytes release of a QLoRA run (default: the Python environment's)");
  cmd->add_option("--trl-version", f.trl_version, "trl release, when TRL's trainers run the job");
  cmd->add_option("--python-env", f.python_env,
                  "The job's Python environment (a virtualenv or conda prefix, or site-packages): versions of torch, "
                  "transformers and accelerate are read from it (default: $VIRTUAL_ENV, else $CONDA_PREFIX)");
  cmd->add_option("--attn-implementation", f.attn_implementation,
                  "eager, sdpa or flash_attention_2 (default: transformers', sdpa where the model supports it)")
      ->check(one_of({"eager", "sdpa", "flash_attention_2"}));
  cmd->add_flag("--config-only", f.config_only, "Ignore safetensors files");
  cmd->add_option("--load-dtype", f.load_dtype,
                  "The job's from_pretrained(dtype=...): auto, float32, bfloat16 or float16 (default: auto from "
                  "transformers 5.0, float32 before)")
      ->check(one_of({"auto", "float32", "bfloat16", "float16"}));
  cmd->add_flag(
      "--dequantize", f.dequantize,
      "Load a quantised checkpoint dequantised (quantization_config.dequantize=True, e.g. FineGrainedFP8Config)");
  cmd->add_option("--gpu", f.gpu,
                  "GPU preset: the memory PyTorch reports for it (rules/gpus.yaml: h100-80gb, h100-nvl, h200, "
                  "a100-80gb, a100-40gb, mi300x)");
  cmd->add_option("--gpu-memory", f.gpu_memory,
                  "Memory of one GPU with its unit, like 79.11GiB (default: the h100-80gb preset, 79.11 GiB as torch "
                  "reports it; torch.cuda.mem_get_info()[1] gives the exact bytes)");
  cmd->add_option("--optim", f.optim,
                  "Optimizer, as TrainingArguments.optim names it (rules/optimizers.yaml; default: the recipe's optim, "
                  "else adamw_torch_fused with --training-args, else adamw_torch)");
  cmd->add_option("--gradient-accumulation", f.gradient_accumulation, "Micro-batches per optimizer step")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  cmd->add_option("--trainer", f.trainer,
                  "The TRL trainer whose step runs: sft (cross-entropy, the default) or dpo (chosen and rejected "
                  "sequences in one batch, log-probs, a reference model unless precompute_ref_log_probs)")
      ->check(one_of({"sft", "dpo"}));
  cmd->add_flag("--liger", f.liger,
                "The loss is Liger's fused linear cross-entropy (use_liger_kernel): the logits are never built");
  cmd->add_option("--backward-prefetch", f.backward_prefetch, "FSDP1: BACKWARD_PRE, BACKWARD_POST or NO_PREFETCH")
      ->check(one_of({"BACKWARD_PRE", "BACKWARD_POST", "NO_PREFETCH"}, true));
  cmd->add_option("--ignored-modules", f.ignored_modules,
                  "Regex of module names FSDP leaves whole on every rank (fsdp_ignored_modules)");
  cmd->add_option("--fsdp2-caller", f.fsdp2_caller, "FSDP2: who calls fully_shard (default accelerate)")
      ->check(one_of({"accelerate", "torchtitan", "transformers"}));
  add_adapter_flags(cmd, f.adapter);
  cmd->add_option("--caller", f.caller,
                  "Who prepares the model: trainer (transformers Trainer / TRL; the default with an adapter) or "
                  "accelerate (a plain accelerate loop)")
      ->check(one_of({"trainer", "accelerate"}));
  cmd->add_option("--dp-replicate", f.dp_replicate, "FSDP2 HSDP: replicas of the shard group (2-D mesh)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--expert-parallel", f.expert_parallel,
                  "true/false: the model is loaded with DistributedConfig(enable_expert_parallel=True): the TP ranks "
                  "split its expert-parallel plan (whole experts per rank) instead of its TP plan");
  cmd->add_option("--tp-size", f.tp_size,
                  "FSDP2: tensor-parallel ranks (accelerate parallelism_config tp_size); the rest are data parallel")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--cp-size", f.cp_size,
                  "FSDP2: context-parallel ranks (parallelism_config cp_size); FSDP shards over dp_shard x cp")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--cp-comm-strategy", f.cp_comm_strategy,
                  "context parallelism's key/value exchange (parallelism_config cp_comm_strategy): allgather or "
                  "alltoall")
      ->check(one_of({"allgather", "alltoall"}));
  cmd->add_option("--sp-size", f.sp_size,
                  "sequence-parallel ranks (parallelism_config sp_size): DeepSpeed's, which FSDP never sets up")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option(
      "--training-args", f.training_args,
      "The run's Trainer / TRL config (YAML or JSON): per_device_train_batch_size and max_length (or "
      "max_seq_length) as the workload, gradient_checkpointing, bf16/fp16, dtype, and TRL's use_peft, lora_* and "
      "load_in_4bit/bnb_4bit_*; flags win");
  cmd->add_option("--seq-len", f.seq_len, "Tokens per sequence: with --micro-batch, estimate activations")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24));
  cmd->add_option("--micro-batch", f.micro_batch, "Sequences per rank per step (with --seq-len)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 16));
  cmd->add_option("--activation-checkpointing", f.activation_checkpointing,
                  "true/false: checkpoint every wrapped block (fsdp_activation_checkpointing)");
  cmd->add_option("--bus-bandwidth", f.bus_bandwidth,
                  "Measured bus bandwidth (nccl-tests busbw), e.g. 350GB/s: adds communication time");
  cmd->add_option("--inter-node-bandwidth", f.inter_node_bandwidth,
                  "Bus bandwidth across machines (nccl-tests busbw over nodes), e.g. 40GB/s: the time of the groups "
                  "that span machines");
}

// --module-tree replaces MODEL, and the flags that say how from_pretrained would load it: the dump
// holds the model as loaded (its dtypes, its quantised layers).
static bool module_tree_flags_agree(const PlanFlags& f, std::string& error) {
  if (f.model.empty() && f.module_tree.empty()) {
    error = "expected a model (a directory, its config.json or a Hub id) or --module-tree FILE";
    return false;
  }
  if (f.module_tree.empty()) return true;
  std::string clash = !f.model.empty()                 ? "a MODEL (" + f.model + ")"
                      : f.config_only                  ? "--config-only"
                      : f.dequantize                   ? "--dequantize"
                      : !f.load_dtype.empty()          ? "--load-dtype"
                      : !f.attn_implementation.empty() ? "--attn-implementation"
                      : f.adapter.load_in_4bit         ? "--load-in-4bit"
                                                       : "";
  if (clash.empty()) return true;
  error = fmt::format(
      "expected --module-tree alone to give the model, as it was built (its dtypes and layers), found {} too", clash);
  return false;
}

std::optional<PreflightRequest> make_request(const PlanFlags& f, const CliContext& ctx, std::string& error) {
  PreflightRequest req;
  req.rules_dir = ctx.rules_dir;
  req.model = f.module_tree.empty() ? f.model : f.module_tree;  // the file settings' findings fall back to
  req.module_tree = f.module_tree;
  if (!module_tree_flags_agree(f, error)) return std::nullopt;
  req.config_only = f.config_only;
  req.resolve.attn_implementation = f.attn_implementation;
  req.resolve.dequantize = f.dequantize;
  req.resolve.load_dtype = f.load_dtype;
  req.adapter_path = f.adapter.adapter;
  req.adapter = adapter_from_flags(f.adapter, error);
  if (!error.empty()) return std::nullopt;
  req.prepare_kbit = f.adapter.prepare_kbit;
  if (!f.config.empty()) req.accelerate_config = f.config;
  if (!read_version_flags(f, req.versions, error)) return std::nullopt;
  find_python_env(f, req.versions);
  if (!gpu_memory(f, ctx, req.memory, error)) return std::nullopt;
  req.memory.seq_len = f.seq_len;
  req.memory.micro_batch = f.micro_batch;
  if (f.seq_len.has_value() != f.micro_batch.has_value()) {
    error = fmt::format("--seq-len and --micro-batch go together: found only {}",
                        f.seq_len ? "--seq-len" : "--micro-batch");
    return std::nullopt;
  }
  std::optional<TrainingArgs> args;
  if (!read_training_args_file(f, req, args, error)) return std::nullopt;
  if (!set_recipe(f, args, ctx, req, error)) return std::nullopt;
  // After the training arguments: their `load_in_4bit: true` is the 4-bit load the --bnb-4bit-* flags
  // refine (TRL ModelConfig, trl/trainer/model_config.py), so those flags need no --load-in-4bit then.
  const bool file_loads_4bit = args && args->trl.load_in_4bit && args->trl.load_in_4bit->value;
  req.resolve.bnb_4bit = bnb_from_flags(f.adapter, error, file_loads_4bit);
  if (!error.empty()) return std::nullopt;
  if (!f.adapter.load_in_4bit && file_loads_4bit)
    req.bnb_4bit_overrides = [flags = f.adapter](Bnb4bitConfig& c) { bnb_overrides(flags, c); };
  if (!read_bandwidth_flags(f, req, error)) return std::nullopt;
  std::optional<ShardingStrategy> strategy;
  if (!f.strategy.empty() && !(strategy = parse_strategy(f.strategy))) {
    error = "--sharding-strategy: " + choice_error(f.strategy, {"FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD",
                                                                "HYBRID_SHARD", "HYBRID_SHARD_ZERO2", "1-5"});
    return std::nullopt;
  }
  if (!read_environment(f, req, error)) return std::nullopt;
  req.overrides = settings_overrides(f, strategy, args);
  return req;
}

}  // namespace shardcheck::cli
