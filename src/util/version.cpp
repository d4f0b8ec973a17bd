#include "shardcheck/version.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>

namespace shardcheck {

std::optional<Version> Version::parse(std::string_view s) {
  Version v;
  int* parts[3] = {&v.major, &v.minor, &v.patch};
  std::size_t pos = 0;
  for (int i = 0; i < 3 && pos < s.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[pos]))) return i == 0 ? std::nullopt : std::optional(v);
    auto [p, ec] = std::from_chars(s.data() + pos, s.data() + s.size(), *parts[i]);
    if (ec != std::errc()) return std::nullopt;
    pos = static_cast<std::size_t>(p - s.data());
    if (pos < s.size() && s[pos] == '.')
      ++pos;
    else
      break;
  }
  // Anything after the numbers ("dev0", "rc1") is ignored: 5.16.0.dev0 behaves as 5.16.0.
  return v;
}

std::string Version::str() const { return fmt::format("{}.{}.{}", major, minor, patch); }

}  // namespace shardcheck
