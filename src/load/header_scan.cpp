// The fast path of the safetensors header reader: one pass over a header in the plain form that
// writers produce (safetensors' serializer, tensor.rs `prepare`/`serialize`: tensor entries with
// exactly "dtype", "shape", "data_offsets", integer values, an optional "__metadata__" map of
// strings). Anything else, valid or not, is left to the full parser in safetensors.cpp, which
// accepts or reports it; see load/plain_json.hpp.

#include "load/plain_json.hpp"
#include "load/safetensors_detail.hpp"

namespace shardcheck::detail {
namespace {

// `[d0, d1, ...]` of non-negative integers, appended to dims.
bool scan_shape(PlainJson& in, std::vector<std::uint64_t>& dims) {
  if (!in.eat('[')) return false;
  if (in.eat(']')) return true;
  do {
    std::uint64_t d;
    if (!in.uint(d)) return false;
    dims.push_back(d);
  } while (in.eat(','));
  return in.eat(']');
}

// `[begin, end]` with begin <= end (the full parser reports a reversed pair).
bool scan_offsets(PlainJson& in, DataRange& r) {
  return in.eat('[') && in.uint(r.begin) && in.eat(',') && in.uint(r.end) && in.eat(']') && r.begin <= r.end;
}

// The entry exactly as the safetensors crate writes it: serde_json's compact form of its
// TensorInfo, fields in declaration order (safetensors/src/tensor.rs `TensorInfo`, `prepare`):
//   {"dtype":"BF16","shape":[7168,2048],"data_offsets":[0,29360128]}
// Compared byte for byte, it skips the five string scans and key comparisons per tensor that
// scan_entry makes (92k tensors in DeepSeek-V3). Any other spelling returns false with the cursor,
// `e` and `dims` as they were, for scan_entry to read.
bool scan_canonical_entry(PlainJson& in, Entry& e, std::vector<std::uint64_t>& dims) {
  const char* start = in.position();
  const std::size_t dims_before = dims.size();
  std::string_view dtype;
  DataRange r;
  bool ok = in.exact(R"({"dtype":")") && in.identifier_until_quote(dtype) &&
            (e.dtype = dtype_from_name(dtype)).has_value() && in.exact(R"(,"shape":[)");
  if (ok && !in.exact("]")) {
    do {
      std::uint64_t d;
      if (!(ok = in.uint(d))) break;
      dims.push_back(d);
    } while (in.exact(","));
    ok = ok && in.exact("]");
  }
  ok = ok && in.exact(R"(,"data_offsets":[)") && in.uint(r.begin) && in.exact(",") && in.uint(r.end) &&
       in.exact("]}") && r.begin <= r.end;
  if (!ok) {
    in.rewind(start);
    dims.resize(dims_before);
    e.dtype.reset();
    return false;
  }
  e.dims_begin = static_cast<std::uint32_t>(dims_before);
  e.dims_count = static_cast<std::uint32_t>(dims.size() - dims_before);
  e.shape_ok = true;
  e.range = r;
  return true;
}

// `{"dtype": "...", "shape": [...], "data_offsets": [b, e]}` in any order, each key once.
bool scan_entry(PlainJson& in, Entry& e, std::vector<std::uint64_t>& dims) {
  if (!in.eat('{')) return false;
  bool dtype = false, shape = false, offsets = false;
  do {
    std::string_view key;
    if (!in.string(key) || !in.eat(':')) return false;
    if (key == "dtype" && !dtype) {
      std::string_view name;
      if (!in.string(name) || !(e.dtype = dtype_from_name(name))) return false;
      dtype = true;
    } else if (key == "shape" && !shape) {
      e.dims_begin = static_cast<std::uint32_t>(dims.size());
      if (!scan_shape(in, dims)) return false;
      e.dims_count = static_cast<std::uint32_t>(dims.size() - e.dims_begin);
      e.shape_ok = shape = true;
    } else if (key == "data_offsets" && !offsets) {
      DataRange r;
      if (!scan_offsets(in, r)) return false;
      e.range = r;
      offsets = true;
    } else {
      return false;  // an unknown or repeated key
    }
  } while (in.eat(','));
  return in.eat('}') && dtype && shape && offsets;
}

// `{"key": "value", ...}`
bool scan_metadata(PlainJson& in, std::map<std::string, std::string>& metadata) {
  if (!in.eat('{')) return false;
  if (in.eat('}')) return true;
  do {
    std::string_view key, value;
    if (!in.string(key) || !in.eat(':') || !in.string(value)) return false;
    metadata.insert_or_assign(std::string(key), std::string(value));
  } while (in.eat(','));
  return in.eat('}');
}

}  // namespace

bool scan_plain_header(std::string_view text, std::vector<Entry>& entries, std::vector<std::uint64_t>& dims,
                       std::map<std::string, std::string>& metadata) {
  PlainJson in(text.data(), text.data() + text.size());
  if (!in.eat('{')) return false;
  if (in.eat('}')) return in.at_end();
  bool seen_metadata = false;
  do {
    std::string_view name;
    if (!in.string(name) || !in.eat(':')) return false;
    if (name == "__metadata__") {
      if (seen_metadata || !scan_metadata(in, metadata)) return false;
      seen_metadata = true;
      continue;
    }
    Entry& e = entries.emplace_back();
    e.name = name;
    in.skip_ws();
    if (!scan_canonical_entry(in, e, dims) && !scan_entry(in, e, dims)) return false;
  } while (in.eat(','));
  return in.eat('}') && in.at_end();
}

}  // namespace shardcheck::detail
