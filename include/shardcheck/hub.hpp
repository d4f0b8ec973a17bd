#pragma once
// Hugging Face Hub model ids (`org/name[@revision]`) as model references. A Hub model is turned
// into a local directory — a snapshot in the Hugging Face cache, or shardcheck's own header cache
// filled over HTTP — and that directory is then loaded and validated exactly like any other
// (load_model in model_source.hpp), so there is one validation path for every source.

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "shardcheck/diagnostics.hpp"

namespace shardcheck {

// `org/name` or `name`, optionally `@revision` (a branch, tag or commit hash).
struct ModelRef {
  std::string repo_id;
  std::string revision = "main";
  bool revision_given = false;
};

// nullopt when `text` is not a repo id as huggingface_hub accepts it (utils/_validators.py
// validate_repo_id: [\w.-] parts, at most one '/', no '--' or '..', no leading/trailing '-' or
// '.', at most 96 characters). The revision may hold '/' (refs/pr/1) but no whitespace or
// control bytes.
std::optional<ModelRef> parse_model_ref(std::string_view text);

// "models--org--name": the folder huggingface_hub keeps a model under (file_download.py
// repo_folder_name).
std::string repo_folder_name(const ModelRef& ref);

// Everything the environment says about reaching the Hub, read once (huggingface_hub
// constants.py and utils/_auth.py name these variables).
struct HubEnvironment {
  std::string endpoint = "https://huggingface.co";  // HF_ENDPOINT, trailing '/' removed
  std::filesystem::path hf_cache;                   // HF_HUB_CACHE | $HF_HOME/hub | ~/.cache/huggingface/hub
  std::filesystem::path header_cache;  // SHARDCHECK_CACHE | $XDG_CACHE_HOME/shardcheck | ~/.cache/shardcheck
  std::optional<std::string> token;    // HF_TOKEN | token file; never printed
  std::string token_source;            // "HF_TOKEN" or the token file's path (for messages)
  bool offline = false;                // HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE
  long timeout_seconds = 10;           // HF_HUB_DOWNLOAD_TIMEOUT
  unsigned max_connections = 8;        // SHARDCHECK_HUB_CONNECTIONS
  bool progress = false;               // a progress line on stderr (a terminal, not CI)
};

using GetEnv = std::function<const char*(const char*)>;
HubEnvironment hub_environment(const GetEnv& getenv);
HubEnvironment hub_environment_from_process();

// A Hub model made local. `dir` is loaded like any model directory; diagnostics that name files
// under it are renamed to `display_prefix` + relative path (the URL the bytes came from) when
// `display_prefix` is not empty.
struct ResolvedModel {
  std::filesystem::path dir;
  std::string display_prefix;
  std::string commit;
  bool config_only = false;  // only config.json is to be read (partial snapshot, offline)
};

// The files that make a repository what shardcheck reads: a model (config.json, then
// model.safetensors.index.json or model.safetensors) or a PEFT adapter (adapter_config.json and
// adapter_model.safetensors, as peft's save_pretrained / push_to_hub writes them).
struct RepoFiles {
  std::string_view config;
  std::string_view index;  // "" when the repository has no sharded form
  std::string_view single;
};
inline constexpr RepoFiles kModelRepo{"config.json", "model.safetensors.index.json", "model.safetensors"};
inline constexpr RepoFiles kAdapterRepo{"adapter_config.json", "", "adapter_model.safetensors"};

// Resolution order: the Hugging Face cache, shardcheck's header cache, then the Hub over HTTP
// (unless offline). Reports HUB diagnostics (exit codes 30-39) and returns nullopt on failure.
std::optional<ResolvedModel> resolve_hub_model(const ModelRef& ref, bool config_only, const HubEnvironment& env,
                                               DiagnosticSink& sink, const RepoFiles& files = kModelRepo);

}  // namespace shardcheck
