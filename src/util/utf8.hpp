#pragma once
// UTF-8 validation for JSON text read from disk (safetensors headers, index files).
//
// The rules are RFC 3629's (table 3-7 of the Unicode standard): no overlong forms, no surrogates
// (U+D800..U+DFFF), nothing above U+10FFFF. These are the rules the safetensors crate applies
// (Rust's std::str::from_utf8 in tensor.rs read_metadata) before it reads a header as JSON.

#include <cstddef>
#include <optional>
#include <string_view>

namespace shardcheck::util {

// Length of the well-formed sequence that starts at `p`, reading at most `available` bytes;
// 0 when the bytes there are not one (a stray continuation byte, a cut sequence, an overlong
// form, a surrogate, a code point above U+10FFFF).
inline std::size_t utf8_sequence_length(const unsigned char* p, std::size_t available) {
  const unsigned char c = p[0];
  if (c < 0x80) return 1;
  std::size_t length;
  unsigned char second_min = 0x80, second_max = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    length = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    length = 3;
    if (c == 0xE0) second_min = 0xA0;  // below: overlong
    if (c == 0xED) second_max = 0x9F;  // above: surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    length = 4;
    if (c == 0xF0) second_min = 0x90;  // below: overlong
    if (c == 0xF4) second_max = 0x8F;  // above: beyond U+10FFFF
  } else {
    return 0;  // 0x80-0xC1 (continuation or overlong lead), 0xF5-0xFF
  }
  if (available < length || p[1] < second_min || p[1] > second_max) return 0;
  for (std::size_t k = 2; k < length; ++k)
    if (p[k] < 0x80 || p[k] > 0xBF) return 0;
  return length;
}

// Offset of the first byte that breaks UTF-8; nullopt when all of `text` is well formed.
// ASCII is skipped 16 bytes at a time.
std::optional<std::size_t> first_invalid_utf8(std::string_view text);

}  // namespace shardcheck::util
