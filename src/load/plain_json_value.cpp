#include "load/plain_json_value.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>

#include "load/plain_json.hpp"

namespace shardcheck::detail {
namespace {

using json = nlohmann::ordered_json;

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text), cur_(text.data(), text.data() + text.size()) {}

  bool value(json& out, std::size_t depth, std::vector<TopLevelKey>* keys) {
    if (depth > kMaxPlainDepth) return false;
    cur_.skip_ws();
    const char* p = cur_.position();
    if (p == end()) return false;
    switch (*p) {
      case '"': {
        std::string_view s;
        if (!cur_.string(s)) return false;
        out = std::string(s);
        return true;
      }
      case '{':
        return object(out, depth, keys);
      case '[':
        return array(out, depth);
      case 't':
        return literal("true", out, json(true));
      case 'f':
        return literal("false", out, json(false));
      case 'n':
        return literal("null", out, json(nullptr));
      default:
        return number(out);
    }
  }

  bool at_end() { return cur_.at_end(); }

 private:
  const char* end() const { return text_.data() + text_.size(); }

  bool literal(std::string_view word, json& out, json value) {
    const char* p = cur_.position();
    if (static_cast<std::size_t>(end() - p) < word.size() || std::string_view(p, word.size()) != word) return false;
    cur_.rewind(p + word.size());
    out = std::move(value);
    return true;
  }

  bool object(json& out, std::size_t depth, std::vector<TopLevelKey>* keys) {
    cur_.eat('{');
    out = json::object();
    if (cur_.eat('}')) return true;
    do {
      cur_.skip_ws();
      const std::size_t at = static_cast<std::size_t>(cur_.position() - text_.data());
      std::string_view key;
      if (!cur_.string(key) || !cur_.eat(':')) return false;
      if (keys) keys->emplace_back(key, at);
      // operator[] as nlohmann's DOM parser does (json_sax_dom_parser::key, nlohmann/json 3.11): a
      // repeated key keeps its first place and takes the last value.
      json& member = out[std::string(key)];
      if (!value(member, depth + 1, nullptr)) return false;
    } while (cur_.eat(','));
    return cur_.eat('}');
  }

  bool array(json& out, std::size_t depth) {
    cur_.eat('[');
    out = json::array();
    if (cur_.eat(']')) return true;
    do {
      json item;
      if (!value(item, depth + 1, nullptr)) return false;
      out.push_back(std::move(item));
    } while (cur_.eat(','));
    return cur_.eat(']');
  }

  // RFC 8259's number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?. nlohmann's lexer keeps an
  // integer without fraction or exponent as int64 (with a minus) or uint64 (without), and reads
  // anything else, or an integer that overflows, as a double with strtod. std::from_chars rounds as
  // strtod does (both correctly); where it reports a range error (an integer past 64 bits, a
  // double past its range) the text goes to nlohmann instead.
  bool number(json& out) {
    const char* start = cur_.position();
    const char* p = start;
    const char* e = end();
    auto digits = [&] {
      const char* from = p;
      while (p < e && static_cast<unsigned>(*p - '0') < 10) ++p;
      return p > from;
    };
    const bool negative = p < e && *p == '-';
    if (negative) ++p;
    const char* int_start = p;
    if (!digits()) return false;
    if (*int_start == '0' && p - int_start > 1) return false;  // a leading zero is not JSON
    bool integer = true;
    if (p < e && *p == '.') {
      ++p;
      if (!digits()) return false;
      integer = false;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
      ++p;
      if (p < e && (*p == '+' || *p == '-')) ++p;
      if (!digits()) return false;
      integer = false;
    }
    if (integer && negative) {
      std::int64_t v = 0;
      if (std::from_chars(start, p, v).ec != std::errc()) return false;
      out = v;
    } else if (integer) {
      std::uint64_t v = 0;
      if (std::from_chars(start, p, v).ec != std::errc()) return false;
      out = v;
    } else {
      double v = 0;
      if (std::from_chars(start, p, v).ec != std::errc() || !std::isfinite(v)) return false;
      out = v;
    }
    cur_.rewind(p);
    return true;
  }

  std::string_view text_;
  PlainJson cur_;
};

}  // namespace

std::optional<nlohmann::ordered_json> read_plain_json_value(std::string_view text, std::vector<TopLevelKey>* keys) {
  Reader reader(text);
  json out;
  if (keys) keys->clear();
  if (!reader.value(out, 0, keys) || !reader.at_end()) return std::nullopt;
  return out;
}

}  // namespace shardcheck::detail
