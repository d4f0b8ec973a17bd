// Where a Hub model's files come from, in order:
//   1. the Hugging Face cache (HF_HUB_CACHE): a snapshot with config.json and every header its
//      index names is used as it is, with no network. A partial download (index present, shards
//      missing; or config.json alone) is reported precisely (HUB011) and then either completed from
//      the Hub's headers at the same commit, or — offline — planned from config.json alone.
//   2. shardcheck's header cache (SHARDCHECK_CACHE): mirrors fetched earlier, keyed by commit.
//   3. the Hub over HTTP (hub_fetch.cpp), unless HF_HUB_OFFLINE is set.
// A revision found in a cache is not re-resolved against the Hub: a branch name means the commit
// it pointed to when it was cached, as in huggingface_hub's offline mode. Ask for a commit hash,
// or delete refs/<branch> in the cache, to move on.

#include <fmt/format.h>

#include "load/hub/hub_detail.hpp"

namespace shardcheck {
namespace fs = std::filesystem;
using namespace hub;

namespace {

std::string list_some(const std::vector<std::string>& names) {
  std::string out;
  const std::size_t shown = std::min<std::size_t>(names.size(), 5);
  for (std::size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += fmt::format(" and {} more", names.size() - shown);
  return out;
}

}  // namespace

std::optional<ResolvedModel> resolve_hub_model(const ModelRef& ref, bool config_only, const HubEnvironment& env,
                                               DiagnosticSink& sink, const RepoFiles& files) {
  const std::string folder = repo_folder_name(ref);
  std::optional<ModelRef> at_commit;  // a partial HF snapshot pins the commit to complete it at

  if (auto snap = find_snapshot(env.hf_cache / folder, ref.revision)) {
    const SnapshotContents c = inspect_snapshot(snap->dir, files);
    if (c.config) {
      const bool complete = (c.index && c.missing_shards.empty()) || (!c.index && c.any_safetensors);
      if (config_only || complete) return ResolvedModel{snap->dir, "", snap->commit, false};
      const std::string what =
          c.index ? fmt::format("{} of the {} shards named by {} are missing: {}", c.missing_shards.size(),
                                c.listed_shards, files.index, list_some(c.missing_shards))
                  : fmt::format("it holds {} but no safetensors file", files.config);
      sink.report(hub_diagnostic(
          "HUB011", snap->dir.string(),
          fmt::format("partial download of '{}' in the Hugging Face cache (commit {}): {}; {}", ref.repo_id,
                      snap->commit, what,
                      env.offline ? "HF_HUB_OFFLINE is set, so shapes come from config.json alone"
                                  : "reading the headers from the Hub instead"),
          "finish the download (`hf download " + ref.repo_id + "`) to check the real checkpoint offline"));
      if (env.offline) return ResolvedModel{snap->dir, "", snap->commit, true};
      at_commit = ref;
      at_commit->revision = snap->commit;
    }
  }

  const ModelRef& wanted = at_commit ? *at_commit : ref;
  const fs::path own_root = env.header_cache / "hub" / folder;
  if (auto snap = find_snapshot(own_root, wanted.revision))
    return ResolvedModel{snap->dir, resolve_url_prefix(env, wanted, snap->commit), snap->commit, false};
  if (config_only)
    if (auto snap = find_snapshot(own_root, wanted.revision, "config-only"))
      return ResolvedModel{snap->dir, resolve_url_prefix(env, wanted, snap->commit), snap->commit, true};

  if (env.offline) {
    sink.report(hub_diagnostic(
        "HUB001", ref.repo_id,
        fmt::format("'{}' (revision '{}') is not a local directory, not in the Hugging Face cache ({}) and not in "
                    "shardcheck's header cache ({}), and HF_HUB_OFFLINE forbids the network",
                    ref.repo_id, ref.revision, (env.hf_cache / folder).string(), own_root.string()),
        "run once with network access (headers are then cached), or download the model's config.json and "
        "*.safetensors.index.json with `hf download`"));
    return std::nullopt;
  }
  return fetch_from_hub(wanted, config_only, env, files, sink);
}

}  // namespace shardcheck
