// Stage "load": a model directory's checkpoint: model.safetensors.index.json and its shards, or a
// single model.safetensors, or loose *.safetensors files.
//
// The index format is the one huggingface_hub reads (hf_api.py @ee0a451, get_safetensors_metadata:
// `weight_map` maps tensor name -> shard file, `metadata.total_size` is informational). The hub
// client trusts the index; here it is checked against the shard headers.
//
// Which files: the index when present (with its shards), else model.safetensors, else any
// *.safetensors (IX016 when there are several), else none: a config-only directory. Note that
// hf_api.py L6836 and transformers try model.safetensors before the index; a directory with both
// is loaded from the index here. When the index is unusable (IX002-IX005) every *.safetensors in
// the directory is still read, so the shards' own problems are reported in the same run.
//
// Speed: for a large MoE the index is as big as all shard headers together (DeepSeek-V3: 8.7 MB
// of index, 11.7 MB of headers in 163 files), so shard headers are read on helper threads while
// the calling thread parses the index, and the ~100k index lookups are split over two threads.
// Diagnostics are collected per shard and merged in shard-name order, so output never depends
// on thread timing.
//
// Diagnostic codes. One per failure kind; never renumber, only append. Severity and exit code are
// the catalogue's (src/codes/finding_codes_table.cpp), looked up when reported.
//   code   failure
//   IX001  the model directory is missing, not a directory, or unlistable
//   IX002  model.safetensors.index.json exists but cannot be read
//   IX003  the index is not valid JSON (or not UTF-8)
//   IX004  the index JSON is not an object
//   IX005  `weight_map` is missing or not an object
//   IX006  a weight_map value is not a non-empty string
//   IX007  a tensor is listed twice in weight_map
//   IX008  a shard path leaves the model directory (absolute, or `..`)
//   IX009  a shard named by the index does not exist
//   IX010  a listed tensor is not in the shard the index names
//   IX011  a listed tensor is also stored in another shard
//   IX012  a shard holds a tensor the index does not list
//   IX013  `metadata` is not an object, or total_size is not a byte count
//   IX014  metadata.total_size differs from the shards' data bytes
//   IX015  a shard-named file on disk (prefix-NNNNN-of-MMMMM.safetensors)
//          that the index omits
//   IX016  several *.safetensors files but no index to say how they relate

#include <algorithm>
#include <charconv>
#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include "load/checkpoint_load.hpp"
#include "load/index_agreement.hpp"
#include "load/index_scan.hpp"
#include "load/json_tree.hpp"
#include "shardcheck/finding_codes.hpp"
#include "load/padded_file.hpp"
#include "load/safetensors_detail.hpp"
#include "platform/huge_pages.hpp"
#include "util/stage_timer.hpp"
#include "util/utf8.hpp"

namespace shardcheck {
namespace {

namespace fs = std::filesystem;
using detail::JsonMember;
using detail::JsonValue;

constexpr std::string_view kIndexName = "model.safetensors.index.json";
constexpr std::string_view kSingleFileName = "model.safetensors";
constexpr std::string_view kSafetensorsSuffix = ".safetensors";

enum class IndexFailure {
  bad_directory = 1,
  unreadable_index,
  index_not_json,
  index_not_object,
  bad_weight_map,
  bad_shard_value,
  duplicate_listing,
  shard_escapes_dir,
  missing_shard,
  tensor_not_in_shard,
  tensor_in_two_shards,
  unlisted_tensor,
  bad_metadata,
  total_size_mismatch,
  unlisted_shard_file,
  index_missing,
};

std::string failure_code(IndexFailure f) { return fmt::format("IX{:03}", static_cast<int>(f)); }

using detail::shown;

Diagnostic make_diagnostic(IndexFailure f, std::string file, std::string message, std::string help = {}) {
  return finding(failure_code(f), in_file(std::move(file)), std::move(message), std::move(help));
}

// Diagnostics about the index file, with the line and column of the key concerned when it can be
// found (weight_map entries and metadata.total_size sit at nesting depth 2).
class IndexReporter {
 public:
  IndexReporter(std::string label, DiagnosticSink& sink) : label_(std::move(label)), sink_(sink) {}
  void set_text(std::string_view json) { locator_.emplace(json, 2); }

  void at(IndexFailure f, std::string message, std::string help = {},
          std::optional<std::string_view> key = std::nullopt) {
    Diagnostic d = make_diagnostic(f, label_, std::move(message), std::move(help));
    if (key && locator_)
      if (auto offset = locator_->find(*key)) {
        auto [line, column] = locator_->line_column(*offset);
        d.location.line = line;
        d.location.column = column;
        d.location.end_column = column + static_cast<int>(key->size()) + 2;
      }
    sink_.report(std::move(d));
  }

 private:
  std::string label_;
  DiagnosticSink& sink_;
  std::optional<detail::KeyLocator> locator_;
};

// --- Directory listing ------------------------------------------------------------------------

bool is_regular(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);  // follows symlinks, as opening the file would
}

bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// Names of the *.safetensors files directly in `dir` that are regular files once symlinks are
// followed (as opening them would), sorted; nullopt when the directory cannot be listed.
std::optional<std::vector<std::string>> list_safetensors(const fs::path& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  if (ec) return std::nullopt;
  std::vector<std::string> names;
  for (; it != end; it.increment(ec)) {
    if (ec) return std::nullopt;
    std::string name = it->path().filename().string();
    if (name.size() <= kSafetensorsSuffix.size() || !name.ends_with(kSafetensorsSuffix)) continue;
    std::error_code type_ec;
    if (it->is_regular_file(type_ec)) names.push_back(std::move(name));
  }
  if (ec) return std::nullopt;
  std::sort(names.begin(), names.end());
  return names;
}

// --- Reading shards in parallel ---------------------------------------------------------------

struct ShardJob {
  std::string relative;  // as the index names it, or the file name
  fs::path path;
  std::optional<SafetensorsFile> file;
  // NameTable::hash64 of file->tensors' names, in the file's arena (so declared after `file`).
  std::optional<std::pmr::vector<std::uint64_t>> name_hashes;
  DiagnosticSink sink;  // per shard, merged in order afterwards so output is deterministic
};

std::vector<ShardJob> jobs_for(const fs::path& dir, const std::vector<std::string>& names) {
  std::vector<ShardJob> jobs(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    jobs[i].relative = names[i];
    jobs[i].path = dir / names[i];
  }
  return jobs;
}

unsigned worker_threads() {
  constexpr unsigned kMaxThreads = 8;  // header parsing stops scaling long before this
  return std::clamp(std::thread::hardware_concurrency(), 1u, kMaxThreads);
}

// Reads shard headers on a few threads, each with its own JSON parser (header parsing is
// CPU-bound). start() returns at once with helper threads at work, so the caller can do
// something else meanwhile (parse the index); finish() lends the calling thread to the remaining
// jobs and joins the helpers. Diagnostics stay in per-job sinks until the caller merges them.
class ShardReader {
 public:
  explicit ShardReader(std::vector<ShardJob> jobs, const std::atomic<FileObserver*>* observer)
      : jobs_(std::move(jobs)), observer_(observer) {}
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;
  ~ShardReader() { finish(); }

  void start() {
    const std::size_t helpers = std::min<std::size_t>(std::max(1u, worker_threads() - 1), jobs_.size());
    for (std::size_t i = 0; i < helpers; ++i) {
      try {
        helpers_.emplace_back([this] { work(); });
      } catch (const std::system_error&) {
        break;  // no more threads to be had: finish() does the rest
      }
    }
  }

  std::vector<ShardJob>& finish() {
    work();
    helpers_.clear();  // joins
    return jobs_;
  }

 private:
  void work() {
    if (next_.load() >= jobs_.size()) return;
    util::StageTimer timer("load: headers (a reader)");
    detail::HeaderReader reader;
    for (std::size_t i; (i = next_.fetch_add(1)) < jobs_.size();) {
      ShardJob& job = jobs_[i];
      job.file = reader.read_file(job.path, job.path.string(), job.sink);
      job.name_hashes.emplace(reader.take_name_hashes());  // moved, so it stays in the arena
      // The file's likely place in CheckpointMeta::files, set while the tensors are in cache;
      // collect_shards corrects it when files before it were dropped.
      if (job.file) {
        for (TensorInfo& t : job.file->tensors) t.file = static_cast<std::uint32_t>(i);
        if (FileObserver* o = observer_ ? observer_->load(std::memory_order_acquire) : nullptr) o->file_read(*job.file);
      }
    }
  }

  std::vector<ShardJob> jobs_;
  const std::atomic<FileObserver*>* observer_;  // may be null, or hold null
  std::atomic<std::size_t> next_{0};
  std::vector<std::jthread> helpers_;
};

// Moves the loaded shards into `meta` and their diagnostics into `sink`, in the order given
// (nullptr: a shard that was never read). Returns, per entry, the index of its file in
// meta.files, or -1.
std::vector<int> collect_shards(const std::vector<ShardJob*>& jobs, CheckpointMeta& meta, DiagnosticSink& sink) {
  std::vector<int> file_of_job(jobs.size(), -1);
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    if (!jobs[j]) continue;
    ShardJob& job = *jobs[j];
    sink.append(job.sink);
    if (!job.file) continue;
    const auto file_index = static_cast<std::uint32_t>(meta.files.size());
    job.file->path = job.relative;
    if (!job.file->tensors.empty() && job.file->tensors.front().file != file_index)
      for (TensorInfo& t : job.file->tensors) t.file = file_index;
    meta.header_bytes_read += detail::kLengthPrefixBytes + job.file->header_len;
    meta.files.push_back(std::move(*job.file));
    file_of_job[j] = static_cast<int>(file_index);
  }
  return file_of_job;
}

std::vector<ShardJob*> pointers_to(std::vector<ShardJob>& jobs) {
  std::vector<ShardJob*> out;
  for (ShardJob& j : jobs) out.push_back(&j);
  return out;
}

CheckpointMeta load_files(const fs::path& dir, const std::vector<std::string>& names, bool sharded,
                          DiagnosticSink& sink, const std::atomic<FileObserver*>* observer) {
  CheckpointMeta meta;
  meta.dir = dir;
  meta.sharded = sharded;
  ShardReader reader(jobs_for(dir, names), observer);
  reader.start();
  collect_shards(pointers_to(reader.finish()), meta, sink);
  return meta;
}

// --- The index ----------------------------------------------------------------------------------

// A weight_map entry: `tensor` is owned by the index text, or by its parsed tree; `shard` indexes
// IndexContents::shards.
using Listing = detail::ShardListing;

// The tables hold one row per tensor (92k for DeepSeek-V3), so they live in `memory`, the load's
// huge-page arena: in small pages, their first touch alone cost ~1,500 page faults.
struct IndexContents {
  IndexContents(std::size_t listed, std::pmr::memory_resource* memory) : listings(memory), listing_of(listed, memory) {}
  std::vector<std::string> shards;     // distinct shard names, sorted
  std::pmr::vector<Listing> listings;  // weight_map in document order, repeats dropped
  detail::NameTable listing_of;        // tensor name -> index into listings (not built by scan_index)
  std::optional<std::uint64_t> total_size;
};

// A number written with a fraction or exponent (or too large for 64 bits) whose value is a
// non-negative integer below 2^64, e.g. 1.6e10.
std::optional<std::uint64_t> integral_float(const JsonValue& value) {
  if (value.type != JsonValue::Type::floating) return std::nullopt;
  double d = 0;
  const auto [end, error] = std::from_chars(value.text.data(), value.text.data() + value.text.size(), d);
  constexpr double kTwoTo64 = 18446744073709551616.0;
  if (error != std::errc() || end != value.text.data() + value.text.size() || !(d >= 0 && d < kTwoTo64) ||
      d != static_cast<double>(static_cast<std::uint64_t>(d)))
    return std::nullopt;
  return static_cast<std::uint64_t>(d);
}

// `metadata` is free-form in the hub client; only total_size is read, as a byte count. Some
// writers emit it as a float (e.g. 1.6e10), so an integral non-negative double is accepted.
std::optional<std::uint64_t> read_total_size(const JsonValue& metadata, IndexReporter& report) {
  if (metadata.is_null()) return std::nullopt;
  if (metadata.type != JsonValue::Type::object) {
    report.at(IndexFailure::bad_metadata, "metadata is not an object; expected {\"total_size\": <bytes>}", {},
              "metadata");
    return std::nullopt;
  }
  const JsonValue* value = metadata.find("total_size");
  if (!value) return std::nullopt;
  if (auto bytes = value->as_uint64()) return bytes;
  if (auto bytes = integral_float(*value)) return bytes;
  report.at(IndexFailure::bad_metadata,
            fmt::format("metadata.total_size is {}; expected a non-negative integer byte count", value->rendered()), {},
            "total_size");
  return std::nullopt;
}

// True when the index's shard path stays inside the model directory: relative and without `..`.
// Only the path text is judged. Symlinks are followed wherever they lead, because the Hugging
// Face cache is built of them: snapshots/<rev>/model-00001-of-00002.safetensors links to
// ../../blobs/<sha256>, outside the snapshot directory. A symlink is placed by whoever made the
// directory; the index's text is what this check guards against (e.g. "../../etc/passwd").
bool shard_path_stays_inside(std::string_view shard) {
  const fs::path rel(shard);
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory()) return false;
  return std::none_of(rel.begin(), rel.end(), [](const fs::path& part) { return part == ".."; });
}

// Assigns shard ids in order of first appearance; consecutive listings usually name the same
// shard, so the last answer is remembered before any hashing.
class ShardNames {
 public:
  std::uint32_t id_of(std::string_view shard) {
    if (!names_.empty() && util::same_text(shard, names_[last_])) return last_;
    auto [it, fresh] = ids_.try_emplace(shard, static_cast<std::uint32_t>(names_.size()));
    if (fresh) names_.push_back(shard);
    return last_ = it->second;
  }
  std::string_view name(std::uint32_t id) const { return names_[id]; }
  // The names sorted, and for each id its position among them.
  std::pair<std::vector<std::string>, std::vector<std::uint32_t>> sorted() const {
    std::vector<std::uint32_t> order(names_.size());
    for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](auto a, auto b) { return names_[a] < names_[b]; });
    std::vector<std::string> names;
    std::vector<std::uint32_t> rank(names_.size());
    for (std::uint32_t r = 0; r < order.size(); ++r) {
      names.emplace_back(names_[order[r]]);
      rank[order[r]] = r;
    }
    return {std::move(names), std::move(rank)};
  }

 private:
  std::vector<std::string_view> names_;
  std::unordered_map<std::string_view, std::uint32_t> ids_;
  std::uint32_t last_ = 0;
};

// Collects weight_map entries into distinct shards and listings, in document order.
class WeightMapBuilder {
 public:
  WeightMapBuilder(std::size_t expected, std::pmr::memory_resource* memory) : out_(expected, memory) {
    out_.listings.reserve(expected);
  }

  // Adds one listing. A tensor listed before is not added again: the earlier listing's index is
  // returned instead.
  std::optional<std::uint32_t> add(std::string_view tensor, std::string_view shard) {
    const auto next = static_cast<std::uint32_t>(out_.listings.size());
    auto [first, inserted] =
        out_.listing_of.try_emplace(tensor, next, [this](std::uint32_t l) { return out_.listings[l].tensor; });
    if (!inserted) return first;
    out_.listings.push_back({tensor, shards_.id_of(shard)});
    return std::nullopt;
  }

  std::string_view shard_of(std::uint32_t listing) const { return shards_.name(out_.listings[listing].shard); }

  // The contents, shards sorted by name.
  IndexContents finish(std::optional<std::uint64_t> total_size) && {
    auto [names, rank] = shards_.sorted();
    out_.shards = std::move(names);
    for (Listing& l : out_.listings) l.shard = rank[l.shard];
    out_.total_size = total_size;
    return std::move(out_);
  }

 private:
  IndexContents out_;
  ShardNames shards_;
};

// The plain index in one pass (load/index_scan.hpp), reduced to what the agreement check needs:
// the shards, total_size and the listings' fingerprint, without the listings themselves. Used only
// when index_agrees_with_headers then finds nothing to report; otherwise the full parser reads the
// index again and names every disagreement. nullopt when the text is not plain.
struct PlainIndex {
  IndexContents contents;  // shards and total_size; no listings
  detail::ListingFingerprint fingerprint;
};

std::optional<PlainIndex> scan_index(std::string_view text, std::pmr::memory_resource* memory) {
  IndexContents out(0, memory);
  detail::FingerprintBuilder fingerprint(text.size() / 90 + 16, memory);  // ~100 bytes of text per listing
  ShardNames shards;
  const bool plain =
      detail::scan_plain_index(text, out.total_size, [&](std::string_view tensor, std::string_view shard) {
        fingerprint.add(shards.id_of(shard), detail::NameTable::hash64(tensor));
        return true;
      });
  if (!plain) return std::nullopt;
  auto [names, rank] = shards.sorted();
  out.shards = std::move(names);
  auto listed = std::move(fingerprint).finish(rank, out.shards.size());
  return PlainIndex{std::move(out), std::move(listed)};
}

// Parses weight_map into distinct shards and listings, reporting IX005-IX007.
std::optional<IndexContents> read_weight_map(const JsonValue& top, std::pmr::memory_resource* memory,
                                             IndexReporter& report) {
  const JsonValue* map = top.find("weight_map");
  if (!map || map->type != JsonValue::Type::object) {
    report.at(IndexFailure::bad_weight_map,
              "index has no weight_map object; expected {\"weight_map\": {tensor: shard file}}");
    return std::nullopt;
  }
  WeightMapBuilder builder(map->members.size(), memory);
  for (const JsonMember& kv : map->members) {
    const std::string_view shard = kv.value.text;
    if (kv.value.type != JsonValue::Type::string || shard.empty()) {
      report.at(IndexFailure::bad_shard_value,
                fmt::format("weight_map[{}] is {}; expected the name of a .safetensors file", shown(kv.key),
                            kv.value.rendered()),
                {}, kv.key);
      continue;
    }
    const auto first = builder.add(kv.key, shard);
    if (!first) continue;
    const std::string_view earlier = builder.shard_of(*first);
    report.at(IndexFailure::duplicate_listing,
              earlier == shard ? fmt::format("tensor {} is listed twice in weight_map (both times in shard {})",
                                             shown(kv.key), shown(shard))
                               : fmt::format("tensor {} is listed twice in weight_map, in shards {} and {}; "
                                             "the first listing is used",
                                             shown(kv.key), shown(earlier), shown(shard)),
              {}, kv.key);
  }
  return std::move(builder).finish(std::nullopt);
}

// A tensor of file `file` whose name is not listed for that file's shard.
struct Mismatch {
  std::uint32_t file, tensor;
};

// Looks every tensor of files [first, last) up in the index. Sets in_listed_shard for tensors
// found where the index says; returns the others. Each listing names one shard, held by at most
// one file, so threads working on disjoint file ranges never write the same flag.
std::vector<Mismatch> match_files(const IndexContents& index, const CheckpointMeta& meta,
                                  const std::vector<int>& shard_of_file, std::size_t first, std::size_t last,
                                  std::vector<std::uint8_t>& in_listed_shard) {
  auto name_of = [&index](std::uint32_t l) { return index.listings[l].tensor; };
  std::vector<Mismatch> mismatches;
  for (std::size_t f = first; f < last; ++f) {
    const auto shard = static_cast<std::uint32_t>(shard_of_file[f]);
    const auto& tensors = meta.files[f].tensors;
    for (std::size_t t = 0; t < tensors.size(); ++t) {
      const auto listing = index.listing_of.find(tensors[t].name, name_of);
      if (listing && index.listings[*listing].shard == shard)
        in_listed_shard[*listing] = 1;
      else
        mismatches.push_back({static_cast<std::uint32_t>(f), static_cast<std::uint32_t>(t)});
    }
  }
  return mismatches;
}

// The lookups are cache misses into a table of ~100k names, so two threads halve the wait.
std::vector<Mismatch> match_all_files(const IndexContents& index, const CheckpointMeta& meta,
                                      const std::vector<int>& shard_of_file,
                                      std::vector<std::uint8_t>& in_listed_shard) {
  const std::size_t files = meta.files.size(), half = files / 2;
  std::vector<Mismatch> second_half;
  std::optional<std::jthread> helper;
  if (worker_threads() > 1 && files > 1) {
    try {
      helper.emplace([&] { second_half = match_files(index, meta, shard_of_file, half, files, in_listed_shard); });
    } catch (const std::system_error&) {
    }
  }
  std::vector<Mismatch> all = match_files(index, meta, shard_of_file, 0, helper ? half : files, in_listed_shard);
  if (helper) {
    helper.reset();  // joins
    all.insert(all.end(), second_half.begin(), second_half.end());
  }
  return all;
}

// Checks each listed tensor against the shard headers (IX010-IX012).
void cross_check_tensors(const IndexContents& index, const std::vector<int>& file_of_shard, const CheckpointMeta& meta,
                         IndexReporter& report) {
  std::vector<int> shard_of_file(meta.files.size(), -1);
  for (std::size_t s = 0; s < file_of_shard.size(); ++s)
    if (file_of_shard[s] >= 0) shard_of_file[file_of_shard[s]] = static_cast<int>(s);

  std::vector<std::uint8_t> in_listed_shard(index.listings.size(), 0);
  const std::vector<Mismatch> mismatches = match_all_files(index, meta, shard_of_file, in_listed_shard);

  // The rare cases, in file and header order so the report is deterministic.
  auto name_of = [&index](std::uint32_t l) { return index.listings[l].tensor; };
  std::vector<int> other_shard(index.listings.size(), -1);  // another shard holding it
  std::vector<std::pair<std::string_view, std::vector<std::string_view>>> unlisted;
  std::unordered_map<std::string_view, std::size_t> unlisted_at;
  for (const Mismatch& m : mismatches) {
    const std::string_view name = meta.files[m.file].tensors[m.tensor].name;
    const int shard = shard_of_file[m.file];
    if (const auto listing = index.listing_of.find(name, name_of)) {
      if (other_shard[*listing] < 0) other_shard[*listing] = shard;
      continue;
    }
    auto [pos, fresh] = unlisted_at.try_emplace(name, unlisted.size());
    if (fresh) unlisted.push_back({name, {}});
    unlisted[pos->second].second.push_back(index.shards[static_cast<std::size_t>(shard)]);
  }

  for (const Listing& l : index.listings) {
    if (file_of_shard[l.shard] < 0) continue;  // shard missing or unreadable: already reported
    const auto i = static_cast<std::size_t>(&l - index.listings.data());
    const int elsewhere = other_shard[i];
    const std::string& listed_shard = index.shards[l.shard];
    if (!in_listed_shard[i]) {
      const std::string where =
          elsewhere >= 0 ? fmt::format("; it is in {}", shown(index.shards[static_cast<std::size_t>(elsewhere)]))
                         : std::string("; no shard holds it");
      report.at(IndexFailure::tensor_not_in_shard,
                fmt::format("tensor {} is listed in shard {} but that shard does not hold it{}", shown(l.tensor),
                            shown(listed_shard), where),
                "regenerate the index from the shards (e.g. re-save the model)", l.tensor);
    } else if (elsewhere >= 0) {
      report.at(
          IndexFailure::tensor_in_two_shards,
          fmt::format("tensor {} is stored in shard {} (as listed) and also in shard {}; a "
                      "tensor must be in exactly one shard",
                      shown(l.tensor), shown(listed_shard), shown(index.shards[static_cast<std::size_t>(elsewhere)])),
          "which copy a loader uses is unspecified; remove the stray copy", l.tensor);
    }
  }
  for (const auto& [name, shards] : unlisted)
    report.at(
        IndexFailure::unlisted_tensor,
        fmt::format("shard {} holds tensor {} that weight_map does not list{}", shown(shards.front()), shown(name),
                    shards.size() > 1 ? fmt::format(" (it is in {} shards)", shards.size()) : std::string()),
        "loaders driven by the index will never load it");
}

void check_total_size(const IndexContents& index, const std::vector<int>& file_of_shard, const CheckpointMeta& meta,
                      IndexReporter& report) {
  if (!index.total_size) return;
  // Only meaningful when every shard was read.
  if (std::any_of(file_of_shard.begin(), file_of_shard.end(), [](int f) { return f < 0; })) return;
  std::uint64_t data_bytes = 0;
  for (const SafetensorsFile& f : meta.files) data_bytes += f.data_end;  // for a valid file, file_size - 8 - N
  if (data_bytes == *index.total_size) return;
  const auto diff = data_bytes > *index.total_size ? data_bytes - *index.total_size : *index.total_size - data_bytes;
  report.at(IndexFailure::total_size_mismatch,
            fmt::format("metadata.total_size is {} but the shards' headers describe {} data bytes "
                        "(off by {})",
                        *index.total_size, data_bytes, diff),
            "some writers count total_size differently (e.g. before deduplicating shared "
            "tensors); regenerate the index if the shards are right",
            "total_size");
}

// "model-00001-of-00005.safetensors" -> "model"; nullopt for names not in that pattern.
std::optional<std::string_view> shard_prefix(std::string_view name) {
  if (!name.ends_with(kSafetensorsSuffix)) return std::nullopt;
  name.remove_suffix(kSafetensorsSuffix.size());
  auto trailing_digits = [](std::string_view s) {
    std::size_t n = 0;
    while (n < s.size() && s[s.size() - 1 - n] >= '0' && s[s.size() - 1 - n] <= '9') ++n;
    return n;
  };
  std::size_t total = trailing_digits(name);
  if (total == 0) return std::nullopt;
  name.remove_suffix(total);
  if (!name.ends_with("-of-")) return std::nullopt;
  name.remove_suffix(4);
  std::size_t part = trailing_digits(name);
  if (part == 0) return std::nullopt;
  name.remove_suffix(part);
  if (!name.ends_with('-')) return std::nullopt;
  name.remove_suffix(1);
  return name;
}

// A shard-named file the index leaves out is probably a leftover of an earlier save, or the index
// is stale. Only a warning: nothing loads it, so it harms nothing but disk space.
void check_unlisted_shard_files(const fs::path& dir, const IndexContents& index,
                                const std::vector<std::string>& on_disk, DiagnosticSink& sink) {
  std::unordered_set<std::string_view> prefixes, listed(index.shards.begin(), index.shards.end());
  for (const std::string& s : index.shards)
    if (auto p = shard_prefix(s)) prefixes.insert(*p);
  if (prefixes.empty()) return;
  for (const std::string& name : on_disk) {
    auto p = shard_prefix(name);
    if (!p || !prefixes.contains(*p) || listed.contains(name)) continue;
    sink.report(
        make_diagnostic(IndexFailure::unlisted_shard_file, (dir / name).string(),
                        fmt::format("shard file {} is not referenced by {}", shown(name), kIndexName),
                        "a leftover from an earlier save, or a stale index; delete it or regenerate the index"));
  }
}

// Reads the index file into `text` (IX002). False when it cannot be read.
bool read_index_text(const fs::path& index_path, std::optional<detail::PaddedFile>& text, IndexReporter& report) {
  if (!is_regular(index_path) || !(text = detail::PaddedFile::read(index_path))) {
    report.at(IndexFailure::unreadable_index, "cannot read the index file");
    return false;
  }
  report.set_text(text->view());
  return true;
}

// Parses and checks the index with the full parser (IX003-IX007, IX013). `tree` receives the
// parsed text, which owns the strings the result points into, so it must outlive it. nullopt when
// the index is unusable.
std::optional<IndexContents> parse_index(std::string_view text, std::optional<JsonValue>& tree,
                                         std::pmr::memory_resource* memory, IndexReporter& report) {
  if (const auto at = util::first_invalid_utf8(text)) {
    report.at(IndexFailure::index_not_json,
              fmt::format("index is not valid JSON: invalid UTF-8 byte 0x{:02x} at offset {}",
                          static_cast<unsigned char>(text[*at]), *at));
    return std::nullopt;
  }
  auto parsed = detail::parse_json_tree(text);
  if (auto* error = std::get_if<detail::JsonSyntaxError>(&parsed)) {
    report.at(IndexFailure::index_not_json, fmt::format("index is not valid JSON: {}", error->message));
    return std::nullopt;
  }
  const JsonValue& top = tree.emplace(std::get<JsonValue>(std::move(parsed)));
  if (top.type != JsonValue::Type::object) {
    report.at(IndexFailure::index_not_object,
              "index JSON is not an object; expected "
              "{\"metadata\": {...}, \"weight_map\": {...}}");
    return std::nullopt;
  }
  auto index = read_weight_map(top, memory, report);
  if (const JsonValue* metadata = top.find("metadata"); index && metadata)
    index->total_size = read_total_size(*metadata, report);
  return index;
}

// The common case: a plain index whose every shard sits beside it, was read cleanly, and holds
// exactly the tensors listed for it. Then the full cross-check could find nothing and is skipped.
bool plain_index_agrees(const IndexContents& plain, const detail::ListingFingerprint& listed,
                        std::vector<ShardJob>& early_jobs) {
  std::unordered_map<std::string_view, const ShardJob*> by_name;
  for (const ShardJob& job : early_jobs)
    if (job.file && !job.sink.has_errors()) by_name.emplace(job.relative, &job);
  std::vector<const SafetensorsFile*> files(plain.shards.size(), nullptr);
  std::vector<std::span<const std::uint64_t>> hashes(plain.shards.size());
  for (std::size_t s = 0; s < plain.shards.size(); ++s) {
    auto it = by_name.find(plain.shards[s]);
    if (it == by_name.end()) return false;
    files[s] = &*it->second->file;
    if (it->second->name_hashes) hashes[s] = *it->second->name_hashes;
  }
  return detail::index_agrees_with_headers(listed, files, hashes);
}

// The files to read for the index's shards: an early job when the shard is a file beside the
// index (already read), a late job for anything else that passes IX008/IX009, else nullptr.
std::vector<ShardJob*> place_shards(const fs::path& dir, const IndexContents& index, std::vector<ShardJob>& early_jobs,
                                    std::optional<ShardReader>& late_reader, const std::atomic<FileObserver*>* observer,
                                    IndexReporter& report) {
  std::unordered_map<std::string_view, ShardJob*> early_by_name;
  for (ShardJob& job : early_jobs) early_by_name.emplace(job.relative, &job);
  std::vector<ShardJob*> job_of_shard(index.shards.size(), nullptr);
  std::vector<std::string> late_names;
  std::vector<std::size_t> late_shards;
  for (std::size_t s = 0; s < index.shards.size(); ++s) {
    const std::string& shard = index.shards[s];
    if (auto it = early_by_name.find(shard); it != early_by_name.end()) {
      job_of_shard[s] = it->second;
      continue;
    }
    if (!shard_path_stays_inside(shard)) {
      report.at(IndexFailure::shard_escapes_dir,
                fmt::format("shard path {} leads outside the model directory", shown(shard)),
                "shard paths must be relative and stay inside the model directory");
      continue;
    }
    if (!path_exists(dir / shard)) {
      report.at(IndexFailure::missing_shard,
                fmt::format("shard {} named by weight_map does not exist in {}", shown(shard), dir.string()),
                "the download is incomplete; fetch the missing shard");
      continue;
    }
    late_names.push_back(shard);
    late_shards.push_back(s);
  }
  late_reader.emplace(jobs_for(dir, late_names), observer);
  late_reader->start();
  std::vector<ShardJob>& late_jobs = late_reader->finish();
  for (std::size_t k = 0; k < late_jobs.size(); ++k) job_of_shard[late_shards[k]] = &late_jobs[k];
  return job_of_shard;
}

// What load_indexed reads the index into, released when its caller says (detail::load_checkpoint).
// Members are destroyed bottom up: the tables' users before the arena they live in.
struct IndexScratch {
  platform::HugePageArena tables;  // the index's tables, for this load only
  std::optional<detail::PaddedFile> text;
  std::optional<PlainIndex> plain;
  std::optional<JsonValue> tree;
  std::optional<IndexContents> index;
};

CheckpointMeta load_indexed(const fs::path& dir, DiagnosticSink& sink, std::shared_ptr<void>& scratch_out,
                            const std::atomic<FileObserver*>* observer) {
  util::StageTimer timer("load: list directory");
  const auto on_disk = list_safetensors(dir).value_or(std::vector<std::string>{});
  // The shards are nearly always the files beside the index: their headers are read on helper
  // threads while this one parses the index (which is as large as all headers together for a
  // big MoE). Files the index does not name are dropped afterwards, diagnostics included.
  ShardReader early(jobs_for(dir, on_disk), observer);
  early.start();

  IndexReporter report((dir / kIndexName).string(), sink);
  auto scratch = std::make_shared<IndexScratch>();
  scratch_out = scratch;  // released by the caller, or with this frame if the caller does not keep it
  auto& [tables, text, plain, tree, index] = *scratch;
  timer.lap("load: read index");
  if (read_index_text(dir / kIndexName, text, report)) {
    timer.lap("load: scan index");
    // With the index's half of the agreement check, while the helper threads still read headers.
    plain = scan_index(text->view(), &tables);
  }
  timer.lap("load: headers (after index)");
  std::vector<ShardJob>& early_jobs = early.finish();
  timer.lap("load: index agrees?");
  const bool agrees = plain && plain_index_agrees(plain->contents, plain->fingerprint, early_jobs);
  timer.lap("load: collect and check");
  if (agrees)
    index = std::move(plain->contents);
  else if (text)
    index = parse_index(text->view(), tree, &tables, report);

  CheckpointMeta meta;
  meta.dir = dir;
  meta.sharded = true;
  if (!index) {
    // The index is unusable; the files beside it are still worth checking on their own.
    collect_shards(pointers_to(early_jobs), meta, sink);
    return meta;
  }
  meta.index_total_size = index->total_size;
  std::optional<ShardReader> late;
  const std::vector<int> file_of_shard =
      collect_shards(place_shards(dir, *index, early_jobs, late, observer, report), meta, sink);
  if (!agrees) cross_check_tensors(*index, file_of_shard, meta, report);
  check_total_size(*index, file_of_shard, meta, report);
  check_unlisted_shard_files(dir, *index, on_disk, sink);
  return meta;
}

}  // namespace

std::optional<CheckpointMeta> load_checkpoint(const std::filesystem::path& dir, DiagnosticSink& sink) {
  std::shared_ptr<void> scratch;
  return detail::load_checkpoint(dir, sink, scratch);
}

std::optional<CheckpointMeta> detail::load_checkpoint(const std::filesystem::path& dir, DiagnosticSink& sink,
                                                      std::shared_ptr<void>& scratch,
                                                      const std::atomic<FileObserver*>* observer) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    sink.report(make_diagnostic(IndexFailure::bad_directory, dir.string(),
                                path_exists(dir) ? "model path is not a directory" : "model directory does not exist"));
    return std::nullopt;
  }
  // The index wins when present. (huggingface_hub, hf_api.py L6836, and transformers try
  // model.safetensors first; a directory holding both is ambiguous either way.)
  if (path_exists(dir / kIndexName)) return load_indexed(dir, sink, scratch, observer);
  if (is_regular(dir / kSingleFileName)) return load_files(dir, {std::string(kSingleFileName)}, false, sink, observer);

  auto names = list_safetensors(dir);
  if (!names) {
    sink.report(make_diagnostic(IndexFailure::bad_directory, dir.string(), "cannot list the model directory"));
    return std::nullopt;
  }
  if (names->empty()) return std::nullopt;  // config-only directory
  if (names->size() > 1)
    sink.report(
        make_diagnostic(IndexFailure::index_missing, dir.string(),
                        fmt::format("{} .safetensors files but no {}; loaders cannot tell which tensor is where",
                                    names->size(), kIndexName),
                        "copy the index file from the original checkpoint"));
  return load_files(dir, *names, false, sink, observer);
}

}  // namespace shardcheck
