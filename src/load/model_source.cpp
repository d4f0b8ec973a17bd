#include "shardcheck/model_source.hpp"

#include <fmt/format.h>

namespace shardcheck {
namespace fs = std::filesystem;

std::optional<ModelInputs> load_model(const std::string& ref, bool config_only, DiagnosticSink& sink) {
  std::error_code ec;
  fs::path dir = ref;
  fs::path config_file = dir / "config.json";
  if (fs::is_regular_file(dir, ec)) {
    config_file = dir;
    dir = dir.parent_path().empty() ? fs::path(".") : dir.parent_path();
  } else if (!fs::is_directory(dir, ec)) {
    Diagnostic d;
    d.code = "IO002";
    d.location.file = ref;
    d.message = fmt::format("expected a model directory or a config.json, found nothing at '{}'", ref);
    d.help = "give the directory that holds config.json (and the safetensors files, if downloaded)";
    d.exit_code = ExitCode::io;
    sink.report(std::move(d));
    return std::nullopt;
  }
  auto config = load_model_config(config_file, sink);
  if (!config) return std::nullopt;
  ModelInputs in{std::move(*config), std::nullopt};
  if (!config_only) in.checkpoint = load_checkpoint(dir, sink);
  return in;
}

}  // namespace shardcheck
