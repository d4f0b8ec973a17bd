#include "shardcheck/model_source.hpp"

#include <fmt/format.h>

#include <atomic>
#include <exception>
#include <functional>
#include <latch>
#include <system_error>
#include <utility>
#include <thread>

#include "load/checkpoint_load.hpp"
#include "shardcheck/hub.hpp"
#include "shardcheck/text.hpp"
#include "shardcheck/finding_codes.hpp"

namespace shardcheck {
namespace fs = std::filesystem;
namespace {

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

// The closest existing name to a mistyped local path, in the directory it names (at most two edits),
// or "".
std::string closest_local_name(const std::string& ref) {
  const fs::path path = ref;
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const std::string wanted = path.filename().string();
  std::string closest;
  std::size_t best = 3;
  int scanned = 0;
  std::error_code ec;
  if (!fs::is_directory(parent, ec) || wanted.empty() || wanted.size() > 200) return closest;
  for (const auto& entry : fs::directory_iterator(parent, ec)) {
    if (++scanned > 10000) break;  // a huge directory: no suggestion rather than a slow one
    const std::string name = entry.path().filename().string();
    if (name.size() > 200) continue;
    if (const std::size_t d = edit_distance(wanted, name); d < best) {
      best = d;
      closest = path.has_parent_path() ? (parent / name).string() : name;
    }
  }
  return closest;
}

Diagnostic not_found(const std::string& ref) {
  Diagnostic d =
      finding("IO002", in_file(ref),
              fmt::format("expected a model directory, a config.json or a Hub model id (org/name[@revision]), found "
                          "nothing at '{}' and it is not a valid model id",
                          ref),
              "give the directory that holds config.json (and the safetensors files, if downloaded), or a model id "
              "such as meta-llama/Meta-Llama-3-8B");
  if (const std::string closest = closest_local_name(ref); !closest.empty())
    d.help = fmt::format("did you mean '{}'? ", closest) + d.help;
  return d;
}

// The note shown before a failed Hub lookup of something that could have been a local path.
Diagnostic no_local_path(const std::string& ref) {
  std::error_code ec;
  const std::string closest = closest_local_name(ref);
  return finding(
      "IO004", in_file(ref),
      fmt::format("no local file or directory '{}' (relative to {}){}; trying it as a Hub model id", ref,
                  fs::current_path(ec).string(), closest.empty() ? "" : fmt::format(" (did you mean '{}'?)", closest)));
}

}  // namespace

// config.json and, unless config_only, the checkpoint of a directory: the one loading and
// validation path, whether the directory is the user's, a Hugging Face cache snapshot or
// shardcheck's sparse mirror of Hub headers.
struct ModelLoad::State {
  fs::path dir;                // where the checkpoint is
  std::string display_prefix;  // non-empty: a mirrored Hub snapshot; file names are shown as URLs
  ModelConfig config;
  bool config_only = false;
  DiagnosticSink checkpoint_sink;
  std::optional<CheckpointMeta> checkpoint;
  std::exception_ptr failure;  // what the loader threw, rethrown by finish()
  std::latch loaded{1};        // checkpoint, checkpoint_sink and failure are final
  std::atomic<FileObserver*> observer{nullptr};
  std::function<void()> then;  // the caller's work after the load (ModelLoad::begin)
  std::thread loader;          // reads the checkpoint, then runs `then`; joined by the destructor

  // Publishes the checkpoint before releasing the load's scratch memory, so that finish() returns
  // while this thread unmaps (detail::load_checkpoint says why); then the caller's work.
  void load() {
    {
      std::shared_ptr<void> scratch;
      try {
        checkpoint = detail::load_checkpoint(dir, checkpoint_sink, scratch, &observer);
      } catch (...) {
        failure = std::current_exception();
      }
      loaded.count_down();
    }
    if (then) then();
  }
};

ModelLoad::ModelLoad(std::unique_ptr<State> state) : state_(std::move(state)) {}
ModelLoad::ModelLoad(ModelLoad&&) noexcept = default;
ModelLoad& ModelLoad::operator=(ModelLoad&&) noexcept = default;
ModelLoad::~ModelLoad() {
  if (state_ && state_->loader.joinable()) state_->loader.join();
}

const ModelConfig& ModelLoad::config() const { return state_->config; }

void ModelLoad::observe(FileObserver* observer) { state_->observer.store(observer, std::memory_order_release); }

std::optional<ModelLoad> ModelLoad::begin(const std::string& ref, bool config_only, DiagnosticSink& sink,
                                          std::function<void()> then) {
  auto state = std::make_unique<State>();
  state->then = std::move(then);
  fs::path config_file;
  std::error_code ec;
  const fs::path path = ref;
  if (fs::is_regular_file(path, ec)) {
    state->dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    config_file = path;
  } else if (fs::is_directory(path, ec)) {
    state->dir = path;
    config_file = path / "config.json";
  } else if (auto model_ref = parse_model_ref(ref)) {
    // Not a local path: a Hub model id (org/name[@revision]), from a cache or the Hub.
    const HubEnvironment env = hub_environment_from_process();
    DiagnosticSink hub_sink;
    auto resolved = resolve_hub_model(*model_ref, config_only, env, hub_sink);
    if (!resolved) {
      // A mistyped local path is the likelier mistake: say that first, then what the Hub said.
      sink.report(no_local_path(ref));
      sink.append(hub_sink);
      return std::nullopt;
    }
    sink.append(hub_sink);
    state->dir = resolved->dir;
    state->display_prefix = resolved->display_prefix;
    config_file = resolved->dir / "config.json";
    config_only = config_only || resolved->config_only;
  } else {
    sink.report(not_found(ref));
    return std::nullopt;
  }

  DiagnosticSink config_sink;
  auto config = load_model_config(config_file, config_sink);
  if (!state->display_prefix.empty()) rename_files(config_sink, state->dir, state->display_prefix);
  sink.append(config_sink);
  if (!config) return std::nullopt;
  state->config = std::move(*config);
  state->config_only = config_only;
  if (!config_only) {
    State* s = state.get();  // stable: the State lives on the heap
    try {
      state->loader = std::thread([s] { s->load(); });
    } catch (const std::system_error&) {
      s->load();  // no thread to be had: read it now
    }
  } else {
    state->loaded.count_down();  // nothing to wait for
    if (state->then) {
      State* s = state.get();
      try {
        state->loader = std::thread([s] { s->then(); });
      } catch (const std::system_error&) {
        s->then();  // no thread to be had: run it now
      }
    }
  }
  return ModelLoad(std::move(state));
}

ModelInputs ModelLoad::finish(DiagnosticSink& sink) {
  State& s = *state_;
  s.loaded.wait();
  if (s.failure) std::rethrow_exception(std::exchange(s.failure, nullptr));
  if (!s.display_prefix.empty()) rename_files(s.checkpoint_sink, s.dir, s.display_prefix);
  sink.append(s.checkpoint_sink);
  s.checkpoint_sink = DiagnosticSink{};
  return ModelInputs{std::move(s.config), std::move(s.checkpoint)};
}

std::optional<ModelInputs> load_model(const std::string& ref, bool config_only, DiagnosticSink& sink) {
  auto load = ModelLoad::begin(ref, config_only, sink);
  if (!load) return std::nullopt;
  return load->finish(sink);
}

}  // namespace shardcheck
