// build_module_tree: picks the architecture, expands it, matches the checkpoint, counts.
#include <fmt/format.h>

#include "resolve/tree_internal.hpp"
#include "shardcheck/module_tree.hpp"
#include "util/stage_timer.hpp"

namespace shardcheck {
namespace {

Diagnostic diag(std::string code, Severity sev, std::string file, std::string message, ExitCode ec,
                std::string help = {}) {
  Diagnostic d;
  d.code = std::move(code);
  d.severity = sev;
  d.location.file = std::move(file);
  d.message = std::move(message);
  d.help = std::move(help);
  d.exit_code = ec;
  return d;
}

std::string known_types(const Registry& reg) {
  std::string s;
  for (const auto& t : reg.model_types()) s += (s.empty() ? "" : ", ") + t;
  return s;
}

}  // namespace

std::optional<ModuleTree> build_module_tree(const ModelConfig& config_in, const CheckpointMeta* ckpt,
                                            const Registry& registry, const ResolveOptions& options,
                                            DiagnosticSink& sink) {
  ModelConfig config = config_in;
  const ArchSpec* arch = registry.find(config.model_type);
  // Multimodal wrappers keep the language model in text_config (e.g. gemma3 -> gemma3_text).
  if (!arch && config.raw.contains("text_config") && config.raw["text_config"].is_object()) {
    const auto& tc = config.raw["text_config"];
    if (tc.contains("model_type") && tc["model_type"].is_string()) {
      if (const ArchSpec* inner = registry.find(tc["model_type"].get<std::string>())) {
        arch = inner;
        config.use_text_config = true;
        sink.report(diag("ARCH002", Severity::note, config.path,
                         fmt::format("model_type '{}' is not in the registry; using its text_config ('{}')",
                                     config.model_type, inner->model_type),
                         ExitCode::ok));
      }
    }
  }
  if (!arch) {
    if (ckpt) {
      sink.report(diag("ARCH001", Severity::warning, config.path,
                       fmt::format("model_type '{}' is not in the registry: module classes are guessed from tensor "
                                   "names, and registration order follows the checkpoint",
                                   config.model_type),
                       ExitCode::ok,
                       fmt::format("add rules/models/{}.yaml to describe it (known: {})", config.model_type,
                                   known_types(registry))));
      ModuleTree tree = infer_module_tree(config, *ckpt, sink);
      tree.config_path = config.path;
      finalize_counts(tree);
      return tree;
    }
    sink.report(diag("ARCH001", Severity::error, config.path,
                     fmt::format("model_type '{}' is not in the registry and there is no checkpoint to infer the "
                                 "layout from",
                                 config.model_type),
                     ExitCode::unknown_model,
                     fmt::format("known model types: {}", known_types(registry))));
    return std::nullopt;
  }

  std::string root = options.architecture;
  if (root.empty()) {
    root = arch->architectures.front();
    if (!config.architectures.empty()) {
      const std::string& wanted = config.architectures.front();
      if (std::find(arch->architectures.begin(), arch->architectures.end(), wanted) != arch->architectures.end())
        root = wanted;
      else if (!config.use_text_config)
        sink.report(diag("ARCH003", Severity::warning, config.path,
                         fmt::format("architecture '{}' is not described by {}; using '{}'", wanted, arch->source,
                                     root),
                         ExitCode::ok));
    }
  } else if (std::find(arch->architectures.begin(), arch->architectures.end(), root) == arch->architectures.end()) {
    std::string list;
    for (const auto& a : arch->architectures) list += (list.empty() ? "" : ", ") + a;
    sink.report(diag("ARCH003", Severity::error, config.path,
                     fmt::format("expected one of {} for --architecture, found '{}'", list, root), ExitCode::usage));
    return std::nullopt;
  }

  const DType dtype = config.torch_dtype.value_or(DType::F32);
  Frame globals;
  FusedSources fused;
  util::StageTimer timer("resolve: expand registry tree");
  auto tree = expand_arch_tree(config, *arch, registry, options, root, dtype, globals, fused, sink);
  if (!tree) return std::nullopt;
  tree->config_path = config.path;
  timer.lap("resolve: match checkpoint");
  if (ckpt) match_checkpoint(*tree, *arch, *ckpt, fused, globals, sink);
  timer.lap("resolve: count");
  finalize_counts(*tree);
  return tree;
}

}  // namespace shardcheck
