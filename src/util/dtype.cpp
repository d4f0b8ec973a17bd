#include "shardcheck/dtype.hpp"

#include <array>

namespace shardcheck {
namespace {
struct Info {
  std::string_view name;
  int bits;
  bool floating;
};
constexpr std::array<Info, kNumDTypes> kInfo{{
    {"BOOL", 8, false},   {"F4", 4, true},          {"F6_E2M3", 6, true},     {"F6_E3M2", 6, true},
    {"U8", 8, false},     {"I8", 8, false},         {"F8_E5M2", 8, true},     {"F8_E4M3", 8, true},
    {"F8_E8M0", 8, true}, {"F8_E4M3FNUZ", 8, true}, {"F8_E5M2FNUZ", 8, true}, {"I16", 16, false},
    {"U16", 16, false},   {"F16", 16, true},        {"BF16", 16, true},       {"I32", 32, false},
    {"U32", 32, false},   {"F32", 32, true},        {"C64", 64, true},        {"F64", 64, true},
    {"I64", 64, false},   {"U64", 64, false},
}};
}  // namespace

std::string_view dtype_name(DType d) { return kInfo[static_cast<int>(d)].name; }
int dtype_bits(DType d) { return kInfo[static_cast<int>(d)].bits; }
bool dtype_is_floating(DType d) { return kInfo[static_cast<int>(d)].floating; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (kInfo[i].name == name) return static_cast<DType>(i);
  return std::nullopt;
}

std::optional<DType> parse_torch_dtype(std::string_view n) {
  if (n.starts_with("torch.")) n.remove_prefix(6);
  if (n == "bfloat16") return DType::BF16;
  if (n == "float16" || n == "half") return DType::F16;
  if (n == "float32" || n == "float") return DType::F32;
  if (n == "float64" || n == "double") return DType::F64;
  if (n == "int8") return DType::I8;
  if (n == "uint8") return DType::U8;
  if (n == "float8_e4m3fn") return DType::F8_E4M3;
  if (n == "float8_e5m2") return DType::F8_E5M2;
  return std::nullopt;
}

}  // namespace shardcheck
