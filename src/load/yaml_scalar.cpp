// PyYAML's YAML 1.1 implicit resolver (yaml/resolver.py, PyYAML 6.0), reproduced for the scalars an
// accelerate config holds. This is what makes `mixed_precision: no` a bool and `1e8` a string:
// the float pattern demands a dot and a signed exponent, so `1e8` stays a str while `1.0e+8` is a float.
#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include "shardcheck/config_doc.hpp"

namespace shardcheck {
namespace {

bool one_of(std::string_view s, std::initializer_list<std::string_view> words) {
  return std::find(words.begin(), words.end(), s) != words.end();
}

bool all_of(std::string_view s, bool (*pred)(char)) { return !s.empty() && std::all_of(s.begin(), s.end(), pred); }

bool is_dec(char c) { return (c >= '0' && c <= '9') || c == '_'; }
bool is_oct(char c) { return (c >= '0' && c <= '7') || c == '_'; }
bool is_bin(char c) { return c == '0' || c == '1' || c == '_'; }
bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) || c == '_'; }

std::string strip_underscores(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != '_') out += c;
  return out;
}

// int: [-+]?0b[01_]+ | [-+]?0[0-7_]+ | [-+]?(0|[1-9][0-9_]*) | [-+]?0x[0-9a-fA-F_]+ | base 60
std::optional<std::int64_t> yaml_int(std::string_view s) {
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  int base = 10;
  std::string digits;
  if (s.size() > 2 && s[0] == '0' && s[1] == 'b' && all_of(s.substr(2), is_bin)) {
    base = 2;
    digits = strip_underscores(s.substr(2));
  } else if (s.size() > 2 && s[0] == '0' && s[1] == 'x' && all_of(s.substr(2), is_hex)) {
    base = 16;
    digits = strip_underscores(s.substr(2));
  } else if (s == "0")
    digits = "0";
  else if (s.size() > 1 && s[0] == '0' && all_of(s.substr(1), is_oct)) {
    base = 8;
    digits = strip_underscores(s.substr(1));
  } else if (s[0] >= '1' && s[0] <= '9' && all_of(s, is_dec))
    digits = strip_underscores(s);
  else
    return std::nullopt;
  if (digits.empty()) digits = "0";
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
  if (ec != std::errc() || p != digits.data() + digits.size()) {
    // Too large for int64: Python would still make an int. Saturate; the value is absurd anyway.
    v = std::numeric_limits<std::int64_t>::max();
  }
  return neg ? -v : v;
}

// float: [-+]?([0-9][0-9_]*)?\.[0-9_]*([eE][-+][0-9]+)? | [-+]?\.(inf|Inf|INF) | \.(nan|NaN|NAN)
std::optional<double> yaml_float(std::string_view s) {
  if (one_of(s, {".nan", ".NaN", ".NAN"})) return std::numeric_limits<double>::quiet_NaN();
  std::string_view body = s;
  bool neg = false;
  if (!body.empty() && (body[0] == '-' || body[0] == '+')) {
    neg = body[0] == '-';
    body.remove_prefix(1);
  }
  if (one_of(body, {".inf", ".Inf", ".INF"})) return neg ? -HUGE_VAL : HUGE_VAL;
  std::size_t i = 0;
  if (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i]))) {
    while (i < body.size() && is_dec(body[i])) ++i;
  }
  if (i >= body.size() || body[i] != '.') return std::nullopt;
  ++i;
  while (i < body.size() && is_dec(body[i])) ++i;
  if (i < body.size()) {
    if (body[i] != 'e' && body[i] != 'E') return std::nullopt;
    ++i;
    if (i >= body.size() || (body[i] != '-' && body[i] != '+')) return std::nullopt;
    ++i;
    std::size_t start = i;
    while (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i]))) ++i;
    if (i == start || i != body.size()) return std::nullopt;
  }
  if (body == ".") return std::nullopt;  // "." alone is a string in PyYAML
  std::string clean = strip_underscores(s);
  try {
    return std::stod(clean);
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace

const char* yaml_type_name(YamlType t) {
  switch (t) {
    case YamlType::null:
      return "NoneType";
    case YamlType::boolean:
      return "bool";
    case YamlType::integer:
      return "int";
    case YamlType::floating:
      return "float";
    case YamlType::string:
      return "str";
  }
  return "str";
}

YamlScalar resolve_yaml11(std::string_view text, bool quoted) {
  YamlScalar r;
  if (quoted) return r;
  if (one_of(text, {"", "~", "null", "Null", "NULL"})) {
    r.type = YamlType::null;
    return r;
  }
  if (one_of(text, {"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})) {
    r.type = YamlType::boolean;
    r.boolean = true;
    return r;
  }
  if (one_of(text, {"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})) {
    r.type = YamlType::boolean;
    r.boolean = false;
    return r;
  }
  if (auto i = yaml_int(text)) {
    r.type = YamlType::integer;
    r.integer = *i;
    return r;
  }
  if (auto f = yaml_float(text)) {
    r.type = YamlType::floating;
    r.floating = *f;
    return r;
  }
  return r;
}

YamlScalar YamlNode::scalar() const {
  if (kind == Kind::null) {
    YamlScalar r;
    r.type = YamlType::null;
    return r;
  }
  if (kind != Kind::scalar) return {};
  return resolve_yaml11(text, quoted);
}

const YamlEntry* YamlNode::find(std::string_view key) const {
  const YamlEntry* found = nullptr;
  for (const auto& e : entries)
    if (e.key == key) found = &e;  // PyYAML keeps the last duplicate
  return found;
}

}  // namespace shardcheck
