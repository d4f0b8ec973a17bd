#pragma once
// Stage "load": a model's config.json, uninterpreted except for the few fields every later stage
// needs. Multimodal configs keep the language model under `text_config`; `effective()` is the
// object the architecture registry evaluates its formulas against.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shardcheck/diagnostics.hpp"
#include "shardcheck/dtype.hpp"

namespace shardcheck {

struct ModelConfig {
  std::string path;        // for diagnostics
  nlohmann::json raw;      // the whole file
  std::string model_type;  // top-level model_type
  std::vector<std::string> architectures;
  std::optional<DType> torch_dtype;  // "torch_dtype" (or transformers 5's "dtype")
  // The object holding the shape fields: `raw`, or `raw["text_config"]` when the registry resolves
  // the text model of a multimodal checkpoint.
  const nlohmann::json& effective() const { return use_text_config ? raw["text_config"] : raw; }
  bool use_text_config = false;
};

// Reads and validates config.json. Problems go to `sink` with ExitCode::bad_model_config.
std::optional<ModelConfig> load_model_config(const std::filesystem::path& file, DiagnosticSink& sink);
// Same, from text already in memory (`label` names it in diagnostics).
std::optional<ModelConfig> parse_model_config(std::string_view text, const std::string& label, DiagnosticSink& sink);

}  // namespace shardcheck
