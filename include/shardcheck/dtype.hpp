#pragma once
// The safetensors dtype set (safetensors/src/tensor.rs, enum Dtype @24b0b28), with bit widths.
// Sub-byte kinds (F4, F6_*) are packed; a tensor's byte size must come out whole.

#include <cstdint>
#include <optional>
#include <string_view>

namespace shardcheck {

enum class DType : std::uint8_t {
  BOOL,
  F4,
  F6_E2M3,
  F6_E3M2,
  U8,
  I8,
  F8_E5M2,
  F8_E4M3,
  F8_E8M0,
  F8_E4M3FNUZ,
  F8_E5M2FNUZ,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  C64,
  F64,
  I64,
  U64,
};
inline constexpr int kNumDTypes = 22;

std::string_view dtype_name(DType d);
int dtype_bits(DType d);
std::optional<DType> parse_dtype(std::string_view safetensors_name);
// torch_dtype spellings of config.json ("bfloat16", "float32", ...) to the safetensors name.
std::optional<DType> parse_torch_dtype(std::string_view torch_name);
bool dtype_is_floating(DType d);

}  // namespace shardcheck
