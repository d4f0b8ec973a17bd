#include "util/utf8.hpp"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace shardcheck::util {

std::optional<std::size_t> first_invalid_utf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
#if defined(__SSE2__)
    // Whole blocks of ASCII: no byte has its top bit set.
    while (i + 16 <= n) {
      const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      const int high = _mm_movemask_epi8(block);
      if (high) {
        i += static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(high)));
        break;
      }
      i += 16;
    }
    if (i >= n) break;
#endif
    const std::size_t length = utf8_sequence_length(p + i, n - i);
    if (length == 0) return i;
    i += length;
  }
  return std::nullopt;
}

}  // namespace shardcheck::util
