// Reading caches laid out as huggingface_hub lays out its own (file_download.py,
// try_to_load_from_cache and _cache_commit_hash_for_specific_revision):
//   <cache>/models--org--name/refs/<revision>        a file holding the commit hash
//   <cache>/models--org--name/snapshots/<commit>/...  the files (in the HF cache: symlinks to
//                                                     ../../blobs/<hash>, followed when read)
// shardcheck's header cache uses the same layout, so one lookup serves both.

#include <algorithm>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include "load/hub/hub_detail.hpp"
#include "load/json_tree.hpp"

namespace shardcheck::hub {
namespace fs = std::filesystem;

bool is_commit_hash(std::string_view s) {
  if (s.size() != 40) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool shard_name_is_safe(std::string_view name) {
  const fs::path rel(name);
  if (name.empty() || rel.is_absolute() || rel.has_root_name() || rel.has_root_directory()) return false;
  for (const fs::path& part : rel)
    if (part == "..") return false;
  return true;
}

std::optional<std::vector<IndexedShard>> index_shards(std::string_view json) {
  auto parsed = detail::parse_json_tree(json);
  const auto* root = std::get_if<detail::JsonValue>(&parsed);
  const detail::JsonValue* map = root ? root->find("weight_map") : nullptr;
  if (!map || map->type != detail::JsonValue::Type::object) return std::nullopt;
  std::vector<IndexedShard> shards;
  std::unordered_map<std::string_view, std::size_t> at;
  for (const detail::JsonMember& kv : map->members) {
    const std::string_view shard = kv.value.text;
    if (kv.value.type != detail::JsonValue::Type::string || shard.empty()) continue;  // IX006, reported by the loader
    auto [it, fresh] = at.try_emplace(shard, shards.size());
    if (fresh) shards.push_back({std::string(shard), 0, 0});
    shards[it->second].tensors += 1;
    shards[it->second].name_bytes += kv.key.size();
  }
  return shards;
}

std::optional<Snapshot> find_snapshot(const fs::path& repo_root, const std::string& revision, std::string_view folder) {
  std::error_code ec;
  std::string commit;
  if (std::ifstream ref(repo_root / "refs" / revision); ref) {
    std::getline(ref, commit);
    while (!commit.empty() && (commit.back() == '\r' || commit.back() == ' ')) commit.pop_back();
  }
  // A ref file is only trusted to name a snapshot folder, never a path elsewhere.
  if (!commit.empty() && (commit.find('/') != std::string::npos || commit == "." || commit == "..")) commit.clear();
  if (commit.empty() && is_commit_hash(revision)) commit = revision;
  if (commit.empty()) return std::nullopt;
  const fs::path dir = repo_root / folder / commit;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  return Snapshot{dir, commit};
}

SnapshotContents inspect_snapshot(const fs::path& dir, const RepoFiles& files) {
  std::error_code ec;
  SnapshotContents c;
  c.config = fs::is_regular_file(dir / files.config, ec);
  c.index = !files.index.empty() && fs::is_regular_file(dir / files.index, ec);
  c.single_file = fs::is_regular_file(dir / files.single, ec);
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".safetensors") c.any_safetensors = true;
  if (!c.index) return c;
  std::ifstream in(dir / files.index, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  const auto shards = index_shards(text.str());
  if (!shards) return c;  // unreadable index: the loader says what is wrong with it
  c.listed_shards = shards->size();
  for (const IndexedShard& s : *shards)
    if (shard_name_is_safe(s.name) && !fs::exists(dir / s.name, ec)) c.missing_shards.push_back(s.name);
  std::sort(c.missing_shards.begin(), c.missing_shards.end());
  return c;
}

}  // namespace shardcheck::hub
