#include "shardcheck/text.hpp"

#include <fmt/format.h>

#include <cctype>

namespace shardcheck {

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
