#include <fmt/format.h>

#include "shardcheck/report.hpp"

namespace shardcheck {

std::string human_count(std::int64_t n) {
  const double x = static_cast<double>(n);
  if (n < 1000) return std::to_string(n);
  if (n < 1'000'000) return fmt::format("{:.1f}K", x / 1e3);
  if (n < 1'000'000'000) return fmt::format("{:.1f}M", x / 1e6);
  if (n < 1'000'000'000'000) return fmt::format("{:.2f}B", x / 1e9);
  return fmt::format("{:.2f}T", x / 1e12);
}

}  // namespace shardcheck
