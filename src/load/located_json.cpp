// A strict JSON reader that keeps each value's position (load/located_json.hpp).
#include "load/located_json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "util/utf8.hpp"

namespace shardcheck::detail {
namespace {
namespace located {  // named: a unity batch shares one translation unit with other readers' helpers

struct Failure {
  std::size_t offset;
  std::string message;
};

// What the text holds at `p`, for "found ..." (a short, printable description).
std::string describe(std::string_view text, std::size_t p) {
  if (p >= text.size()) return "the end of the file";
  const auto c = static_cast<unsigned char>(text[p]);
  if (c >= 0x20 && c < 0x7f) return fmt::format("'{}'", static_cast<char>(c));
  return fmt::format("byte 0x{:02x}", c);
}

class Reader {
 public:
  Reader(std::string_view text, std::size_t max_depth) : t_(text), max_depth_(max_depth) {}

  LocatedJson document() {
    LocatedJson v = value(0);
    ws();
    if (p_ != t_.size()) fail("expected the end of the file after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(std::string_view expected) const {
    throw Failure{p_, fmt::format("{}, found {}", expected, describe(t_, p_))};
  }

  void ws() {
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\n' || t_[p_] == '\r' || t_[p_] == '\t')) ++p_;
  }

  bool literal(std::string_view word) {
    if (t_.substr(p_, word.size()) != word) return false;
    p_ += word.size();
    return true;
  }

  LocatedJson value(std::size_t depth) {
    ws();
    LocatedJson v;
    v.offset = p_;
    if (p_ >= t_.size()) fail("expected a value");
    const char c = t_[p_];
    if (c == '{' || c == '[') {
      if (depth >= max_depth_) fail(fmt::format("expected at most {} levels of nesting", max_depth_));
      c == '{' ? object(v, depth + 1) : array(v, depth + 1);
    } else if (c == '"') {
      v.type = LocatedJson::Type::string;
      v.text = string();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      number(v);
    } else if (literal("true") || literal("false")) {
      v.type = LocatedJson::Type::boolean;
      v.boolean = c == 't';
    } else if (literal("null")) {
      v.type = LocatedJson::Type::null;
    } else {
      fail("expected a value (object, array, string, number, true, false or null)");
    }
    return v;
  }

  void object(LocatedJson& v, std::size_t depth) {
    v.type = LocatedJson::Type::object;
    ++p_;
    ws();
    if (p_ < t_.size() && t_[p_] == '}') {
      ++p_;
      return;
    }
    for (;;) {
      ws();
      if (p_ >= t_.size() || t_[p_] != '"') fail("expected a member name in double quotes");
      const std::size_t key_at = p_;
      std::string key = string();
      if (v.find(key)) {
        p_ = key_at;
        fail(fmt::format("expected each member name once in an object; \"{}\" is repeated, found it", key));
      }
      ws();
      if (p_ >= t_.size() || t_[p_] != ':') fail("expected ':' after a member name");
      ++p_;
      v.members.push_back(LocatedMember{std::move(key), value(depth)});
      ws();
      if (p_ < t_.size() && t_[p_] == ',') {
        ++p_;
        continue;
      }
      if (p_ < t_.size() && t_[p_] == '}') {
        ++p_;
        return;
      }
      fail("expected ',' or '}' in an object");
    }
  }

  void array(LocatedJson& v, std::size_t depth) {
    v.type = LocatedJson::Type::array;
    ++p_;
    ws();
    if (p_ < t_.size() && t_[p_] == ']') {
      ++p_;
      return;
    }
    for (;;) {
      v.items.push_back(value(depth));
      ws();
      if (p_ < t_.size() && t_[p_] == ',') {
        ++p_;
        continue;
      }
      if (p_ < t_.size() && t_[p_] == ']') {
        ++p_;
        return;
      }
      fail("expected ',' or ']' in an array");
    }
  }

  unsigned hex4() {
    unsigned u = 0;
    for (int i = 0; i < 4; ++i, ++p_) {
      if (p_ >= t_.size()) fail("expected 4 hexadecimal digits after \\u");
      const char h = t_[p_];
      const int d = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
      if (d < 0) fail("expected 4 hexadecimal digits after \\u");
      u = u * 16 + static_cast<unsigned>(d);
    }
    return u;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  void escape(std::string& out) {
    ++p_;  // the backslash
    if (p_ >= t_.size()) fail("expected an escape character after '\\'");
    const char e = t_[p_];
    static constexpr std::string_view kFrom = "\"\\/bfnrt", kTo = "\"\\/\b\f\n\r\t";
    if (const auto k = kFrom.find(e); k != std::string_view::npos) {
      out += kTo[k];
      ++p_;
      return;
    }
    if (e != 'u') fail("expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX");
    ++p_;
    unsigned cp = hex4();
    if (cp >= 0xdc00 && cp <= 0xdfff) fail("expected a high surrogate before a low one (\\udc00-\\udfff)");
    if (cp >= 0xd800 && cp <= 0xdbff) {
      if (!literal("\\u")) fail("expected a \\u low surrogate after a high surrogate");
      const unsigned low = hex4();
      if (low < 0xdc00 || low > 0xdfff) fail("expected a low surrogate (\\udc00-\\udfff) after a high surrogate");
      cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
    }
    append_utf8(out, cp);
  }

  std::string string() {
    ++p_;  // the opening quote
    std::string out;
    for (;;) {
      if (p_ >= t_.size()) fail("expected '\"' to close the string");
      const auto c = static_cast<unsigned char>(t_[p_]);
      if (c == '"') {
        ++p_;
        return out;
      }
      if (c == '\\') {
        escape(out);
      } else if (c < 0x20) {
        fail("expected no control character inside a string (write it as an escape)");
      } else if (c < 0x80) {
        out += static_cast<char>(c);
        ++p_;
      } else {
        const std::size_t n =
            util::utf8_sequence_length(reinterpret_cast<const unsigned char*>(t_.data() + p_), t_.size() - p_);
        if (n == 0) fail("expected well-formed UTF-8 in a string");
        out.append(t_.substr(p_, n));
        p_ += n;
      }
    }
  }

  void digits(std::string_view what) {
    if (p_ >= t_.size() || t_[p_] < '0' || t_[p_] > '9') fail(what);
    while (p_ < t_.size() && t_[p_] >= '0' && t_[p_] <= '9') ++p_;
  }

  void number(LocatedJson& v) {
    v.type = LocatedJson::Type::number;
    const std::size_t start = p_;
    if (t_[p_] == '-') ++p_;
    if (p_ < t_.size() && t_[p_] == '0') {
      ++p_;
      if (p_ < t_.size() && t_[p_] >= '0' && t_[p_] <= '9') fail("expected no leading zero in a number");
    } else {
      digits("expected a digit in a number");
    }
    bool whole = true;
    if (p_ < t_.size() && t_[p_] == '.') {
      ++p_;
      whole = false;
      digits("expected a digit after the decimal point");
    }
    if (p_ < t_.size() && (t_[p_] == 'e' || t_[p_] == 'E')) {
      ++p_;
      whole = false;
      if (p_ < t_.size() && (t_[p_] == '+' || t_[p_] == '-')) ++p_;
      digits("expected a digit in the exponent");
    }
    const std::string written(t_.substr(start, p_ - start));
    v.number = std::strtod(written.c_str(), nullptr);
    if (whole) {
      errno = 0;
      const long long n = std::strtoll(written.c_str(), nullptr, 10);
      v.integer = errno != ERANGE;
      v.int_value = v.integer ? n : 0;
    }
  }

  std::string_view t_;
  std::size_t max_depth_;
  std::size_t p_ = 0;
};

}  // namespace located
}  // namespace

const LocatedJson* LocatedJson::find(std::string_view key) const {
  for (const auto& [k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

const char* LocatedJson::type_name() const {
  switch (type) {
    case Type::null:
      return "null";
    case Type::boolean:
      return "a boolean";
    case Type::number:
      return integer ? "an integer" : "a number";
    case Type::string:
      return "a string";
    case Type::array:
      return "an array";
    case Type::object:
      return "an object";
  }
  return "a value";
}

std::variant<LocatedJson, LocatedJsonError> parse_located_json(std::string_view text, std::size_t max_depth) {
  try {
    return located::Reader(text, max_depth).document();
  } catch (const located::Failure& f) {
    return LocatedJsonError{f.offset, f.message};
  }
}

std::pair<int, int> line_column(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  const std::string_view before = text.substr(0, offset);
  const int line = 1 + static_cast<int>(std::count(before.begin(), before.end(), '\n'));
  const std::size_t nl = before.rfind('\n');
  const int column = 1 + static_cast<int>(nl == std::string_view::npos ? offset : offset - nl - 1);
  return {line, column};
}

}  // namespace shardcheck::detail
