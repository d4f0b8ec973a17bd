// libFuzzer harness: every parser of the Hub model source that reads untrusted text — model
// references from the command line, response header lines, Content-Range and Retry-After values
// from the network, a model.safetensors.index.json's weight_map (to size range requests) — must
// reject bad input cleanly and keep its own invariants.
#include <cstdint>
#include <string>
#include <string_view>

#include "load/hub/hub_detail.hpp"
#include "load/hub/http_text.hpp"
#include "shardcheck/hub.hpp"

using namespace shardcheck;
using namespace shardcheck::hub;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (auto ref = parse_model_ref(text)) {
    // An accepted id never leads outside the cache folder it names.
    const std::string folder = repo_folder_name(*ref);
    if (folder.find("..") != std::string::npos || folder.find('/') != std::string::npos) __builtin_trap();
    // ... nor a revision that climbs out of refs/ (it becomes the path refs/<revision>).
    if (ref->revision.empty() || ref->revision.find("..") != std::string::npos || ref->revision.front() == '/')
      __builtin_trap();
    (void)url_quote(ref->revision, false);
  }
  if (auto field = split_header_line(text)) {
    if (field->first.empty()) __builtin_trap();
    (void)parse_content_range(field->second);
    (void)parse_retry_after_seconds(field->second);
  }
  if (auto cr = parse_content_range(text)) {
    if (cr->first > cr->last) __builtin_trap();
    if (cr->complete && *cr->complete <= cr->last) __builtin_trap();
  }
  (void)parse_decimal_u64(text);
  const std::string quoted = url_quote(text, true);
  for (char c : quoted)
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) __builtin_trap();
  if (auto shards = index_shards(text))
    for (const IndexedShard& s : *shards)
      if (s.name.empty() || s.tensors == 0) __builtin_trap();
  return 0;
}
