#pragma once
// The full JSON reader behind the plain fast paths (load/plain_json.hpp): any RFC 8259 text into a
// tree that keeps what the checks need and a DOM such as nlohmann::json drops: every member of an
// object in document order, repeated keys included (a tensor named twice in a safetensors header,
// a field repeated inside an entry, a tensor listed twice in an index are all diagnostics), and
// each number as it was written (integer or not, signed or not).
//
// It reads with nlohmann's SAX parser (nlohmann/json 3.11, json::sax_parse), whose messages name
// the line and column of a syntax error. Used only when the plain path says "no", so it favours
// clarity over speed.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace shardcheck::detail {

struct JsonMember;

struct JsonValue {
  enum class Type : unsigned char { null, boolean, integer, floating, string, array, object };
  Type type = Type::null;
  bool boolean = false;
  bool negative = false;            // integer: written with a minus sign (`magnitude` is then |n|)
  std::uint64_t magnitude = 0;      // integer
  std::string text;                 // string: its value; floating: the number as written
  std::vector<JsonValue> items;     // array
  std::vector<JsonMember> members;  // object, in document order, repeats kept

  bool is_null() const { return type == Type::null; }
  // The value when it is an integer written without a minus sign that fits 64 bits, else nullopt.
  // (serde_json, which the safetensors crate reads headers with, takes `-0` for a float -0.0 and
  // so refuses it as a u64 too.)
  std::optional<std::uint64_t> as_uint64() const;
  // An integer too large for 64 bits, which nlohmann's reader (like serde_json) reads as a float.
  bool is_big_integer() const;
  // The first member named `key`, or nullptr (also when this is not an object).
  const JsonValue* find(std::string_view key) const;
  // "an array", "an object", "an integer", "a floating-point number", "a string", "a boolean",
  // "null": for messages of the form "X is <type>; expected ...".
  const char* type_name() const;
  // Minified JSON of this value, cut after about `limit` bytes with "..." so one huge value
  // cannot flood a message.
  std::string rendered(std::size_t limit = 80) const;
};

struct JsonMember {
  std::string key;
  JsonValue value;
};

struct JsonSyntaxError {
  std::string message;  // e.g. "syntax error while parsing object key - ... at line 1, column 12"
};

// Objects and arrays nested deeper than this are refused (as simdjson's default and serde_json's
// 128-level recursion limit do, in spirit): the tree is freed recursively.
inline constexpr std::size_t kMaxJsonDepth = 1024;

// Reads `text` as one JSON value, with nothing but whitespace around it.
std::variant<JsonValue, JsonSyntaxError> parse_json_tree(std::string_view text);

}  // namespace shardcheck::detail
