#include "load/json_tree.hpp"

#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace shardcheck::detail {

std::optional<std::uint64_t> JsonValue::as_uint64() const {
  if (type != Type::integer || negative) return std::nullopt;
  return magnitude;
}

bool JsonValue::is_big_integer() const {
  if (type != Type::floating) return false;
  std::string_view digits = text;
  if (digits.starts_with('-')) digits.remove_prefix(1);
  return !digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos;
}

const JsonValue* JsonValue::find(std::string_view key) const {
  for (const JsonMember& m : members)
    if (m.key == key) return &m.value;
  return nullptr;
}

const char* JsonValue::type_name() const {
  switch (type) {
    case Type::null:
      return "null";
    case Type::boolean:
      return "a boolean";
    case Type::integer:
      return "an integer";
    case Type::floating:
      return "a floating-point number";
    case Type::string:
      return "a string";
    case Type::array:
      return "an array";
    case Type::object:
      return "an object";
  }
  return "an unknown value";
}

namespace {

void append_quoted(std::string& out, std::string_view s) {
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      (out += '\\') += ch;
    } else if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += ch;
    }
  }
  out += '"';
}

// Appends `v` as minified JSON; stops descending once `out` is longer than `limit`.
void append_rendered(std::string& out, const JsonValue& v, std::size_t limit) {
  if (out.size() > limit) return;
  switch (v.type) {
    case JsonValue::Type::null:
      out += "null";
      return;
    case JsonValue::Type::boolean:
      out += v.boolean ? "true" : "false";
      return;
    case JsonValue::Type::integer:
      if (v.negative) out += '-';
      out += fmt::format("{}", v.magnitude);
      return;
    case JsonValue::Type::floating:
      out += v.text;
      return;
    case JsonValue::Type::string:
      append_quoted(out, v.text);
      return;
    case JsonValue::Type::array:
      out += '[';
      for (std::size_t i = 0; i < v.items.size() && out.size() <= limit; ++i) {
        if (i) out += ',';
        append_rendered(out, v.items[i], limit);
      }
      out += ']';
      return;
    case JsonValue::Type::object:
      out += '{';
      for (std::size_t i = 0; i < v.members.size() && out.size() <= limit; ++i) {
        if (i) out += ',';
        append_quoted(out, v.members[i].key);
        out += ':';
        append_rendered(out, v.members[i].value, limit);
      }
      out += '}';
      return;
  }
}

// Builds the tree from nlohmann's SAX events. `open_` holds the containers being filled, each an
// element of its parent's vector: a parent's vector only grows once the child is closed, so the
// pointers stay valid.
class TreeBuilder {
 public:
  using json = nlohmann::json;

  bool null() { return added(JsonValue{}); }
  bool boolean(bool b) {
    JsonValue v;
    v.type = JsonValue::Type::boolean;
    v.boolean = b;
    return added(std::move(v));
  }
  // nlohmann's lexer gives numbers written with a minus sign here, the others to number_unsigned.
  bool number_integer(json::number_integer_t n) {
    JsonValue v;
    v.type = JsonValue::Type::integer;
    v.negative = true;
    v.magnitude = n < 0 ? 0 - static_cast<std::uint64_t>(n) : static_cast<std::uint64_t>(n);
    return added(std::move(v));
  }
  bool number_unsigned(json::number_unsigned_t n) {
    JsonValue v;
    v.type = JsonValue::Type::integer;
    v.magnitude = n;
    return added(std::move(v));
  }
  // Fractions, exponents, and integers too large for 64 bits.
  bool number_float(json::number_float_t, const json::string_t& written) {
    JsonValue v;
    v.type = JsonValue::Type::floating;
    v.text = written;
    return added(std::move(v));
  }
  bool string(json::string_t& s) {
    JsonValue v;
    v.type = JsonValue::Type::string;
    v.text = std::move(s);
    return added(std::move(v));
  }
  bool binary(json::binary_t&) { return false; }  // not produced by the JSON reader
  bool start_object(std::size_t) { return open(JsonValue::Type::object); }
  bool key(json::string_t& k) {
    pending_key_ = std::move(k);
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(JsonValue::Type::array); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    // what() is "[json.exception.parse_error.101] parse error at line L, column C: <why>".
    std::string_view what = e.what();
    if (auto bracket = what.find("] "); what.starts_with("[json.exception") && bracket != what.npos)
      what.remove_prefix(bracket + 2);
    error_ = std::string(what);
    return false;
  }

  std::variant<JsonValue, JsonSyntaxError> result(bool ok) && {
    if (ok && root_) return std::move(*root_);
    if (error_.empty()) error_ = fmt::format("objects and arrays nest deeper than {} levels", kMaxJsonDepth);
    return JsonSyntaxError{std::move(error_)};
  }

 private:
  JsonValue* add(JsonValue v) {
    if (open_.empty()) {
      root_ = std::move(v);
      return &*root_;
    }
    JsonValue& parent = *open_.back();
    if (parent.type == JsonValue::Type::array) return &parent.items.emplace_back(std::move(v));
    return &parent.members.emplace_back(JsonMember{std::move(pending_key_), std::move(v)}).value;
  }

  bool added(JsonValue v) {
    add(std::move(v));
    return true;
  }

  bool open(JsonValue::Type type) {
    if (open_.size() >= kMaxJsonDepth) return false;
    JsonValue v;
    v.type = type;
    open_.push_back(add(std::move(v)));
    return true;
  }
  bool close() {
    open_.pop_back();
    return true;
  }

  std::optional<JsonValue> root_;
  std::vector<JsonValue*> open_;
  std::string pending_key_;
  std::string error_;
};

}  // namespace

std::string JsonValue::rendered(std::size_t limit) const {
  std::string out;
  append_rendered(out, *this, limit);
  if (out.size() > limit) {
    std::size_t end = limit;
    while (end > 0 && (static_cast<unsigned char>(out[end]) & 0xC0) == 0x80) --end;  // not inside a UTF-8 sequence
    out.resize(end);
    out += "...";
  }
  return out;
}

std::variant<JsonValue, JsonSyntaxError> parse_json_tree(std::string_view text) {
  // nlohmann's lexer takes a NUL byte for the end of input (for C strings), so "{}\0garbage"
  // would pass. JSON allows no raw NUL anywhere: neither as whitespace nor inside a string.
  if (const auto nul = text.find('\0'); nul != std::string_view::npos)
    return JsonSyntaxError{fmt::format("NUL byte at offset {}; JSON allows none outside a \\u0000 escape", nul)};
  TreeBuilder builder;
  const bool ok = nlohmann::json::sax_parse(text.begin(), text.end(), &builder);
  return std::move(builder).result(ok);
}

}  // namespace shardcheck::detail
