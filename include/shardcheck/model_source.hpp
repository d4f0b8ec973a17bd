#pragma once
// Where a model's metadata comes from: a local directory today (Hub ids and the HF cache plug in
// here). Loads config.json and, unless asked not to, every safetensors header.

#include <filesystem>
#include <optional>
#include <string>

#include "shardcheck/checkpoint.hpp"
#include "shardcheck/diagnostics.hpp"
#include "shardcheck/model_config.hpp"

namespace shardcheck {

struct ModelInputs {
  ModelConfig config;
  std::optional<CheckpointMeta> checkpoint;  // nullopt: config-only directory (or --config-only)
};

// `ref` is a model directory or a path to its config.json.
std::optional<ModelInputs> load_model(const std::string& ref, bool config_only, DiagnosticSink& sink);

}  // namespace shardcheck
