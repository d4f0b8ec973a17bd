// Reading a model's metadata from the Hub without its weights, into shardcheck's header cache.
//
// What is fetched, in the order huggingface_hub's get_safetensors_metadata (hf_api.py @ee0a451,
// L6836/L6987) reads it, the index before the single file:
//   1. config.json of the revision; the reply's X-Repo-Commit names the commit, and every later
//      request asks for that commit, so all files come from one snapshot even if the branch moves.
//   2. model.safetensors.index.json; on 404 model.safetensors; on 404 again the repository has no
//      safetensors checkpoint (HUB012: planned from config.json alone, like a local config-only dir).
//   3. For each shard only its header: bytes [0, 8 + N). huggingface_hub asks for the first
//      100,000 bytes and a second range when N is larger; here the first request is sized from the
//      index (the tensor names each shard holds plus a per-tensor allowance learned from the
//      headers already read), so the bytes received stay close to the header bytes while nearly
//      every header still arrives in one round trip. A single model.safetensors gets 100,000 bytes.
//
// The result is written as a sparse mirror of the snapshot: config.json and the index as they are,
// each shard as a file with its real header and its real length (Content-Range's complete length),
// the data region a hole that takes no disk blocks. The ordinary directory loader
// (load_checkpoint) then validates it exactly as it validates a download: one validation path.
// A mirror is built in a temporary folder and renamed into snapshots/<commit> only when every
// transfer succeeded, so an interrupted run never leaves a partial snapshot behind.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "load/hub/hub_detail.hpp"
#include "shardcheck/checkpoint.hpp"

namespace shardcheck::hub {
namespace fs = std::filesystem;
namespace {

constexpr std::uint64_t kSingleFileFirstRange = 100'000;  // hf_api.py parse_safetensors_file_metadata
constexpr std::uint64_t kConfigCap = 16ull << 20;
constexpr std::uint64_t kIndexCap = 256ull << 20;
constexpr std::uint64_t kFixedAllowance = 128;          // 8-byte length, braces, __metadata__
constexpr std::uint64_t kFirstPerTensorAllowance = 96;  // "":{"dtype":"BF16","shape":[a,b],"data_offsets":[x,y]},

std::uint64_t le64(std::string_view b) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[static_cast<std::size_t>(i)]);
  return v;
}

// Writes `bytes` at the start of `path` and sets its length to `size` (a hole after the bytes).
bool write_sparse(const fs::path& path, std::string_view bytes, std::uint64_t size, std::string& error) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = std::strerror(errno);
    return false;
  }
  bool ok = true;
  std::size_t done = 0;
  while (ok && done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0)
      ok = false;
    else
      done += static_cast<std::size_t>(n);
  }
  if (ok && ::ftruncate(fd, static_cast<off_t>(size)) != 0) ok = false;
  if (!ok) error = std::strerror(errno);
  ::close(fd);
  return ok;
}

bool write_whole(const fs::path& path, std::string_view bytes, std::string& error) {
  return write_sparse(path, bytes, bytes.size(), error);
}

// A shard's header being fetched.
struct ShardFetch {
  std::string name;
  std::uint64_t tensors = 0, name_bytes = 0;
  std::string bytes;                   // bytes [0, bytes.size()) of the file
  std::optional<std::uint64_t> total;  // the file's length
  bool done = false;
};

class Fetcher {
 public:
  Fetcher(const ModelRef& ref, const HubEnvironment& env, DiagnosticSink& sink)
      : ref_(ref), env_(env), sink_(sink), http_(env) {}

  std::string url(std::string_view revision, std::string_view file) const {
    return resolve_url_prefix(env_, ref_, revision) + url_quote(file, true);
  }

  HttpResult get(std::string_view revision, std::string_view file, std::uint64_t cap) {
    HttpRequest req;
    req.url = url(revision, file);
    req.max_body = cap;
    return http_.get(std::move(req));
  }

  void report(const HttpResult& r, std::string_view file) { sink_.report(http_failure(r, file, ref_, env_)); }

  // Reads every shard's header into `shards`; false after reporting a failure.
  bool fetch_headers(const std::string& commit, std::vector<ShardFetch>& shards) {
    next_ = 0;
    failed_ = false;
    for (unsigned i = 0; i < env_.max_connections && next_ < shards.size(); ++i) start_next(commit, shards);
    const bool progress = env_.progress && shards.size() >= 8;
    auto tick = [&] {
      if (!progress) return;
      std::fprintf(stderr, "\rshardcheck: reading safetensors headers from %s: %zu/%zu files, %.1f MB",
                   env_.endpoint.c_str(), finished_, shards.size(), static_cast<double>(http_.wire_bytes()) / 1e6);
      std::fflush(stderr);
      printed_progress_ = true;
    };
    http_.run(tick);
    if (printed_progress_) std::fputs("\r\033[K", stderr);
    return !failed_;
  }

  std::uint64_t wire_bytes() const { return http_.wire_bytes(); }
  std::uint64_t shard_wire_bytes() const { return shard_wire_bytes_; }
  std::uint64_t header_bytes() const { return header_bytes_; }

 private:
  // The first range for a shard: what its tensors' entries should take, judged by the largest
  // per-tensor size seen in the headers read so far (2 bytes of slack each), or 96 bytes before any.
  std::uint64_t first_range(const ShardFetch& s) const {
    if (s.tensors == 0) return kSingleFileFirstRange;
    const std::uint64_t per_tensor = seen_any_ ? max_per_tensor_ + 2 : kFirstPerTensorAllowance;
    return kFixedAllowance + s.name_bytes + per_tensor * s.tensors;
  }

  void learn(const ShardFetch& s, std::uint64_t header_bytes) {
    if (s.tensors == 0) return;
    const std::uint64_t fixed = kFixedAllowance + s.name_bytes;
    const std::uint64_t per = header_bytes > fixed ? (header_bytes - fixed + s.tensors - 1) / s.tensors : 0;
    max_per_tensor_ = seen_any_ ? std::max(max_per_tensor_, per) : per;
    seen_any_ = true;
  }

  void start_next(const std::string& commit, std::vector<ShardFetch>& shards) {
    if (failed_ || next_ >= shards.size()) return;
    ShardFetch& s = shards[next_++];
    request(commit, shards, s, 0, first_range(s) - 1);
  }

  void request(const std::string& commit, std::vector<ShardFetch>& shards, ShardFetch& s, std::uint64_t first,
               std::uint64_t last) {
    HttpRequest req;
    req.url = url(commit, s.name);
    req.range = std::pair{first, last};
    http_.add(std::move(req),
              [this, &commit, &shards, &s](HttpResult&& r) { on_range(commit, shards, s, std::move(r)); });
  }

  void on_range(const std::string& commit, std::vector<ShardFetch>& shards, ShardFetch& s, HttpResult&& r) {
    shard_wire_bytes_ += r.wire_body_bytes + r.wire_header_bytes;
    if (failed_) return;
    if (r.failure != HttpFailure::none) {
      report(r, s.name);
      failed_ = true;
      return;
    }
    if (!r.total_size) {
      r.failure = HttpFailure::bad_response;
      r.detail = "the reply does not say the file's length (Content-Range '*' or no Content-Length)";
      report(r, s.name);
      failed_ = true;
      return;
    }
    if (s.total && *s.total != *r.total_size) {
      r.failure = HttpFailure::bad_response;
      r.detail =
          fmt::format("the file was {} bytes long in the first reply and {} in the second", *s.total, *r.total_size);
      report(r, s.name);
      failed_ = true;
      return;
    }
    s.total = r.total_size;
    s.bytes += r.body;
    // Bytes [0, 8 + N) are wanted, N from the first 8; a file too short to hold them, or a header
    // over the format's cap, is left as it is for the loader to report (ST001-ST003).
    std::uint64_t wanted = s.bytes.size();
    if (s.bytes.size() >= 8) {
      const std::uint64_t n = le64(s.bytes);
      if (n <= kMaxSafetensorsHeader && 8 + n <= *s.total) wanted = 8 + n;
    }
    if (s.bytes.size() < wanted && s.bytes.size() < *s.total) {
      request(commit, shards, s, s.bytes.size(), wanted - 1);
      return;
    }
    if (s.bytes.size() > wanted) s.bytes.resize(wanted);
    learn(s, wanted);
    header_bytes_ += wanted;
    s.done = true;
    ++finished_;
    start_next(commit, shards);
  }

  const ModelRef& ref_;
  const HubEnvironment& env_;
  DiagnosticSink& sink_;
  HttpClient http_;
  std::size_t next_ = 0, finished_ = 0;
  bool failed_ = false, printed_progress_ = false, seen_any_ = false;
  std::uint64_t max_per_tensor_ = 0, shard_wire_bytes_ = 0, header_bytes_ = 0;
};

// A folder beside snapshots/ to build a mirror in; removed unless committed.
class StagingDir {
 public:
  explicit StagingDir(fs::path p) : path_(std::move(p)) {}
  ~StagingDir() {
    std::error_code ec;
    if (!committed_) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  // Renames the staging folder to `target`; an existing target (another run finished first) wins.
  bool commit_to(const fs::path& target, std::string& error) {
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (fs::is_directory(target, ec)) return true;  // destructor removes the staging copy
    fs::rename(path_, target, ec);
    if (ec && !fs::is_directory(target)) {
      error = ec.message();
      return false;
    }
    committed_ = !ec;
    return true;
  }

 private:
  fs::path path_;
  bool committed_ = false;
};

fs::path staging_path(const fs::path& repo_root) {
  static std::atomic<unsigned> counter{0};
  return repo_root / fmt::format("tmp.{}.{}", ::getpid(), counter++);
}

bool write_ref(const fs::path& repo_root, const ModelRef& ref, const std::string& commit, std::string& error) {
  if (ref.revision == commit) return true;
  const fs::path ref_path = repo_root / "refs" / ref.revision;
  std::error_code ec;
  fs::create_directories(ref_path.parent_path(), ec);
  const fs::path tmp = ref_path.string() + fmt::format(".tmp.{}", ::getpid());
  if (!write_whole(tmp, commit, error)) return false;
  fs::rename(tmp, ref_path, ec);
  if (ec) error = ec.message();
  return !ec;
}

}  // namespace

std::string resolve_url_prefix(const HubEnvironment& env, const ModelRef& ref, std::string_view revision) {
  return fmt::format("{}/{}/resolve/{}/", env.endpoint, ref.repo_id, url_quote(revision, false));
}

std::optional<ResolvedModel> fetch_from_hub(const ModelRef& ref, bool config_only, const HubEnvironment& env,
                                            const RepoFiles& files, DiagnosticSink& sink) {
  Fetcher fetch(ref, env, sink);
  const fs::path repo_root = env.header_cache / "hub" / repo_folder_name(ref);
  auto cache_error = [&](const fs::path& where, const std::string& why) {
    sink.report(hub_diagnostic("HUB010", where.string(),
                               fmt::format("cannot write the header cache at {}: {}", where.string(), why),
                               "set SHARDCHECK_CACHE to a writable directory"));
    return std::nullopt;
  };

  HttpResult config = fetch.get(ref.revision, files.config, kConfigCap);
  if (config.failure != HttpFailure::none) {
    fetch.report(config, files.config);
    return std::nullopt;
  }
  std::string commit = config.repo_commit;
  if (commit.empty() && is_commit_hash(ref.revision)) commit = ref.revision;
  if (!is_commit_hash(commit)) {
    config.failure = HttpFailure::bad_response;
    config.detail = commit.empty() ? "no X-Repo-Commit header; expected the commit hash the revision resolves to"
                                   : fmt::format("X-Repo-Commit is '{}'; expected a 40-digit hex commit hash",
                                                 commit.substr(0, 60));
    fetch.report(config, files.config);
    return std::nullopt;
  }

  ResolvedModel out;
  out.commit = commit;
  out.display_prefix = resolve_url_prefix(env, ref, commit);
  std::error_code ec;
  StagingDir staging(staging_path(repo_root));
  std::string error;
  if (!fs::create_directories(staging.path(), ec) && ec) return cache_error(staging.path(), ec.message());
  if (!write_whole(staging.path() / files.config, config.body, error))
    return cache_error(staging.path() / files.config, error);

  // --config-only reads nothing else; its config.json is kept apart from full mirrors, so a later
  // full run does not mistake it for a repository without safetensors.
  const fs::path target = repo_root / (config_only ? "config-only" : "snapshots") / commit;
  if (!config_only) {
    HttpResult index;
    if (files.index.empty()) {  // no sharded form: straight to the single file
      index.failure = HttpFailure::status;
      index.status = 404;
    } else {
      index = fetch.get(commit, files.index, kIndexCap);
    }
    std::vector<ShardFetch> shards;
    if (index.failure == HttpFailure::none) {
      if (!write_whole(staging.path() / files.index, index.body, error))
        return cache_error(staging.path() / files.index, error);
      // An index that is not one is mirrored as it is; the loader reports it (IX003-IX005).
      for (IndexedShard& s : index_shards(index.body).value_or(std::vector<IndexedShard>{}))
        // Unsafe paths are never requested (the loader reports IX008), nor names that would
        // overwrite config.json or the index in the mirror (the loader reports those shards).
        if (shard_name_is_safe(s.name) && s.name != files.config && s.name != files.index)
          shards.push_back({std::move(s.name), s.tensors, s.name_bytes, {}, {}, false});
    } else if (index.failure == HttpFailure::status && index.status == 404) {
      shards.push_back({std::string(files.single), 0, 0, {}, {}, false});
    } else {
      fetch.report(index, files.index);
      return std::nullopt;
    }
    if (!fetch.fetch_headers(commit, shards)) {
      // One 404 for a single model.safetensors after none for the index: no safetensors at all.
      const bool none_at_all =
          shards.size() == 1 && shards[0].name == files.single && sink.items().back().code == "HUB006";
      if (!none_at_all) return std::nullopt;
      sink.items().pop_back();
      sink.report(hub_diagnostic("HUB012", out.display_prefix,
                                 files.index.empty()
                                     ? fmt::format("'{}' has no {} at commit {}; shapes come from {} alone",
                                                   ref.repo_id, files.single, commit, files.config)
                                     : fmt::format("'{}' has neither {} nor {} at commit {}; shapes come from {} alone",
                                                   ref.repo_id, files.index, files.single, commit, files.config),
                                 "a repository with only *.bin weights is planned from its config file"));
      shards.clear();
    }
    for (const ShardFetch& s : shards)
      if (!write_sparse(staging.path() / s.name, s.bytes, *s.total, error))
        return cache_error(staging.path() / s.name, error);
  }
  if (std::getenv("SHARDCHECK_HUB_STATS"))  // for tests and benchmarks: what crossed the wire
    std::fprintf(stderr,
                 "shardcheck: hub: %s@%s: %llu bytes received in all; shard requests %llu bytes received for %llu "
                 "header bytes\n",
                 ref.repo_id.c_str(), commit.c_str(), static_cast<unsigned long long>(fetch.wire_bytes()),
                 static_cast<unsigned long long>(fetch.shard_wire_bytes()),
                 static_cast<unsigned long long>(fetch.header_bytes()));
  if (!staging.commit_to(target, error)) return cache_error(target, error);
  if (!write_ref(repo_root, ref, commit, error)) return cache_error(repo_root / "refs" / ref.revision, error);
  out.dir = target;
  out.config_only = config_only;
  return out;
}

}  // namespace shardcheck::hub
