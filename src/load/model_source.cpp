#include "shardcheck/model_source.hpp"

#include <fmt/format.h>

#include "shardcheck/hub.hpp"

namespace shardcheck {
namespace fs = std::filesystem;
namespace {

// config.json and, unless config_only, the checkpoint of a directory: the one loading and
// validation path, whether the directory is the user's, a Hugging Face cache snapshot or
// shardcheck's sparse mirror of Hub headers.
std::optional<ModelInputs> load_directory(const fs::path& dir, const fs::path& config_file, bool config_only,
                                          DiagnosticSink& sink) {
  auto config = load_model_config(config_file, sink);
  if (!config) return std::nullopt;
  ModelInputs in{std::move(*config), std::nullopt};
  if (!config_only) in.checkpoint = load_checkpoint(dir, sink);
  return in;
}

// Diagnostics about files of a mirrored snapshot name the URL the bytes came from.
void rename_files(DiagnosticSink& sink, const fs::path& dir, const std::string& prefix) {
  const std::string local = dir.string() + "/";
  for (Diagnostic& d : sink.items()) {
    if (d.location.file.starts_with(local))
      d.location.file = prefix + d.location.file.substr(local.size());
    else if (d.location.file == dir.string())
      d.location.file = prefix;
  }
}

}  // namespace

std::optional<ModelInputs> load_model(const std::string& ref, bool config_only, DiagnosticSink& sink) {
  std::error_code ec;
  fs::path dir = ref;
  if (fs::is_regular_file(dir, ec)) {
    const fs::path parent = dir.parent_path().empty() ? fs::path(".") : dir.parent_path();
    return load_directory(parent, dir, config_only, sink);
  }
  if (fs::is_directory(dir, ec)) return load_directory(dir, dir / "config.json", config_only, sink);

  // Not a local path: a Hub model id (org/name[@revision]), from a cache or the Hub.
  if (auto model_ref = parse_model_ref(ref)) {
    const HubEnvironment env = hub_environment_from_process();
    auto resolved = resolve_hub_model(*model_ref, config_only, env, sink);
    if (!resolved) return std::nullopt;
    if (resolved->display_prefix.empty())
      return load_directory(resolved->dir, resolved->dir / "config.json", config_only || resolved->config_only, sink);
    DiagnosticSink local;
    auto in = load_directory(resolved->dir, resolved->dir / "config.json", config_only || resolved->config_only, local);
    rename_files(local, resolved->dir, resolved->display_prefix);
    sink.append(local);
    return in;
  }
  Diagnostic d;
  d.code = "IO002";
  d.location.file = ref;
  d.message = fmt::format("expected a model directory, a config.json or a Hub model id (org/name[@revision]), found "
                          "nothing at '{}' and it is not a valid model id",
                          ref);
  d.help = "give the directory that holds config.json (and the safetensors files, if downloaded), or a model id "
           "such as meta-llama/Meta-Llama-3-8B";
  d.exit_code = ExitCode::io;
  sink.report(std::move(d));
  return std::nullopt;
}

}  // namespace shardcheck
