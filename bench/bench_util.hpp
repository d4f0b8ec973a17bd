#pragma once
// Timing helpers shared by the benchmark drivers: medians, never single runs.

#include <algorithm>
#include <chrono>
#include <vector>

namespace shardcheck::bench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Median wall time of `n` calls of f, in milliseconds.
template <class F>
double median_ms(int n, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < n; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(std::move(t));
}

}  // namespace shardcheck::bench
