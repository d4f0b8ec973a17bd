#include "smoke/pattern.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

namespace shardcheck::smoke {
namespace {

// splitmix64 (Steele, Lea, Flood 2014): every input bit affects every output bit, so a shard
// shifted by any number of elements, or a unit mixed up with another, changes the bits.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void put_bits(std::byte* dst, std::uint64_t bits, int width) {
  for (int b = 0; b < width; ++b) dst[b] = static_cast<std::byte>((bits >> (8 * b)) & 0xFF);  // little endian
}

// Walks the segments of the whole padded buffer that intersect [lo, hi).
template <class F>
void for_segments(const UnitLayout& u, std::int64_t lo, std::int64_t hi, F&& f) {
  for (const auto& segs : u.ranks)
    for (const auto& s : segs) {
      const std::int64_t a = std::max(lo, s.offset), b = std::min(hi, s.offset + s.numel);
      if (a < b) f(s, a, b);
    }
}

}  // namespace

std::uint64_t pattern_bits(int unit, std::int64_t offset) {
  return mix((static_cast<std::uint64_t>(unit) << 48) ^ static_cast<std::uint64_t>(offset));
}

void materialize(const UnitLayout& u, std::int64_t lo, std::int64_t numel, const RealBytes* real, std::byte* dst) {
  const int w = element_bytes(u.dtype);
  std::memset(dst, kSentinelByte, static_cast<std::size_t>(numel * w));
  for_segments(u, lo, lo + numel, [&](const Segment& s, std::int64_t a, std::int64_t b) {
    if (s.param < 0) return;
    std::byte* out = dst + (a - lo) * w;
    if (real) {
      (*real)(s.param, s.param_offset + (a - s.offset), b - a, out);
    } else {
      // Each TP rank's pieces get their own pattern, so that a shard group that mixed TP ranks would
      // gather elements it cannot verify.
      const int seed = u.index + 4099 * u.tp_rank;
      for (std::int64_t g = a; g < b; ++g, out += w) put_bits(out, pattern_bits(seed, g), w);
    }
  });
}

void fill_shard(const UnitLayout& u, int rank, std::int64_t shift, const RealBytes* real, std::byte* dst) {
  materialize(u, rank * u.shard_numel + shift, u.shard_numel, real, dst);
}

WrongCount verify_gathered(const UnitLayout& u, const RealBytes* real, const std::byte* gathered) {
  const int w = element_bytes(u.dtype);
  std::vector<std::byte> expected(static_cast<std::size_t>(u.padded_numel * w));
  materialize(u, 0, u.padded_numel, real, expected.data());
  WrongCount wrong;
  for_segments(u, 0, u.padded_numel, [&](const Segment& s, std::int64_t a, std::int64_t b) {
    for (std::int64_t g = a; g < b; ++g) {
      if (std::memcmp(expected.data() + g * w, gathered + g * w, static_cast<std::size_t>(w)) == 0) continue;
      (s.param < 0 ? wrong.pad : wrong.real) += 1;
      if (wrong.first < 0 || g < wrong.first) wrong.first = g;
    }
  });
  return wrong;
}

std::int64_t exact_integer_limit(DType d) {
  switch (d) {
    case DType::BF16:
      return 256;  // 8 significant bits
    case DType::F16:
      return 2048;  // 11 significant bits
    case DType::F32:
      return std::int64_t{1} << 24;
    case DType::F64:
      return std::int64_t{1} << 53;
    case DType::I8:
      return 127;
    case DType::U8:
      return 255;
    case DType::I16:
      return 32767;
    case DType::U16:
      return 65535;
    case DType::I32:
      return 2147483647;
    case DType::U32:
      return 4294967295;
    case DType::I64:
    case DType::U64:
      return std::int64_t{1} << 62;
    default:
      return 0;
  }
}

void encode_integer(DType d, std::int64_t v, std::byte* dst) {
  switch (d) {
    case DType::F32:
      put_bits(dst, std::bit_cast<std::uint32_t>(static_cast<float>(v)), 4);
      return;
    case DType::F64:
      put_bits(dst, std::bit_cast<std::uint64_t>(static_cast<double>(v)), 8);
      return;
    // bfloat16 is the upper half of a float32; exact for integers up to 256.
    case DType::BF16:
      put_bits(dst, std::bit_cast<std::uint32_t>(static_cast<float>(v)) >> 16, 2);
      return;
    case DType::F16: {
      // IEEE binary16: 1 sign, 5 exponent (bias 15), 10 fraction bits; v <= 2048 is exact.
      std::uint64_t bits = 0;
      if (v > 0) {
        const int e = 63 - std::countl_zero(static_cast<std::uint64_t>(v));
        const std::uint64_t frac = (static_cast<std::uint64_t>(v) << 10 >> e) & 0x3FF;
        bits = (static_cast<std::uint64_t>(e + 15) << 10) | frac;
      }
      put_bits(dst, bits, 2);
      return;
    }
    default:
      put_bits(dst, static_cast<std::uint64_t>(v), element_bytes(d));
      return;
  }
}

std::int64_t grad_value(const UnitLayout& u, int rank, std::int64_t offset) {
  // Every rank of every replica contributes to the final sum (reduce-scatter, then all-reduce).
  const std::int64_t limit = exact_integer_limit(u.reduce_dtype), w = std::int64_t{u.world} * u.replicas;
  if (limit / w >= 2) {
    // 1..k with k*W <= limit: any sum of W of them, in any order, stays exact.
    const std::int64_t k = std::min<std::int64_t>(8, limit / w);
    return 1 + (offset * 31 + rank * 7 + u.index) % k;
  }
  if (w <= limit) return (offset + rank + u.index) % 2;
  return (offset + rank) % w == 0 ? 1 : 0;  // exactly one rank contributes 1
}

void fill_grad(const UnitLayout& u, int rank, std::byte* dst) {
  const int w = element_bytes(u.reduce_dtype);
  std::memset(dst, 0, static_cast<std::size_t>(u.padded_numel * w));
  for_segments(u, 0, u.padded_numel, [&](const Segment& s, std::int64_t a, std::int64_t b) {
    if (s.param < 0) return;  // zero bits are 0 in every dtype a gradient can have
    for (std::int64_t g = a; g < b; ++g) encode_integer(u.reduce_dtype, grad_value(u, rank, g), dst + g * w);
  });
}

WrongCount verify_reduced(const UnitLayout& u, int rank, const std::byte* slice) {
  const int w = element_bytes(u.reduce_dtype);
  const std::int64_t lo = rank * u.shard_numel;
  const int contributors = u.world * u.replicas;
  std::vector<std::byte> want(static_cast<std::size_t>(w));
  WrongCount wrong;
  for (const auto& s : u.ranks[rank]) {
    for (std::int64_t g = s.offset; g < s.offset + s.numel; ++g) {
      std::int64_t sum = 0;
      if (s.param >= 0)
        for (int r = 0; r < contributors; ++r) sum += grad_value(u, r, g);
      encode_integer(u.reduce_dtype, sum, want.data());
      if (std::memcmp(want.data(), slice + (g - lo) * w, static_cast<std::size_t>(w)) == 0) continue;
      (s.param < 0 ? wrong.pad : wrong.real) += 1;
      if (wrong.first < 0) wrong.first = g;
    }
  }
  return wrong;
}

}  // namespace shardcheck::smoke
