#pragma once
// Wall time of the stages of one run, for performance work: with SHARDCHECK_TIMINGS=1 in the
// environment every timed stage prints `shardcheck: timing <stage> <ms> ms` to stderr; otherwise a
// timer costs one cached flag test. bench/bench_inspect.cpp --phases gives medians over fresh
// processes; this shows where a single run spends its time, inside the loader too.

#include <chrono>

namespace shardcheck::util {

class StageTimer {
 public:
  // Starts timing `stage` (a string literal: it is kept, not copied).
  explicit StageTimer(const char* stage);
  ~StageTimer() { lap(nullptr); }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

  // Ends the current stage and starts `next` (nullptr: none).
  void lap(const char* next);

 private:
  const char* stage_;
  std::chrono::steady_clock::time_point start_;
  double start_cpu_ms_ = 0;  // this thread's CPU time when the stage began
};

}  // namespace shardcheck::util
