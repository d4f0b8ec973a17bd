#pragma once
// A strict RFC 8259 reader that keeps where each value starts, for files whose *content* is checked
// field by field and must say where a wrong field is (a module-tree dump, docs/module-tree.md):
// "line 12, column 7: expected an array of integers, found a string". load/json_tree.hpp keeps
// document order but no positions; nlohmann's DOM neither.
//
// Hostile input is bounded: nesting deeper than the caller's limit is refused, strings must be
// well-formed UTF-8 with no control character and no lone surrogate, numbers JSON's form, and one
// object may not hold a key twice (Python's json.load would keep the last silently). Every refusal
// says what was expected and what was found, at a byte offset.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace shardcheck::detail {

struct LocatedMember;  // a vector of an incomplete type is allowed, a pair of one is not (clang)

struct LocatedJson {
  enum class Type : unsigned char { null, boolean, number, string, array, object };
  Type type = Type::null;
  std::size_t offset = 0;  // byte offset of the value's first character in the text
  bool boolean = false;
  bool integer = false;        // number written without fraction or exponent that fits int64
  std::int64_t int_value = 0;  // when `integer`
  double number = 0;           // every number
  std::string text;            // string: its decoded value
  std::vector<LocatedJson> items;
  std::vector<LocatedMember> members;  // object, in document order

  // The member named `key`, or nullptr (also when this is not an object).
  const LocatedJson* find(std::string_view key) const;
  // "an object", "an array", "a string", "an integer", "a number", "a boolean", "null".
  const char* type_name() const;
};

struct LocatedMember {
  std::string key;
  LocatedJson value;
};

struct LocatedJsonError {
  std::size_t offset = 0;
  std::string message;  // "expected ..., found ..."
};

// Reads `text` as one JSON value with nothing but whitespace around it.
std::variant<LocatedJson, LocatedJsonError> parse_located_json(std::string_view text, std::size_t max_depth);

// 1-based line and column (in bytes) of `offset` in `text`.
std::pair<int, int> line_column(std::string_view text, std::size_t offset);

}  // namespace shardcheck::detail
