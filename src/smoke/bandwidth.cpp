#include "smoke/bandwidth.hpp"

#include <fmt/format.h>

#include <cctype>
#include <limits>

namespace shardcheck::smoke {

double algbw_gbps(std::int64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0;
}

double busbw_gbps(double algbw, int ranks) { return ranks > 0 ? algbw * (ranks - 1) / ranks : 0.0; }

double busbw_gbps(Collective c, double algbw, int ranks) {
  return c == Collective::all_reduce ? 2 * busbw_gbps(algbw, ranks) : busbw_gbps(algbw, ranks);
}

std::optional<std::int64_t> parse_nccl_size(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (...) {
    return std::nullopt;
  }
  std::int64_t mult = 1;
  const std::string unit = text.substr(used);
  if (unit == "K" || unit == "k")
    mult = 1024;
  else if (unit == "M" || unit == "m")
    mult = 1024 * 1024;
  else if (unit == "G" || unit == "g")
    mult = 1024 * 1024 * 1024;
  else if (!unit.empty())
    return std::nullopt;
  if (v < 0 || v > std::numeric_limits<std::int64_t>::max() / mult) return std::nullopt;
  return v * mult;
}

std::vector<std::int64_t> sweep_sizes(std::int64_t min, std::int64_t max, int factor, std::string& error) {
  std::vector<std::int64_t> out;
  if (min <= 0 || max < min) {
    error = fmt::format("expected 0 < -b <= -e, found -b {} and -e {}", min, max);
    return out;
  }
  if (factor < 2 && min < max) {
    error = fmt::format("expected -f of at least 2 for a sweep from {} to {}, found {}", min, max, factor);
    return out;
  }
  for (std::int64_t s = min; s <= max; s *= factor) {
    out.push_back(s);
    if (factor < 2 || s > max / factor) break;
  }
  return out;
}

std::int64_t count_per_rank(std::int64_t size_bytes, int ranks, int element_bytes) {
  if (ranks <= 0 || element_bytes <= 0) return 0;
  return size_bytes / (static_cast<std::int64_t>(ranks) * element_bytes);
}

double average_busbw(const std::vector<BandwidthRow>& rows) {
  if (rows.empty()) return 0;
  double sum = 0;
  for (const auto& r : rows) sum += r.busbw;
  return sum / static_cast<double>(rows.size());
}

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::all_gather:
      return "all_gather";
    case Collective::reduce_scatter:
      return "reduce_scatter";
    case Collective::all_reduce:
      return "all_reduce";
  }
  return "?";
}

}  // namespace shardcheck::smoke
