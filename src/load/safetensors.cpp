// Stage "load": reads and validates safetensors headers, never tensor data.
//
// The rules follow the reference reader, safetensors/src/tensor.rs @24b0b28 (`read_metadata`,
// `Metadata::validate`), not the README where the two differ (leading JSON whitespace is allowed).
// Unlike the crate, which stops at the first error, every problem in a header is reported.
//
// Diagnostic codes. Each failure kind has one stable code; never renumber, only append. Severity
// and exit code are the catalogue's (src/codes/finding_codes_table.cpp), looked up when reported.
// The last column is the crate's error for the same input (InvalidHeaderDeserialization
// abbreviated to Deserialization).
//   code   failure                                              tensor.rs error
//   ST001  file shorter than the 8-byte length prefix           HeaderTooSmall
//   ST002  header length N above 100,000,000 bytes              HeaderTooLarge
//   ST003  8 + N runs past the end of the file                  InvalidHeaderLength
//   ST004  header bytes are not valid UTF-8                     InvalidHeader
//   ST005  header is not JSON                                   Deserialization
//   ST006  header JSON is not an object                         Deserialization
//   ST007  __metadata__ is not a string->string map             Deserialization
//   ST008  tensor entry is not an object with exactly the keys
//          dtype, shape, data_offsets                           Deserialization
//   ST009  dtype is not one of the 22 known names               Deserialization
//   ST010  shape is not an array of non-negative integers       Deserialization
//   ST011  data_offsets is not [begin, end], two non-negative
//          integers                                             Deserialization
//   ST012  data_offsets end < begin                             InvalidOffset
//   ST013  numel, or numel x bits, overflows 64 bits            ValidationOverflow
//   ST014  numel x bits is not a whole number of bytes          MisalignedSlice
//   ST015  end - begin != numel x bits / 8                      TensorInvalidInfo
//   ST016  the same tensor name appears twice                   (README: "disallowed")
//   ST017  the first tensor does not start at data offset 0     InvalidOffset
//   ST018  a hole between two tensors' data                     InvalidOffset
//   ST019  two tensors' data overlap                            InvalidOffset
//   ST020  file shorter than 8 + N + data end ("missing K
//          bytes": a download cut short)                        MetadataIncompleteBuffer
//   ST021  bytes after the data region (polyglot file)          MetadataIncompleteBuffer
//   ST022  the file cannot be opened or read                    IoError
//
// Byte offsets (SourceLocation::byte_offset) are absolute file offsets: header problems point at
// the tensor's key inside the header (8 + position), data-layout problems at the first data byte
// concerned (8 + N + data offset).

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include "load/json_tree.hpp"
#include "shardcheck/finding_codes.hpp"
#include "load/padded_file.hpp"
#include "load/safetensors_detail.hpp"
#include "platform/huge_pages.hpp"
#include "util/utf8.hpp"

namespace shardcheck {

std::int64_t TensorInfo::numel() const {
  // Saturates rather than wrapping: the loader never produces a shape whose product overflows,
  // but a TensorInfo built by hand might.
  std::int64_t n = 1;
  for (std::int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<std::int64_t>::max();
  return n;
}

namespace {

using detail::JsonMember;
using detail::JsonValue;
using detail::kLengthPrefixBytes;

enum class Failure {
  file_too_small = 1,
  header_too_large,
  header_truncated,
  header_not_utf8,
  header_not_json,
  header_not_object,
  bad_metadata,
  bad_entry,
  bad_dtype,
  bad_shape,
  bad_data_offsets,
  reversed_offsets,
  size_overflow,
  misaligned_bits,
  wrong_byte_length,
  duplicate_name,
  data_not_at_zero,
  data_hole,
  data_overlap,
  data_truncated,
  trailing_bytes,
  io_error,
};

std::string failure_code(Failure f) { return fmt::format("ST{:03}", static_cast<int>(f)); }

// Cuts `text` to at most `limit` bytes without splitting a UTF-8 sequence, marking the cut.
std::string cut(std::string text, std::size_t limit) {
  if (text.size() <= limit) return text;
  std::size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  text.resize(end);
  return text + "...";
}

using detail::shown;

// A JSON value rendered for a message, cut short so one bad value cannot flood the output.
std::string rendered(const JsonValue& value) { return value.rendered(80); }

const std::string& accepted_dtype_names() {
  static const std::string names = [] {
    std::string s;
    for (int i = 0; i < kNumDTypes; ++i) {
      if (i) s += ", ";
      s += dtype_name(static_cast<DType>(i));
    }
    return s;
  }();
  return names;
}

std::optional<std::uint64_t> checked_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

}  // namespace

namespace {

// A dtype name of at most 16 bytes as two words: its first and its last 8 (or 4, or single)
// bytes, overlapping when shorter than 16. With the length, that identifies the name exactly.
struct PackedName {
  std::uint64_t head = 0, tail = 0;
  bool operator==(const PackedName&) const = default;
};
PackedName pack_name(std::string_view s) {
  PackedName p;
  const char* d = s.data();
  const std::size_t n = s.size();
  if (n >= 8) {
    std::memcpy(&p.head, d, 8);
    std::memcpy(&p.tail, d + n - 8, 8);
  } else if (n >= 4) {
    std::uint32_t a, b;
    std::memcpy(&a, d, 4);
    std::memcpy(&b, d + n - 4, 4);
    p.head = a;
    p.tail = b;
  } else {
    for (std::size_t i = 0; i < n; ++i) p.head |= std::uint64_t{static_cast<unsigned char>(d[i])} << (8 * i);
  }
  return p;
}

}  // namespace

// parse_dtype (src/util/dtype.cpp) scans all 22 names by string compare; a header names a dtype
// per tensor (92k for DeepSeek-V3), so this compares two words against the names of the right
// length only. Same answers.
std::optional<DType> detail::dtype_from_name(std::string_view text) {
  constexpr std::size_t kLongest = 11;  // "F8_E4M3FNUZ"
  struct Known {
    PackedName key;
    DType dtype;
  };
  struct Table {
    std::array<std::array<Known, kNumDTypes>, kLongest + 1> known{};
    std::array<std::uint8_t, kLongest + 1> count{};
  };
  static const Table table = [] {
    Table t;
    for (int i = 0; i < kNumDTypes; ++i) {
      const auto d = static_cast<DType>(i);
      const std::string_view name = dtype_name(d);
      t.known[name.size()][t.count[name.size()]++] = {pack_name(name), d};
    }
    return t;
  }();
  if (text.size() > kLongest) return std::nullopt;
  const PackedName key = pack_name(text);
  const auto& bucket = table.known[text.size()];
  for (std::size_t i = 0; i < table.count[text.size()]; ++i)
    if (bucket[i].key == key) return bucket[i].dtype;
  return std::nullopt;
}

namespace {

using detail::DataRange;
using detail::dtype_from_name;
using detail::Entry;

// Key comparison against a literal with the length known at compile time, so the compiler
// inlines the byte compare instead of calling memcmp for every key of every entry.
template <std::size_t N>
bool key_is(std::string_view key, const char (&literal)[N]) {
  return key.size() == N - 1 && std::memcmp(key.data(), literal, N - 1) == 0;
}

// Turns findings into Diagnostics for one file, attaching the file name and a byte offset.
class Reporter {
 public:
  Reporter(const std::string& label, DiagnosticSink& sink) : label_(label), sink_(sink) {}

  // Called once the header text is known, so tensor keys can be located in it.
  void set_header(std::string_view header_json, std::uint64_t header_len) {
    locator_.emplace(header_json, 1);
    header_len_ = header_len;
  }

  void at(Failure f, std::optional<std::uint64_t> byte_offset, std::string message, std::string help = {}) {
    SourceLocation where = in_file(label_);
    where.byte_offset = byte_offset;
    sink_.report(finding(failure_code(f), std::move(where), std::move(message), std::move(help)));
  }

  // A problem in one tensor's header entry: points at the entry's key in the header.
  void at_key(Failure f, std::string_view key, std::string message, std::string help = {}) {
    std::optional<std::uint64_t> offset;
    if (locator_)
      if (auto pos = locator_->find(key)) offset = kLengthPrefixBytes + *pos;
    at(f, offset, std::move(message), std::move(help));
  }

  // A problem in the data region: points at the absolute file offset of data offset `data_offset`.
  void at_data(Failure f, std::uint64_t data_offset, std::string message, std::string help = {}) {
    std::optional<std::uint64_t> offset = checked_add(kLengthPrefixBytes + header_len_, data_offset);
    at(f, offset, std::move(message), std::move(help));
  }

 private:
  const std::string& label_;
  DiagnosticSink& sink_;
  std::optional<detail::KeyLocator> locator_;
  std::uint64_t header_len_ = 0;
};

// --- Length prefix (tensor.rs read_metadata steps 1-3) --------------------------------------

// True when the N header bytes lie inside the file and may be read.
bool check_length_prefix(std::uint64_t header_len, std::uint64_t file_size, Reporter& report) {
  if (file_size < kLengthPrefixBytes) {
    report.at(Failure::file_too_small, 0,
              fmt::format("file is {} bytes long; a safetensors file starts with an 8-byte "
                          "little-endian header length",
                          file_size),
              "the file is empty or cut short; download it again");
    return false;
  }
  if (header_len > kMaxSafetensorsHeader) {
    report.at(Failure::header_too_large, 0,
              fmt::format("header length is {} bytes; the format allows at most {}", header_len, kMaxSafetensorsHeader),
              "the length prefix is implausible: the file is not safetensors, or is corrupted");
    return false;
  }
  const std::uint64_t available = file_size - kLengthPrefixBytes;
  if (header_len > available) {
    report.at(Failure::header_truncated, file_size,
              fmt::format("header is truncated: the length prefix announces {} header bytes but "
                          "only {} follow it (missing {} bytes)",
                          header_len, available, header_len - available),
              "the download stopped inside the header; download the file again");
    return false;
  }
  return true;
}

// --- One tensor entry ------------------------------------------------------------------------

class EntryParser {
 public:
  EntryParser(Reporter& report, std::vector<std::uint64_t>& dims) : report_(report), dims_(dims) {}

  Entry parse(std::string_view name, const JsonValue& value) {
    Entry e;
    e.name = name;
    if (value.type != JsonValue::Type::object) {
      report_.at_key(Failure::bad_entry, name,
                     fmt::format("tensor {}: entry is {}; expected an object with keys dtype, "
                                 "shape, data_offsets",
                                 shown(name), value.type_name()));
      return e;
    }
    bool seen_dtype = false, seen_shape = false, seen_offsets = false;
    for (const JsonMember& field : value.members) {
      if (key_is(field.key, "dtype")) {
        if (!repeated(name, field.key, seen_dtype)) e.dtype = parse_dtype_field(name, field.value);
      } else if (key_is(field.key, "shape")) {
        if (!repeated(name, field.key, seen_shape)) parse_shape_field(e, field.value);
      } else if (key_is(field.key, "data_offsets")) {
        if (!repeated(name, field.key, seen_offsets)) e.range = parse_offsets_field(name, field.value);
      } else {
        report_.at_key(Failure::bad_entry, name,
                       fmt::format("tensor {}: unexpected key {}; an entry has exactly dtype, "
                                   "shape, data_offsets",
                                   shown(name), shown(field.key)));
      }
    }
    report_missing_keys(name, seen_dtype, seen_shape, seen_offsets);
    return e;
  }

 private:
  // serde rejects a repeated field ("duplicate field"); so do we.
  bool repeated(std::string_view name, std::string_view key, bool& seen) {
    if (seen)
      report_.at_key(Failure::bad_entry, name,
                     fmt::format("tensor {}: key {} appears twice in its entry", shown(name), shown(key)));
    const bool was = seen;
    seen = true;
    return was;
  }

  void report_missing_keys(std::string_view name, bool dtype, bool shape, bool offsets) {
    std::vector<std::string_view> missing;
    if (!dtype) missing.push_back("dtype");
    if (!shape) missing.push_back("shape");
    if (!offsets) missing.push_back("data_offsets");
    if (missing.empty()) return;
    report_.at_key(Failure::bad_entry, name,
                   fmt::format("tensor {}: entry lacks {}; expected keys dtype, shape, data_offsets", shown(name),
                               fmt::join(missing, ", ")));
  }

  std::optional<DType> parse_dtype_field(std::string_view name, const JsonValue& value) {
    if (value.type != JsonValue::Type::string) {
      report_.at_key(Failure::bad_dtype, name,
                     fmt::format("tensor {}: dtype is {} ({}); expected one of {}", shown(name), value.type_name(),
                                 rendered(value), accepted_dtype_names()));
      return std::nullopt;
    }
    auto dtype = dtype_from_name(value.text);
    if (!dtype)
      report_.at_key(Failure::bad_dtype, name,
                     fmt::format("tensor {}: unknown dtype {}; expected one of {}", shown(name), shown(value.text),
                                 accepted_dtype_names()),
                     "dtype names are case-sensitive; a newer safetensors may know this dtype");
    return dtype;
  }

  void parse_shape_field(Entry& e, const JsonValue& value) {
    if (value.type != JsonValue::Type::array) {
      report_.at_key(Failure::bad_shape, e.name,
                     fmt::format("tensor {}: shape is {} ({}); expected an array of non-negative "
                                 "integers",
                                 shown(e.name), value.type_name(), rendered(value)));
      return;
    }
    const std::size_t first = dims_.size();
    std::size_t index = 0;
    for (const JsonValue& dim : value.items) {
      const auto extent = dim.as_uint64();
      if (!extent) {
        dims_.resize(first);
        report_.at_key(Failure::bad_shape, e.name,
                       fmt::format("tensor {}: shape[{}] is {}; expected a non-negative integer{} "
                                   "(shape {})",
                                   shown(e.name), index, rendered(dim), dim.is_big_integer() ? " below 2^64" : "",
                                   rendered(value)));
        return;
      }
      dims_.push_back(*extent);
      ++index;
    }
    e.shape_ok = true;
    e.dims_begin = static_cast<std::uint32_t>(first);
    e.dims_count = static_cast<std::uint32_t>(dims_.size() - first);
  }

  std::optional<DataRange> parse_offsets_field(std::string_view name, const JsonValue& value) {
    const bool pair = value.type == JsonValue::Type::array && value.items.size() == 2;
    const auto begin = pair ? value.items[0].as_uint64() : std::nullopt;
    const auto end = pair ? value.items[1].as_uint64() : std::nullopt;
    if (!begin || !end) {
      report_.at_key(Failure::bad_data_offsets, name,
                     fmt::format("tensor {}: data_offsets is {}; expected [begin, end], two "
                                 "non-negative integers",
                                 shown(name), rendered(value)));
      return std::nullopt;
    }
    const DataRange r{*begin, *end};
    if (r.end < r.begin) {
      report_.at_key(Failure::reversed_offsets, name,
                     fmt::format("tensor {}: data_offsets [{}, {}] end before begin; expected "
                                 "end >= begin",
                                 shown(name), r.begin, r.end));
      return std::nullopt;
    }
    return r;
  }

  Reporter& report_;
  std::vector<std::uint64_t>& dims_;
};

// --- Size of one tensor (tensor.rs Metadata::validate, per-tensor part) ------------------------

std::string shape_text(std::span<const std::uint64_t> dims) { return fmt::format("[{}]", fmt::join(dims, ", ")); }

// Checks numel x bits against the entry's byte range. Sets e.size_ok when the size is computable.
void check_tensor_size(Entry& e, std::span<const std::uint64_t> dims, Reporter& report) {
  if (!e.dtype || !e.shape_ok) return;
  const int bits = dtype_bits(*e.dtype);
  const auto dt = dtype_name(*e.dtype);
  // Same fold order as the crate (1 * d0 * d1 ...), so [0, huge, huge] is 0, not an overflow.
  std::uint64_t numel = 1, nbits = 0;
  bool overflow = false;
  for (std::uint64_t d : dims) overflow = overflow || __builtin_mul_overflow(numel, d, &numel);
  if (!overflow) overflow = __builtin_mul_overflow(numel, static_cast<std::uint64_t>(bits), &nbits);
  if (overflow) {
    report.at_key(Failure::size_overflow, e.name,
                  fmt::format("tensor {}: {} shape {} overflows 64-bit arithmetic (elements x {} "
                              "bits > 2^64)",
                              shown(e.name), dt, shape_text(dims), bits));
    return;
  }
  constexpr auto kMaxDim = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (std::any_of(dims.begin(), dims.end(), [](std::uint64_t d) { return d > kMaxDim; })) {
    // Only reachable with a zero-element shape; the crate accepts it but no framework can hold
    // such a dimension, and TensorInfo keeps signed extents.
    report.at_key(Failure::size_overflow, e.name,
                  fmt::format("tensor {}: shape {} has a dimension above 2^63-1", shown(e.name), shape_text(dims)));
    return;
  }
  e.size_ok = true;
  if (nbits % 8 != 0) {
    report.at_key(Failure::misaligned_bits, e.name,
                  fmt::format("tensor {}: {} x {} elements = {} bits, not a whole number of "
                              "bytes; expected a multiple of 8 bits",
                              shown(e.name), dt, numel, nbits),
                  "sub-byte dtypes (F4, F6_*) must pack into whole bytes");
    return;
  }
  if (!e.range) return;
  const std::uint64_t expected = nbits / 8, found = e.range->end - e.range->begin;
  if (found != expected)
    report.at_key(
        Failure::wrong_byte_length, e.name,
        fmt::format("tensor {}: data_offsets [{}, {}] span {} bytes; expected {} ({} "
                    "shape {} = {} elements x {} bits)",
                    shown(e.name), e.range->begin, e.range->end, found, expected, dt, shape_text(dims), numel, bits));
}

// --- Whole-header checks --------------------------------------------------------------------

void mark_duplicates(std::vector<Entry>& entries, detail::NameTable& seen, Reporter& report) {
  seen.reset(entries.size());
  auto name_of = [&entries](std::uint32_t i) { return entries[i].name; };
  for (std::uint32_t i = 0; i < entries.size(); ++i) {
    Entry& e = entries[i];
    e.name_hash = detail::NameTable::hash64(e.name);
    if (seen.try_emplace_hashed(e.name, detail::NameTable::fold(e.name_hash), i, name_of).second) continue;
    e.duplicate = true;
    report.at_key(Failure::duplicate_name, e.name,
                  fmt::format("tensor {} appears more than once in the header; tensor names must "
                              "be unique",
                              shown(e.name)),
                  "JSON readers disagree on which entry wins; rewrite the file");
  }
}

// The crate sorts entries by data_offsets and requires each to start where the previous ended
// (tensor.rs Metadata::validate); this walk reports each hole and overlap instead of the first.
// Returns the end of the data region (the largest end seen).
std::uint64_t check_layout(const std::vector<Entry>& entries, bool every_entry_placed,
                           std::vector<const Entry*>& placed, Reporter& report) {
  placed.clear();
  for (const Entry& e : entries)
    if (e.range) placed.push_back(&e);
  // Ties keep header order (entries are contiguous in memory), so diagnostics are deterministic.
  auto by_offsets = [](const Entry* a, const Entry* b) {
    return std::tie(a->range->begin, a->range->end, a) < std::tie(b->range->begin, b->range->end, b);
  };
  // Writers emit headers in offset order (tensor.rs prepare/serialize), so this is usually a scan.
  if (!std::is_sorted(placed.begin(), placed.end(), by_offsets)) std::sort(placed.begin(), placed.end(), by_offsets);

  std::uint64_t cursor = 0;         // end of the data covered so far
  const Entry* reaching = nullptr;  // the tensor whose data ends at `cursor`
  for (const Entry* e : placed) {
    const DataRange r = *e->range;
    // A hole is only certain when every entry had usable offsets: a malformed one may fill it.
    if (r.begin > cursor && every_entry_placed) {
      if (!reaching)
        report.at_data(Failure::data_not_at_zero, 0,
                       fmt::format("first tensor {} starts at data offset {}; expected 0 (data "
                                   "bytes [0, {}) belong to no tensor)",
                                   shown(e->name), r.begin, r.begin));
      else
        report.at_data(Failure::data_hole, cursor,
                       fmt::format("hole of {} bytes in the data region: tensor {} ends at {} but "
                                   "the next, {}, starts at {}; expected contiguous data",
                                   r.begin - cursor, shown(reaching->name), cursor, shown(e->name), r.begin));
    } else if (r.begin < cursor) {
      const std::uint64_t overlap_end = std::min(r.end, cursor);
      report.at_data(Failure::data_overlap, r.begin,
                     fmt::format("tensor {} (data_offsets [{}, {}]) overlaps tensor {} (data_offsets "
                                 "[{}, {}]) in data bytes [{}, {}) ({} bytes); expected it to start "
                                 "at {}",
                                 shown(e->name), r.begin, r.end, shown(reaching->name), reaching->range->begin,
                                 reaching->range->end, r.begin, overlap_end, overlap_end - r.begin, cursor));
    }
    if (!reaching || r.end >= cursor) {
      cursor = r.end;
      reaching = e;
    }
  }
  return cursor;
}

// The data region must end exactly at the end of the file (tensor.rs MetadataIncompleteBuffer):
// a shorter file is a cut-off download, a longer one carries bytes no tensor owns.
void check_file_coverage(std::uint64_t header_len, std::uint64_t data_end, std::uint64_t file_size,
                         bool every_entry_placed, Reporter& report) {
  const auto expected = checked_add(kLengthPrefixBytes + header_len, data_end);
  if (!expected) {
    report.at_data(Failure::data_truncated, 0,
                   fmt::format("header describes a data region of {} bytes, more than a file can "
                               "hold (file has {} bytes)",
                               data_end, file_size));
    return;
  }
  if (file_size < *expected) {
    report.at(Failure::data_truncated, file_size,
              fmt::format("file is truncated: header describes 8 + {} + {} = {} bytes but the file "
                          "has {} (missing {} bytes)",
                          header_len, data_end, *expected, file_size, *expected - file_size),
              "the download stopped early; download the file again");
  } else if (file_size > *expected && every_entry_placed) {
    report.at(Failure::trailing_bytes, *expected,
              fmt::format("file has {} trailing bytes after the data region: expected {} bytes "
                          "(8 + {} + {}), found {}",
                          file_size - *expected, *expected, header_len, data_end, file_size),
              "the format forbids bytes no tensor owns (polyglot files); the file was corrupted or "
              "appended to");
  }
}

void read_metadata_field(const JsonValue& value, SafetensorsFile& out, bool& seen, Reporter& report) {
  constexpr std::string_view kKey = "__metadata__";
  if (seen) {
    report.at_key(Failure::bad_metadata, kKey, "__metadata__ appears more than once in the header");
    return;
  }
  seen = true;
  if (value.is_null()) return;  // serde reads `null` into the crate's Option<HashMap> as None
  if (value.type != JsonValue::Type::object) {
    report.at_key(Failure::bad_metadata, kKey,
                  fmt::format("__metadata__ is {}; expected an object mapping strings to strings", value.type_name()));
    return;
  }
  for (const JsonMember& kv : value.members) {
    if (kv.value.type != JsonValue::Type::string) {
      report.at_key(Failure::bad_metadata, kKey,
                    fmt::format("__metadata__ value for {} is {} ({}); expected a string (the "
                                "format allows no other JSON)",
                                shown(kv.key), kv.value.type_name(), rendered(kv.value)));
      continue;
    }
    out.metadata.insert_or_assign(kv.key, kv.value.text);
  }
}

// Copies the names and dimensions of the entries that become tensors into one block each of
// `storage` (see TensorInfo) and appends the tensors, viewing those blocks, to `out`.
template <class Kept, class DimsOf>
void add_tensors(const std::vector<Entry>& entries, Kept kept, DimsOf dims_of, std::pmr::memory_resource* storage,
                 SafetensorsFile& out) {
  std::size_t name_bytes = 0, dim_count = 0, count = 0;
  for (const Entry& e : entries)
    if (kept(e)) {
      name_bytes += e.name.size();
      dim_count += e.dims_count;
      ++count;
    }
  if (count == 0) return;
  // Shapes first: the block is 8-byte aligned and the names after it need no alignment.
  std::byte* block =
      static_cast<std::byte*>(storage->allocate(dim_count * sizeof(std::int64_t) + name_bytes, alignof(std::int64_t)));
  auto* dims = reinterpret_cast<std::int64_t*>(block);
  char* names = reinterpret_cast<char*>(block + dim_count * sizeof(std::int64_t));
  out.tensors.reserve(count);
  for (const Entry& e : entries) {
    if (!kept(e)) continue;
    // check_tensor_size has established that every extent fits int64 (size_ok).
    const std::span<const std::uint64_t> extents = dims_of(e);
    std::copy(extents.begin(), extents.end(), dims);
    std::memcpy(names, e.name.data(), e.name.size());
    out.tensors.push_back(TensorInfo{.name = std::string_view(names, e.name.size()),
                                     .shape = std::span<const std::int64_t>(dims, extents.size()),
                                     .begin = e.range->begin,
                                     .end = e.range->end,
                                     .file = 0,
                                     .dtype = *e.dtype});
    out.data_end = std::max(out.data_end, e.range->end);
    dims += extents.size();
    names += e.name.size();
  }
}

}  // namespace

namespace detail {

// What a HeaderReader keeps between files.
struct HeaderReader::Scratch {
  std::optional<JsonValue> tree;  // the full parser's reading of the last non-plain header
  std::vector<char> header;       // N bytes + kJsonPadding
  std::vector<Entry> entries;
  std::vector<std::uint64_t> dims;
  std::vector<const Entry*> placed;
  NameTable names;
  // Where this reader's results live: shared by every file it reads, kept alive by them.
  std::shared_ptr<platform::HugePageArena> storage = std::make_shared<platform::HugePageArena>();
  bool plain_scan = true;
  std::pmr::vector<std::uint64_t> name_hashes{storage.get()};  // of the last file's tensors

  // The header buffer resized to N + padding, the padding zeroed (the plain scan reads into it).
  char* header_buffer(std::size_t n) {
    header.resize(n + detail::kJsonPadding);
    std::memset(header.data() + n, 0, detail::kJsonPadding);
    return header.data();
  }
};

}  // namespace detail

namespace {

// The full parser: reads any header into entries (scratch.entries, scratch.dims) and
// out.metadata, reporting every way it breaks the format. False when it is not UTF-8 or not a
// JSON object. The entries' names point into scratch.tree.
bool parse_header_tree(std::string_view text, SafetensorsFile& out, Reporter& report,
                       detail::HeaderReader::Scratch& scratch) {
  if (const auto at = util::first_invalid_utf8(text)) {
    report.at(Failure::header_not_utf8, kLengthPrefixBytes + *at,
              fmt::format("header is not valid UTF-8: invalid byte 0x{:02x} at header offset {}",
                          static_cast<unsigned char>(text[*at]), *at));
    return false;
  }
  auto parsed = detail::parse_json_tree(text);
  if (auto* error = std::get_if<detail::JsonSyntaxError>(&parsed)) {
    report.at(Failure::header_not_json, kLengthPrefixBytes,
              fmt::format("header is not valid JSON: {}", error->message));
    return false;
  }
  const JsonValue& root = scratch.tree.emplace(std::get<JsonValue>(std::move(parsed)));
  if (root.type != JsonValue::Type::object) {
    report.at(Failure::header_not_object, kLengthPrefixBytes,
              fmt::format("header JSON is {}; expected an object mapping tensor names to entries", root.type_name()));
    return false;
  }
  scratch.entries.reserve(root.members.size());
  EntryParser entry_parser(report, scratch.dims);
  bool seen_metadata = false;
  for (const JsonMember& field : root.members) {
    if (key_is(field.key, "__metadata__"))
      read_metadata_field(field.value, out, seen_metadata, report);
    else
      scratch.entries.push_back(entry_parser.parse(field.key, field.value));
  }
  return true;
}

// Validates a header whose N bytes sit at `padded` followed by kJsonPadding readable bytes.
std::optional<SafetensorsFile> parse_padded_header(const char* padded, std::uint64_t header_len,
                                                   std::uint64_t file_size, const std::string& label, Reporter& report,
                                                   detail::HeaderReader::Scratch& scratch) {
  const std::string_view text(padded, header_len);
  scratch.name_hashes.clear();
  scratch.tree.reset();
  report.set_header(text, header_len);
  // The table is built in the reader's arena. pmr containers keep their memory resource for life
  // (moving assigns elements, not the resource), so it is given at construction.
  SafetensorsFile out{.storage = scratch.storage,
                      .path = label,
                      .header_len = header_len,
                      .file_size = file_size,
                      .metadata = {},
                      .tensors = std::pmr::vector<TensorInfo>(scratch.storage.get())};
  std::vector<Entry>& entries = scratch.entries;
  std::vector<std::uint64_t>& dims = scratch.dims;
  entries.clear();
  dims.clear();
  // Nearly every header is plain (load/plain_json.hpp) and is read in one pass, its UTF-8 checked
  // on the way; the full parser reads the rest, and reports what is wrong with them.
  if (!scratch.plain_scan || !detail::scan_plain_header(text, entries, dims, out.metadata)) {
    entries.clear();
    dims.clear();
    out.metadata.clear();
    if (!parse_header_tree(text, out, report, scratch)) return std::nullopt;
  }

  auto dims_of = [&dims](const Entry& e) {
    return std::span<const std::uint64_t>(dims.data() + e.dims_begin, e.dims_count);
  };
  for (Entry& e : entries) check_tensor_size(e, dims_of(e), report);
  mark_duplicates(entries, scratch.names, report);
  const bool every_entry_placed =
      std::all_of(entries.begin(), entries.end(), [](const Entry& e) { return e.range.has_value(); });
  const std::uint64_t data_end = check_layout(entries, every_entry_placed, scratch.placed, report);
  check_file_coverage(header_len, data_end, file_size, every_entry_placed, report);

  auto kept = [](const Entry& e) { return e.dtype && e.size_ok && e.range && !e.duplicate; };
  add_tensors(entries, kept, dims_of, scratch.storage.get(), out);
  scratch.name_hashes.reserve(out.tensors.size());
  for (const Entry& e : entries)
    if (kept(e)) scratch.name_hashes.push_back(e.name_hash);
  return out;
}

// --- Reading a file ---------------------------------------------------------------------------

// Reads exactly `size` bytes at `offset`; false on error or early end of file.
bool read_exactly(int fd, char* dst, std::size_t size, std::uint64_t offset) {
  while (size > 0) {
    const ssize_t got = ::pread(fd, dst, size, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    dst += got;
    size -= static_cast<std::size_t>(got);
    offset += static_cast<std::uint64_t>(got);
  }
  return true;
}

// Closes a POSIX file descriptor on every return path.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

namespace detail {

HeaderReader::HeaderReader() : scratch_(std::make_unique<Scratch>()) {}
HeaderReader::~HeaderReader() = default;

void HeaderReader::set_plain_scan(bool on) { scratch_->plain_scan = on; }

std::pmr::vector<std::uint64_t> HeaderReader::take_name_hashes() { return std::move(scratch_->name_hashes); }

std::optional<SafetensorsFile> HeaderReader::read_file(const std::filesystem::path& path, const std::string& label,
                                                       DiagnosticSink& sink) {
  Reporter report(label, sink);
  auto io_failure = [&](const std::string& why) {
    report.at(Failure::io_error, std::nullopt, fmt::format("cannot read safetensors file: {}", why));
    return std::nullopt;
  };
  // One path lookup per file (open, then fstat on the descriptor) instead of three: a checkpoint
  // has up to ~200 shards. O_NONBLOCK so that a FIFO named like a shard cannot block the open; it
  // changes nothing for a regular file's reads.
  const FileDescriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (file.get() < 0) return io_failure(errno == ENOENT || errno == ENOTDIR ? "no such file" : std::strerror(errno));
  struct stat status {};
  if (::fstat(file.get(), &status) != 0) return io_failure(std::strerror(errno));
  if (!S_ISREG(status.st_mode)) return io_failure("not a regular file");
  const auto file_size = static_cast<std::uint64_t>(status.st_size);

  std::uint64_t header_len = 0;
  if (file_size >= kLengthPrefixBytes) {
    std::array<unsigned char, kLengthPrefixBytes> prefix{};
    if (!read_exactly(file.get(), reinterpret_cast<char*>(prefix.data()), prefix.size(), 0))
      return io_failure("short read of the 8-byte header length");
    for (int i = kLengthPrefixBytes - 1; i >= 0; --i) header_len = (header_len << 8) | prefix[i];
  }
  if (!check_length_prefix(header_len, file_size, report)) return std::nullopt;

  // N <= 100 MB and N <= file size here, so the buffer is bounded by what is on disk.
  const auto n = static_cast<std::size_t>(header_len);
  char* buffer = scratch_->header_buffer(n);
  if (!read_exactly(file.get(), buffer, n, kLengthPrefixBytes))
    return io_failure("the file shrank while its header was being read");
  return parse_padded_header(buffer, header_len, file_size, label, report, *scratch_);
}

std::optional<SafetensorsFile> HeaderReader::parse(std::string_view header_json, std::uint64_t header_len,
                                                   std::uint64_t file_size, const std::string& label,
                                                   DiagnosticSink& sink) {
  Reporter report(label, sink);
  if (!check_length_prefix(header_len, file_size, report)) return std::nullopt;
  if (header_json.size() < header_len) {
    // The caller holds fewer bytes than N (e.g. a partial range request): as good as truncated.
    report.at(Failure::header_truncated, kLengthPrefixBytes + header_json.size(),
              fmt::format("header is truncated: the length prefix announces {} header bytes but "
                          "only {} are available (missing {} bytes)",
                          header_len, header_json.size(), header_len - header_json.size()));
    return std::nullopt;
  }
  const auto n = static_cast<std::size_t>(header_len);
  char* buffer = scratch_->header_buffer(n);
  if (n) std::memcpy(buffer, header_json.data(), n);
  return parse_padded_header(buffer, header_len, file_size, label, report, *scratch_);
}

std::string shown(std::string_view name) {
  std::string out;
  out.reserve(name.size() + 2);
  for (const char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else if (c == '\'' || c == '\\')
      (out += '\\') += ch;
    else
      out += ch;
  }
  return "'" + cut(std::move(out), 200) + "'";
}

std::optional<std::size_t> KeyLocator::find(std::string_view key) {
  if (!scanned_) scan();
  auto it = first_offset_.find(key);
  if (it == first_offset_.end()) return std::nullopt;
  return it->second;
}

std::pair<int, int> KeyLocator::line_column(std::size_t offset) {
  if (line_starts_.empty()) {
    line_starts_.push_back(0);
    for (std::size_t i = 0; i < json_.size(); ++i)
      if (json_[i] == '\n') line_starts_.push_back(i + 1);
  }
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  const auto line = static_cast<std::size_t>(it - line_starts_.begin());  // >= 1
  return {static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1] + 1)};
}

void KeyLocator::scan() {
  scanned_ = true;
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  const std::size_t n = json_.size();
  int depth = 0;
  std::size_t i = 0;
  while (i < n) {
    const char c = json_[i];
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    if (c != '"') {
      ++i;
      continue;
    }
    const std::size_t open = i++;
    while (i < n && json_[i] != '"') i += json_[i] == '\\' ? 2 : 1;
    const std::size_t close = std::min(i, n);
    std::size_t next = close + 1;
    while (next < n && is_space(json_[next])) ++next;
    if (next < n && json_[next] == ':' && depth == depth_)
      first_offset_.try_emplace(json_.substr(open + 1, close - open - 1), open);
    i = close + 1;
  }
}

}  // namespace detail

std::optional<SafetensorsFile> parse_safetensors_header(std::string_view header_json, std::uint64_t header_len,
                                                        std::uint64_t file_size, const std::string& label,
                                                        DiagnosticSink& sink) {
  return detail::HeaderReader().parse(header_json, header_len, file_size, label, sink);
}

std::optional<SafetensorsFile> read_safetensors_file(const std::filesystem::path& path, const std::string& label,
                                                     DiagnosticSink& sink) {
  return detail::HeaderReader().read_file(path, label, sink);
}

}  // namespace shardcheck
