// libFuzzer harness for the safetensors header validator (src/load/safetensors.cpp).
//
// The input is a whole file image, split the way the reader splits a file: the first 8 bytes are
// the little-endian header length N, the rest is handed over as the header (of which the parser
// takes N bytes), and the input size stands in for the file size, so the data-coverage checks
// run too. Beyond "no crash, no hang, no out-of-bounds read" (ASan/UBSan), it checks that a header
// reported as clean really is valid: contiguous tensors from offset 0 that cover the data region.
// It also reads every input twice, with and without the plain one-pass scan (load/plain_json.hpp),
// and requires the same tensors, metadata and diagnostics from both: the fast path may only accept
// what it reads exactly as the full parser does.
//   scripts/fuzz.sh builds this with clang (-fsanitize=fuzzer) and seeds it from fixtures/broken.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "load/safetensors_detail.hpp"
#include "shardcheck/checkpoint.hpp"

namespace {

[[noreturn]] void invariant_broken() { __builtin_trap(); }

void check_clean_file(const shardcheck::SafetensorsFile& file, std::size_t input_size) {
  std::vector<const shardcheck::TensorInfo*> by_offset;
  for (const auto& t : file.tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](auto* a, auto* b) { return a->begin != b->begin ? a->begin < b->begin : a->end < b->end; });
  std::uint64_t cursor = 0;
  for (const auto* t : by_offset) {
    if (t->begin != cursor || t->end < t->begin) invariant_broken();
    const std::uint64_t bits =
        static_cast<std::uint64_t>(t->numel()) * static_cast<std::uint64_t>(shardcheck::dtype_bits(t->dtype));
    if (bits % 8 != 0 || bits / 8 != t->end - t->begin) invariant_broken();
    cursor = t->end;
  }
  if (8 + file.header_len + cursor != input_size) invariant_broken();
}

bool same_tensors(const shardcheck::SafetensorsFile& a, const shardcheck::SafetensorsFile& b) {
  if (a.tensors.size() != b.tensors.size() || a.metadata != b.metadata || a.header_len != b.header_len) return false;
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    const auto &x = a.tensors[i], &y = b.tensors[i];
    if (x.name != y.name || x.dtype != y.dtype || !std::ranges::equal(x.shape, y.shape) || x.begin != y.begin ||
        x.end != y.end)
      return false;
  }
  return true;
}

bool same_diagnostics(const shardcheck::DiagnosticSink& a, const shardcheck::DiagnosticSink& b) {
  if (a.items().size() != b.items().size()) return false;
  for (std::size_t i = 0; i < a.items().size(); ++i) {
    const auto &x = a.items()[i], &y = b.items()[i];
    if (x.code != y.code || x.message != y.message || x.location.byte_offset != y.location.byte_offset) return false;
  }
  return true;
}

// Both header paths on the same input.
void compare_paths(std::string_view rest, std::uint64_t header_len, std::size_t size) {
  shardcheck::detail::HeaderReader plain, full;
  full.set_plain_scan(false);
  shardcheck::DiagnosticSink plain_sink, full_sink;
  const auto a = plain.parse(rest, header_len, size, "fuzz.safetensors", plain_sink);
  const auto b = full.parse(rest, header_len, size, "fuzz.safetensors", full_sink);
  if (a.has_value() != b.has_value() || !same_diagnostics(plain_sink, full_sink)) invariant_broken();
  if (a && !same_tensors(*a, *b)) invariant_broken();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::uint64_t header_len = 0;
  std::string_view rest;
  if (size >= 8) {
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | data[i];
    rest = std::string_view(reinterpret_cast<const char*>(data) + 8, size - 8);
  }
  shardcheck::DiagnosticSink sink;
  const auto file = shardcheck::parse_safetensors_header(rest, header_len, size, "fuzz.safetensors", sink);
  for (const auto& d : sink.items())
    if (d.code.size() != 5 || d.message.empty() || d.location.file != "fuzz.safetensors") invariant_broken();
  if (file && !sink.has_errors()) check_clean_file(*file, size);
  if (!file && !sink.has_errors()) invariant_broken();  // a rejection always says why
  compare_paths(rest, header_len, size);
  return 0;
}
