#include <doctest/doctest.h>

#include <map>

#include "shardcheck/expr.hpp"

using namespace shardcheck;

namespace {
Value run(const char* src, const std::map<std::string, Value>& vars = {}) {
  return Expr::parse(src).evaluate([&](std::string_view n) -> const Value* {
    auto it = vars.find(std::string(n));
    return it == vars.end() ? nullptr : &it->second;
  });
}
std::int64_t integer(const char* src, const std::map<std::string, Value>& vars = {}) {
  Value v = run(src, vars);
  REQUIRE(v.is_int());
  return *v.as_int();
}
}  // namespace

TEST_CASE("expr: integer arithmetic follows Python") {
  CHECK(integer("4096 // 32") == 128);
  CHECK(integer("-7 // 2") == -4);  // floors, like Python
  CHECK(integer("-7 % 2") == 1);
  CHECK(integer("2 ** 10") == 1024);
  CHECK(integer("3 ** 5") == 243);
  CHECK(integer("1 ** 285311670611") == 1);  // O(log n): this hung the fuzzer as a linear loop
  CHECK(integer("(0 - 1) ** 285311670611") == -1);
  CHECK(integer("0 ** 99999999999") == 0);
  CHECK_THROWS_AS(run("3 ** 99999999999"), ExprError);
  CHECK(integer("1 + 2 * 3") == 7);
  CHECK(integer("(1 + 2) * 3") == 9);
  CHECK(integer("ceil_div(129280, 128)") == 1010);
  CHECK(integer("ceil_div(7168, 128)") == 56);
  CHECK(integer("max(3, 9, 4)") == 9);
  CHECK(integer("max([-2, -5, -8])") == -2);  // one list argument: its largest item, as in Python
  CHECK(integer("min([4, 1, 7])") == 1);
  CHECK(integer("len([1, 2, 3])") == 3);
  CHECK(integer("[10, 20, 30][1]") == 20);
  CHECK(integer("[10, 20, 30][-1]") == 30);
}

TEST_CASE("expr: overflow and division by zero are errors, not wrong numbers") {
  CHECK_THROWS_AS(run("9223372036854775807 + 1"), ExprError);
  CHECK_THROWS_AS(run("4294967296 * 4294967296"), ExprError);
  CHECK_THROWS_AS(run("1 // 0"), ExprError);
  CHECK_THROWS_AS(run("[1][5]"), ExprError);
}

TEST_CASE("expr: names, null coalescing and conditionals") {
  std::map<std::string, Value> cfg{{"hidden_size", Value(4096)},
                                   {"num_attention_heads", Value(32)},
                                   {"head_dim", Value()},
                                   {"mlp_only_layers", Value(ValueList{Value(1), Value(3)})}};
  CHECK(integer("head_dim ?? hidden_size // num_attention_heads", cfg) == 128);
  CHECK(integer("absent_field ?? 7", cfg) == 7);           // unknown name on the left of ??
  CHECK(integer("absent ?? also_absent ?? 9", cfg) == 9);  // and along a chain
  CHECK(integer("absent ?? hidden_size ?? 9", cfg) == 4096);
  CHECK_THROWS_AS(run("absent_field + 1", cfg), ExprError);  // but not elsewhere
  CHECK(integer("1 if hidden_size > 100 else 2", cfg) == 1);
  CHECK(run("3 in mlp_only_layers", cfg).truthy());
  CHECK(run("2 not in mlp_only_layers", cfg).truthy());
  CHECK(run("not (1 == 2) and true", cfg).truthy());
}

TEST_CASE("expr: versions compare numerically, strings compare as versions against them") {
  std::map<std::string, Value> env{{"transformers", Value(*Version::parse("4.44.2"))}};
  CHECK(run("transformers < \"4.48\"", env).truthy());
  CHECK(run("transformers >= '4.9'", env).truthy());  // 44 > 9 numerically
  CHECK_FALSE(run("transformers >= \"5.0\"", env).truthy());
  CHECK(Version::parse("5.16.0.dev0")->minor == 16);
}

TEST_CASE("expr: dotted names reach nested config objects") {
  std::map<std::string, Value> cfg{{"quantization_config.weight_block_size", Value(ValueList{Value(128), Value(128)})}};
  CHECK(integer("quantization_config.weight_block_size[1]", cfg) == 128);
}

TEST_CASE("expr: syntax errors carry the column") {
  try {
    (void)Expr::parse("hidden_size * * 2");
    FAIL("expected a parse error");
  } catch (const ExprError& e) {
    CHECK(e.column == 15);
  }
  CHECK_THROWS_AS(Expr::parse("a if b"), ExprError);
  CHECK_THROWS_AS(Expr::parse("\"unterminated"), ExprError);
  // Hostile nesting is an error, not a stack overflow (both found by fuzz_expr).
  CHECK_THROWS_AS(Expr::parse(std::string(5000, '[') + "1"), ExprError);
  std::string long_sum = "1";
  for (int i = 0; i < 5000; ++i) long_sum += "+1";
  CHECK_THROWS_AS(Expr::parse(long_sum), ExprError);
  CHECK(Expr::parse("((((1))))").evaluate([](std::string_view) -> const Value* { return nullptr; }).truthy());
}
