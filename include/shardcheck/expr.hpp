#pragma once
// A small, Python-flavoured expression language for the data files under rules/: shape formulas
// ("num_attention_heads * head_dim"), conditions ('transformers >= "4.48" and attention_bias'),
// defaults ("head_dim ?? hidden_size // num_attention_heads"). Parsed once, evaluated many times.
//
//   ternary  := coalesce ['if' coalesce 'else' ternary]
//   coalesce := or {'??' or}          (left side may be an unknown name: then the right is used)
//   or/and/not, comparisons (== != < <= > >= in, not in), + - * / // % **, unary -
//   primary  := int | float | "string" | 'string' | null/None | true/True | false/False
//             | name | name(args) | (expr) | [list]
//   functions: ceil_div(a, b), min(a, b...), max(a, b...), len(list), is_list(x), int(x), bool(x)
// Integers are int64 with overflow checks; a string compared with a version compares as a version.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "shardcheck/version.hpp"  // a value of the language

namespace shardcheck {

struct Value;
using ValueList = std::vector<Value>;

struct Value {
  std::variant<std::monostate, bool, std::int64_t, double, std::string, Version, std::shared_ptr<const ValueList>> v;

  Value() = default;
  Value(bool b) : v(b) {}
  Value(std::int64_t i) : v(i) {}
  Value(int i) : v(static_cast<std::int64_t>(i)) {}
  Value(double d) : v(d) {}
  Value(std::string s) : v(std::move(s)) {}
  Value(const char* s) : v(std::string(s)) {}
  Value(Version ver) : v(ver) {}
  Value(ValueList l) : v(std::make_shared<const ValueList>(std::move(l))) {}

  bool is_null() const { return std::holds_alternative<std::monostate>(v); }
  bool is_int() const { return std::holds_alternative<std::int64_t>(v); }
  bool is_string() const { return std::holds_alternative<std::string>(v); }
  const std::int64_t* as_int() const { return std::get_if<std::int64_t>(&v); }
  const std::string* as_string() const { return std::get_if<std::string>(&v); }
  const ValueList* as_list() const;
  bool truthy() const;
  std::string repr() const;
};

// Thrown by parse (with the column) and by evaluate (with the offending name or operation).
class ExprError : public std::runtime_error {
 public:
  ExprError(const std::string& msg, int column = 0, std::string missing_name = {})
      : std::runtime_error(msg), column(column), missing_name(std::move(missing_name)) {}
  int column;
  std::string missing_name;  // evaluation: the name no scope defines ("" for other errors)
};

// Name lookup for evaluation. Returns nullptr when the name is unknown.
using Lookup = std::function<const Value*(std::string_view name)>;

class Expr {
 public:
  static Expr parse(std::string_view source);  // throws ExprError
  static Expr constant(Value v);
  Value evaluate(const Lookup& lookup) const;  // throws ExprError
  const std::string& source() const { return source_; }
  bool valid() const { return root_ != nullptr; }
  struct Node;

 private:
  std::string source_;
  std::shared_ptr<const Node> root_;
};

}  // namespace shardcheck
