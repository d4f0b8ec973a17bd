#pragma once
// What every element of a smoke buffer must hold, and counting the elements that do not (the
// `#wrong` column of nccl-tests, src/common.cu `ncclVerifiableVerify`: exact, 0 ulp).
//
// All-gather: a real element at padded-buffer offset g of unit u holds pattern_bits(u, g) (or, with
// --weights, the checkpoint's bytes); a padding element holds the sentinel. The pattern is raw bits
// because an all-gather only moves bytes. Reduce-scatter: rank r contributes a small integer
// grad_value(u, r, g) at every real position and 0 in padding (FSDP pads gradients with zeros); the
// values are chosen so every partial sum is exact in the unit's dtype, whatever the reduction order.

#include <cstddef>
#include <cstdint>
#include <functional>

#include "smoke/layout.hpp"

namespace shardcheck::smoke {

inline constexpr std::uint8_t kSentinelByte = 0xA5;

std::uint64_t pattern_bits(int unit, std::int64_t offset);

// Writes `numel` real elements of parameter `param` starting at element `param_offset` to dst.
using RealBytes = std::function<void(int param, std::int64_t param_offset, std::int64_t numel, std::byte* dst)>;

// The expected contents of [lo, lo + numel) of the unit's padded buffer; positions past its end
// are sentinel too. `real` = nullptr means the synthetic pattern.
void materialize(const UnitLayout& u, std::int64_t lo, std::int64_t numel, const RealBytes* real, std::byte* dst);

// Rank r's all-gather input: its shard [r*S, (r+1)*S). `shift` (test-only) makes the rank send the
// elements of [r*S + shift, ...) instead, i.e. a shard placed at the wrong offset.
void fill_shard(const UnitLayout& u, int rank, std::int64_t shift, const RealBytes* real, std::byte* dst);

struct WrongCount {
  std::int64_t real = 0;    // wrong elements at parameter positions
  std::int64_t pad = 0;     // wrong elements at padding positions
  std::int64_t first = -1;  // offset of the first wrong element (-1: none)
  std::int64_t total() const { return real + pad; }
};

// Compares a gathered buffer (W*S elements) with the expected contents.
WrongCount verify_gathered(const UnitLayout& u, const RealBytes* real, const std::byte* gathered);

// Largest integer up to which every integer is exact in d (and sums of them are, in any order); 0
// when d has no exact integer sums for this purpose (FP8, BOOL, packed kinds).
std::int64_t exact_integer_limit(DType d);
// Writes integer v as an element of d; requires 0 <= v <= exact_integer_limit(d).
void encode_integer(DType d, std::int64_t v, std::byte* dst);

// The gradient global rank `rank` (0 .. world*replicas-1) holds at padded offset `offset`, in
// u.reduce_dtype.
std::int64_t grad_value(const UnitLayout& u, int rank, std::int64_t offset);
// Global rank r's reduce-scatter input: world*S elements of u.reduce_dtype.
void fill_grad(const UnitLayout& u, int rank, std::byte* dst);
// Checks the reduced slice of shard-group rank `rank` (S elements), after the reduce-scatter and,
// with replicas, the all-reduce across them: the exact sum over all world*replicas ranks, 0 in padding.
WrongCount verify_reduced(const UnitLayout& u, int rank, const std::byte* slice);

}  // namespace shardcheck::smoke
