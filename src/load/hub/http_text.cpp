#include "load/hub/http_text.hpp"

namespace shardcheck::hub {
namespace {

std::string_view trim_ows(std::string_view s) {
  auto ows = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && ows(s.back())) s.remove_suffix(1);
  return s;
}

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

std::optional<std::uint64_t> parse_decimal_u64(std::string_view s) {
  if (s.empty() || s.size() > 20) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10) return std::nullopt;
    v = v * 10 + digit;
  }
  return v;
}

std::optional<std::pair<std::string_view, std::string_view>> split_header_line(std::string_view line) {
  const auto colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  const std::string_view name = line.substr(0, colon);
  // A field name is a token: no whitespace or control bytes (RFC 9110 §5.1).
  for (char c : name)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return std::nullopt;
  return std::pair{name, trim_ows(line.substr(colon + 1))};
}

bool header_name_is(std::string_view name, std::string_view expected) {
  if (name.size() != expected.size()) return false;
  for (std::size_t i = 0; i < name.size(); ++i)
    if (lower(name[i]) != lower(expected[i])) return false;
  return true;
}

std::optional<ContentRange> parse_content_range(std::string_view value) {
  value = trim_ows(value);
  constexpr std::string_view kUnit = "bytes ";
  if (value.size() < kUnit.size() || !header_name_is(value.substr(0, kUnit.size()), kUnit)) return std::nullopt;
  value.remove_prefix(kUnit.size());
  const auto dash = value.find('-'), slash = value.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || dash > slash) return std::nullopt;
  ContentRange r;
  const auto first = parse_decimal_u64(value.substr(0, dash));
  const auto last = parse_decimal_u64(value.substr(dash + 1, slash - dash - 1));
  if (!first || !last || *first > *last) return std::nullopt;
  r.first = *first;
  r.last = *last;
  const std::string_view complete = value.substr(slash + 1);
  if (complete != "*") {
    const auto n = parse_decimal_u64(complete);
    if (!n || *n <= r.last) return std::nullopt;
    r.complete = *n;
  }
  return r;
}

std::optional<std::uint64_t> parse_retry_after_seconds(std::string_view value) {
  return parse_decimal_u64(trim_ows(value));
}

std::string url_quote(std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                            c == '.' || c == '_' || c == '~' || (keep_slash && c == '/');
    if (unreserved) {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

}  // namespace shardcheck::hub
