#pragma once
// Where a model's metadata comes from: a local directory today (Hub ids and the HF cache plug in
// here). Loads config.json and, unless asked not to, every safetensors header.

#include <filesystem>
#include <functional>
#include <memory>
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

// `ref` is a model directory, a path to its config.json, or a Hub model id.
std::optional<ModelInputs> load_model(const std::string& ref, bool config_only, DiagnosticSink& sink);

// load_model in two halves, so that the caller can work from config.json (load the registry,
// expand the module tree: expand_module_tree in shardcheck/module_tree.hpp) while the
// checkpoint's headers are read on other threads. For DeepSeek-V3 that work took ~7 ms that
// now overlaps a ~20 ms load. Diagnostics come out as from one load_model call.
class ModelLoad {
 public:
  // Finds the model and reads config.json (its diagnostics go to `sink` now), then starts reading
  // the checkpoint in the background. nullopt when there is no usable config.json (and then `then`
  // never runs).
  //
  // `then`, when given, runs once the checkpoint is read, on the thread that read it (on a thread of
  // its own when there is nothing to read): finish() does not wait for it, the destructor does. It
  // must not throw. Why there: on a small machine the caller's work from config.json and the header
  // reading fill the cores, and more work started beside them takes a core from the caller, whom
  // everything waits for; once the headers are read their thread is idle until the join.
  static std::optional<ModelLoad> begin(const std::string& ref, bool config_only, DiagnosticSink& sink,
                                        std::function<void()> then = {});

  const ModelConfig& config() const;
  // Files whose headers are read from now on are also shown to `observer` (FileObserver), which
  // must stay alive until finish() returns or this ModelLoad is destroyed.
  void observe(FileObserver* observer);
  // Waits for the checkpoint; its diagnostics go to `sink`. Call once.
  ModelInputs finish(DiagnosticSink& sink);

  ModelLoad(ModelLoad&&) noexcept;
  ModelLoad& operator=(ModelLoad&&) noexcept;
  ~ModelLoad();  // waits for the background load when finish() was never called

  struct State;  // defined in src/load/model_source.cpp

 private:
  explicit ModelLoad(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace shardcheck
