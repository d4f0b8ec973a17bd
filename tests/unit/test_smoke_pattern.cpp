// Patterns, exact integer encodings (IEEE binary16 / bfloat16 bit layouts by hand) and #wrong
// counting of the smoke runner.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "smoke/pattern.hpp"

using namespace shardcheck;
using namespace shardcheck::smoke;

namespace {

std::uint64_t bits_of(DType d, std::int64_t v) {
  std::byte buf[8] = {};
  encode_integer(d, v, buf);
  std::uint64_t out = 0;
  std::memcpy(&out, buf, static_cast<std::size_t>(element_bytes(d)));
  return out;
}

UnitLayout two_rank_unit() {
  // 5 real F32 elements over 2 ranks: S=3, rank 1 holds 2 real + 1 padding.
  UnitLayout u;
  u.index = 7;
  u.dtype = u.reduce_dtype = DType::F32;
  u.world = 2;
  u.numel = 5;
  u.shard_numel = 3;
  u.padded_numel = 6;
  u.params = {"p"};
  u.param_numels = {5};
  u.ranks = {{Segment{0, 3, 0, 0}}, {Segment{3, 2, 0, 3}, Segment{5, 1, -1, 0}}};
  return u;
}

}  // namespace

TEST_CASE("smoke pattern: integers encode exactly in each float format") {
  // binary16: 1 = 0 01111 0000000000 = 0x3C00; 3 = 1.1b x 2^1 = 0x4200; 2048 = 2^11 -> exp 26 = 0x6800.
  CHECK(bits_of(DType::F16, 1) == 0x3C00);
  CHECK(bits_of(DType::F16, 3) == 0x4200);
  CHECK(bits_of(DType::F16, 2048) == 0x6800);
  CHECK(bits_of(DType::F16, 0) == 0);
  // bfloat16 = high half of binary32: 3.0f = 0x40400000, 256.0f = 0x43800000.
  CHECK(bits_of(DType::BF16, 3) == 0x4040);
  CHECK(bits_of(DType::BF16, 256) == 0x4380);
  CHECK(bits_of(DType::F32, 1) == 0x3F800000);
  CHECK(bits_of(DType::I32, 12) == 12);
  CHECK(exact_integer_limit(DType::F8_E4M3) == 0);
}

TEST_CASE("smoke pattern: gradient values keep every sum exact") {
  UnitLayout u = two_rank_unit();
  u.dtype = u.reduce_dtype = DType::BF16;
  u.world = 64;  // 256 / 64 = 4: values 1..4, sums <= 256
  for (int r = 0; r < 64; ++r)
    for (std::int64_t g = 0; g < 50; ++g) {
      CHECK(grad_value(u, r, g) >= 1);
      CHECK(grad_value(u, r, g) <= 4);
    }
  u.world = 200;  // 256 / 200 < 2: values 0/1, sum <= 200
  CHECK(grad_value(u, 0, 0) + grad_value(u, 1, 0) == 1);
  u.world = 300;  // beyond 256: exactly one rank contributes 1
  std::int64_t sum = 0;
  for (int r = 0; r < 300; ++r) sum += grad_value(u, r, 17);
  CHECK(sum == 1);
}

TEST_CASE("smoke pattern: shards, padding sentinel and #wrong") {
  const UnitLayout u = two_rank_unit();
  std::vector<std::byte> s0(12), s1(12), all(24);
  fill_shard(u, 0, 0, nullptr, s0.data());
  fill_shard(u, 1, 0, nullptr, s1.data());
  // The padding element (rank 1, local 2) is the sentinel; real elements are the unit's pattern.
  for (int b = 8; b < 12; ++b) CHECK(static_cast<std::uint8_t>(s1[b]) == kSentinelByte);
  std::uint32_t first = 0;
  std::memcpy(&first, s1.data(), 4);
  CHECK(first == static_cast<std::uint32_t>(pattern_bits(7, 3)));
  std::memcpy(all.data(), s0.data(), 12);
  std::memcpy(all.data() + 12, s1.data(), 12);
  CHECK(verify_gathered(u, nullptr, all.data()).total() == 0);

  // A shard sent one element late: rank 1's 2 real slots get the next element's value and its
  // padding slot is beyond the end (sentinel again), so 2 wrong, none in padding.
  fill_shard(u, 1, 1, nullptr, s1.data());
  std::memcpy(all.data() + 12, s1.data(), 12);
  WrongCount w = verify_gathered(u, nullptr, all.data());
  CHECK(w.real == 2);
  CHECK(w.pad == 0);
  CHECK(w.first == 3);

  // Garbage in the padding is counted as such.
  fill_shard(u, 1, 0, nullptr, s1.data());
  std::memcpy(all.data() + 12, s1.data(), 12);
  all[21] = std::byte{0};
  w = verify_gathered(u, nullptr, all.data());
  CHECK(w.real == 0);
  CHECK(w.pad == 1);
  CHECK(w.first == 5);
}

TEST_CASE("smoke pattern: reduce-scatter expectation is the exact sum, zero in padding") {
  const UnitLayout u = two_rank_unit();
  std::vector<std::byte> g0(24), g1(24);
  fill_grad(u, 0, g0.data());
  fill_grad(u, 1, g1.data());
  // Sum rank 1's slice by hand from the two inputs (F32).
  std::vector<std::byte> slice(12);
  for (int i = 0; i < 3; ++i) {
    float a, b;
    std::memcpy(&a, g0.data() + (3 + i) * 4, 4);
    std::memcpy(&b, g1.data() + (3 + i) * 4, 4);
    const float s = a + b;
    std::memcpy(slice.data() + i * 4, &s, 4);
  }
  float pad_sum;
  std::memcpy(&pad_sum, slice.data() + 8, 4);
  CHECK(pad_sum == 0.0f);
  CHECK(verify_reduced(u, 1, slice.data()).total() == 0);
  const float off = 100;
  std::memcpy(slice.data(), &off, 4);
  CHECK(verify_reduced(u, 1, slice.data()).real == 1);
}
