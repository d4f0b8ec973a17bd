#include "shardcheck/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <vector>

namespace shardcheck {

std::vector<std::string> python_split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t at = s.find(sep, start);
    out.emplace_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  if (word.size() > 200) return {};  // keep the quadratic distance bounded on hostile input
  const std::string lower = ascii_lower(std::string(word));
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, word.size() / 4) + 1;
  for (const auto& c : candidates) {
    if (c.size() > 200) continue;
    const std::size_t d = edit_distance(lower, ascii_lower(c));
    // A guess that keeps no character of the word ('1' for '3') is no suggestion.
    if (d < best_d && d < word.size()) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string ascii_lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string ascii_upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::optional<bool> accelerate_str_to_bool(std::string_view s) {
  const std::string v = ascii_lower(std::string(s));
  if (v == "y" || v == "yes" || v == "t" || v == "true" || v == "on" || v == "1") return true;
  if (v == "n" || v == "no" || v == "f" || v == "false" || v == "off" || v == "0") return false;
  return std::nullopt;
}

std::string human_count(std::int64_t n) {
  const double x = static_cast<double>(n);
  if (n < 1000) return std::to_string(n);
  if (n < 1'000'000) return fmt::format("{:.1f}K", x / 1e3);
  if (n < 1'000'000'000) return fmt::format("{:.1f}M", x / 1e6);
  if (n < 1'000'000'000'000) return fmt::format("{:.2f}B", x / 1e9);
  return fmt::format("{:.2f}T", x / 1e12);
}

std::string human_bytes(std::uint64_t b) {
  const double x = static_cast<double>(b);
  if (b < 1024) return fmt::format("{} B", b);
  if (b < (1ull << 20)) return fmt::format("{:.2f} KiB", x / 1024);
  if (b < (1ull << 30)) return fmt::format("{:.2f} MiB", x / (1 << 20));
  return fmt::format("{:.2f} GiB", x / (1ull << 30));
}

}  // namespace shardcheck
