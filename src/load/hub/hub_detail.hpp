#pragma once
// Internals of the Hub model source shared by src/load/hub/*.cpp.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "load/hub/http_client.hpp"
#include "shardcheck/diagnostics.hpp"
#include "shardcheck/hub.hpp"

namespace shardcheck::hub {

inline constexpr std::string_view kConfigName = "config.json";
inline constexpr std::string_view kIndexName = "model.safetensors.index.json";
inline constexpr std::string_view kSingleFileName = "model.safetensors";

// A shard as model.safetensors.index.json names it, with what the index says it holds (used to
// size the first range request and to spot missing files).
struct IndexedShard {
  std::string name;
  std::uint64_t tensors = 0;
  std::uint64_t name_bytes = 0;  // sum of the tensor names' lengths
};
// Distinct shards of weight_map in order of first appearance; nullopt when the text is not an
// index (invalid JSON, no weight_map object): the directory loader reports that precisely.
std::optional<std::vector<IndexedShard>> index_shards(std::string_view json);

// True for a shard path that stays inside the snapshot (relative, no ".."), the rule
// checkpoint_index.cpp applies (IX008); only such names are fetched or looked for.
bool shard_name_is_safe(std::string_view name);

// huggingface_hub file_download.py REGEX_COMMIT_HASH: ^[0-9a-f]{40}$.
bool is_commit_hash(std::string_view s);

// A snapshot in a cache laid out as huggingface_hub does: <repo>/refs/<revision> holds a commit,
// <repo>/snapshots/<commit>/ the files; a revision that is itself a commit hash needs no ref.
struct Snapshot {
  std::filesystem::path dir;
  std::string commit;
};
// `folder` is "snapshots", or "config-only" for the config.json-only entries of the header cache.
std::optional<Snapshot> find_snapshot(const std::filesystem::path& repo_root, const std::string& revision,
                                      std::string_view folder = "snapshots");

// What a snapshot directory holds of the files shardcheck reads.
struct SnapshotContents {
  bool config = false;
  bool index = false;
  bool single_file = false;
  bool any_safetensors = false;
  std::size_t listed_shards = 0;
  std::vector<std::string> missing_shards;  // named by the index, not present
};
SnapshotContents inspect_snapshot(const std::filesystem::path& dir, const RepoFiles& files = kModelRepo);

// Diagnostics (codes HUB001-HUB012, exit codes 30-39; see hub_diagnostics.cpp).
Diagnostic http_failure(const HttpResult& r, std::string_view file, const ModelRef& ref, const HubEnvironment& env);
// Severity and exit code are the catalogue's (finding_codes.hpp).
Diagnostic hub_diagnostic(std::string_view code, std::string file, std::string message, std::string help);

// Fetches config.json (and unless config_only the index and every shard's header) of `ref` from
// the Hub into shardcheck's header cache. See hub_fetch.cpp.
std::optional<ResolvedModel> fetch_from_hub(const ModelRef& ref, bool config_only, const HubEnvironment& env,
                                            const RepoFiles& files, DiagnosticSink& sink);

// Where bytes fetched for `ref` at `commit` came from: endpoint/repo/resolve/commit/.
std::string resolve_url_prefix(const HubEnvironment& env, const ModelRef& ref, std::string_view revision);

}  // namespace shardcheck::hub
