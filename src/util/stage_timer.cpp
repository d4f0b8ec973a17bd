#include "util/stage_timer.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <sys/resource.h>

namespace shardcheck::util {
namespace {

bool enabled() {
  static const bool on = [] {
    const char* v = std::getenv("SHARDCHECK_TIMINGS");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

}  // namespace

StageTimer::StageTimer(const char* stage) : stage_(enabled() ? stage : nullptr) {
  if (stage_) start_ = std::chrono::steady_clock::now();
}

void StageTimer::lap(const char* next) {
  if (!stage_) return;
  const auto now = std::chrono::steady_clock::now();
  // Peak RSS so far beside the time: in a fresh process every new page is a fault (and a 2 MiB
  // page a 2 MiB memset by the kernel), so memory growth is time.
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::fprintf(stderr, "shardcheck: timing %-28s %8.2f ms  (peak RSS %6.1f MB, %ld faults)\n", stage_,
               std::chrono::duration<double, std::milli>(now - start_).count(), usage.ru_maxrss / 1024.0,
               usage.ru_minflt);
  stage_ = next;
  start_ = now;
}

}  // namespace shardcheck::util
