// libFuzzer harness: the registry's expression language (parse + evaluate with a few names bound).
#include <cstdint>
#include <string_view>

#include "shardcheck/expr.hpp"

using namespace shardcheck;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Value hidden(std::int64_t{4096}), list(ValueList{Value(1), Value(2)}), ver(Version{4, 44, 2});
  try {
    Expr e = Expr::parse(std::string_view(reinterpret_cast<const char*>(data), size));
    (void)e.evaluate([](std::string_view n) -> const Value* {
      if (n == "hidden_size") return &hidden;
      if (n == "layers") return &list;
      if (n == "transformers") return &ver;
      return nullptr;
    });
  } catch (const ExprError&) {
  }
  return 0;
}
