#pragma once
// A cursor over JSON text for the plain shape that safetensors headers and index files nearly
// always have: strings without escape sequences, non-negative integers, no nesting beyond what
// the caller expects. It is not a JSON parser. Every method says "no" to anything outside that
// subset, and the caller then hands the whole text to the full parser (load/json_tree.hpp), which
// accepts or rejects it and reports the problem exactly. So the fast path may only ever accept
// text whose meaning it reads exactly as the full parser would; fuzz/fuzz_safetensors.cpp and
// fuzz/fuzz_index.cpp compare the two on every input.
//
// Why: a DOM materialises every string and value before the loader looks at it. For DeepSeek-V3
// (20 MB of headers and index, 92k tensors) simdjson's tape alone was ~40% of the page faults of
// `inspect`, and its two passes most of the parse time. Read once, in place, the names stay views
// into the text, and the UTF-8 check rides along with the string scan.
//
// Text must be followed by at least 16 readable bytes (the kJsonPadding bytes that every buffer
// here carries, load/padded_file.hpp): strings are scanned 16 bytes at a time.

#include <cstdint>
#include <cstring>
#include <string_view>

#include "util/utf8.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace shardcheck::detail {

class PlainJson {
 public:
  PlainJson(const char* begin, const char* end) : p_(begin), end_(end) {}

  // Skips JSON whitespace (RFC 8259: space, tab, line feed, carriage return).
  void skip_ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  // Consumes `c` after optional whitespace.
  bool eat(char c) {
    skip_ws();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }

  // True when only whitespace is left.
  bool at_end() {
    skip_ws();
    return p_ == end_;
  }

  // A string with no escape and no control character, and well-formed UTF-8 (util/utf8.hpp),
  // after optional whitespace; `out` views the text between the quotes. Anything else (including
  // an unterminated string) is "no", and then the cursor has not moved past the whitespace, so
  // that another reading can be tried there. Because every non-ASCII byte a plain text may hold is
  // inside a string, a text this cursor reads to the end is valid UTF-8 without a separate pass.
  bool string(std::string_view& out) {
    if (!eat('"')) return false;
    const char* opening = p_ - 1;
    const char* start = p_;
    const char* q = p_;
    for (;;) {
      q = next_special(q);
      if (q >= end_) break;
      const auto c = static_cast<unsigned char>(*q);
      if (c < 0x80) break;  // the closing quote, or an escape or control character
      const std::size_t length =
          util::utf8_sequence_length(reinterpret_cast<const unsigned char*>(q), static_cast<std::size_t>(end_ - q));
      if (length == 0) break;
      q += length;
    }
    if (q >= end_ || *q != '"') {
      p_ = opening;
      return false;
    }
    out = std::string_view(start, static_cast<std::size_t>(q - start));
    p_ = q + 1;
    return true;
  }

  // A non-negative integer in JSON's form (no leading zero, no sign, fraction or exponent) that
  // fits 64 bits, after optional whitespace. On "no" the cursor stays before the number.
  bool uint(std::uint64_t& out) {
    skip_ws();
    const char* start = p_;
    const char* q = p_;
    std::uint64_t v = 0;
    // Up to 19 digits cannot overflow 64 bits, so only a 20th is checked (2^64 has 20 digits).
    while (q < end_ && static_cast<unsigned>(*q - '0') < 10 && q - start < 19)
      v = v * 10 + static_cast<unsigned>(*q++ - '0');
    while (q < end_ && static_cast<unsigned>(*q - '0') < 10) {
      if (__builtin_mul_overflow(v, 10u, &v) || __builtin_add_overflow(v, static_cast<unsigned>(*q - '0'), &v))
        return false;
      ++q;
    }
    if (q == start) return false;
    if (*start == '0' && q - start > 1) return false;  // leading zero: not JSON
    // 1.5, 1e3, 1E3: a number this cursor does not read as an integer.
    if (q < end_ && (*q == '.' || *q == 'e' || *q == 'E')) return false;
    p_ = q;
    out = v;
    return true;
  }

  // Exactly the bytes of `token` here, no whitespace skipped (for the byte-exact forms writers
  // emit: a literal array, so that the length is a constant and the compare is inlined).
  template <std::size_t N>
  bool exact(const char (&token)[N]) {
    constexpr std::size_t n = N - 1;  // without the terminating NUL
    if (static_cast<std::size_t>(end_ - p_) < n || !same_bytes<n>(p_, token)) return false;
    p_ += n;
    return true;
  }

  // Letters, digits and '_' up to a closing quote, which is consumed; `out` views them. For a
  // name known to be a short identifier (a dtype), where the string scan's setup costs more than
  // the bytes. On "no" the cursor has not moved.
  bool identifier_until_quote(std::string_view& out) {
    const char* q = p_;
    while (q < end_ &&
           (static_cast<unsigned>((*q | 0x20) - 'a') < 26 || static_cast<unsigned>(*q - '0') < 10 || *q == '_'))
      ++q;
    if (q >= end_ || *q != '"') return false;
    out = std::string_view(p_, static_cast<std::size_t>(q - p_));
    p_ = q + 1;
    return true;
  }

  // Where the cursor is, and a way back to it after a reading that said no part way.
  const char* position() const { return p_; }
  void rewind(const char* to) { p_ = to; }

  // One of the literals true, false, null, after optional whitespace.
  bool literal() {
    skip_ws();
    for (std::string_view word : {std::string_view("true"), std::string_view("false"), std::string_view("null")}) {
      if (static_cast<std::size_t>(end_ - p_) >= word.size() && std::memcmp(p_, word.data(), word.size()) == 0) {
        p_ += word.size();
        return true;
      }
    }
    return false;
  }

 private:
  // Whether the n bytes at a and b are equal, in a few word compares (overlapping where n is not
  // a multiple of the word), since a memcmp call per key costs more than the key.
  template <std::size_t n>
  static bool same_bytes(const char* a, const char* b) {
    if constexpr (n == 0) {
      return true;
    } else if constexpr (n < 4) {
      return a[0] == b[0] && same_bytes<n - 1>(a + 1, b + 1);
    } else if constexpr (n <= 8) {
      return word<std::uint32_t>(a) == word<std::uint32_t>(b) &&
             word<std::uint32_t>(a + n - 4) == word<std::uint32_t>(b + n - 4);
    } else if constexpr (n <= 16) {
      return word<std::uint64_t>(a) == word<std::uint64_t>(b) &&
             word<std::uint64_t>(a + n - 8) == word<std::uint64_t>(b + n - 8);
    } else {
      return word<std::uint64_t>(a) == word<std::uint64_t>(b) && same_bytes<n - 8>(a + 8, b + 8);
    }
  }
  template <class Word>
  static Word word(const char* p) {
    Word w;
    std::memcpy(&w, p, sizeof w);
    return w;
  }

  // The first byte at or after `q` that a plain string cannot simply pass over: a quote, a
  // backslash, a control character (<= 0x1F, which JSON strings may not hold raw) or a non-ASCII
  // byte (>= 0x80, whose sequence must be checked); end_ or beyond when there is none before it.
  const char* next_special(const char* q) const {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), ctl_max = _mm_set1_epi8(0x1F);
    for (; q < end_; q += 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
      const __m128i ctl = _mm_cmpeq_epi8(_mm_max_epu8(v, ctl_max), ctl_max);
      const __m128i stops = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)), ctl);
      // movemask of v itself: the top bit of each byte, set exactly for non-ASCII bytes.
      const auto stop = static_cast<unsigned>(_mm_movemask_epi8(stops) | _mm_movemask_epi8(v));
      if (stop) return q + __builtin_ctz(stop);
    }
    return q;
#else
    while (q < end_) {
      const auto c = static_cast<unsigned char>(*q);
      if (c == '"' || c == '\\' || c <= 0x1F || c >= 0x80) break;
      ++q;
    }
    return q;
#endif
  }

  const char* p_;
  const char* end_;
};

}  // namespace shardcheck::detail
