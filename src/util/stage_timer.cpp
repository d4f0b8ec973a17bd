#include "util/stage_timer.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <sys/resource.h>
#include <unistd.h>

namespace shardcheck::util {
namespace {

// The time of the first timer (about when main() began), so stages on several threads line up.
std::chrono::steady_clock::time_point origin() {
  static const auto t = std::chrono::steady_clock::now();
  return t;
}

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

bool enabled() {
  static const bool on = [] {
    const char* v = std::getenv("SHARDCHECK_TIMINGS");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

}  // namespace

StageTimer::StageTimer(const char* stage) : stage_(enabled() ? stage : nullptr) {
  if (stage_) {
    origin();
    start_ = std::chrono::steady_clock::now();
    start_cpu_ms_ = thread_cpu_ms();
  }
}

void StageTimer::lap(const char* next) {
  if (!stage_) return;
  const auto now = std::chrono::steady_clock::now();
  // Peak RSS so far beside the time: in a fresh process every new page is a fault (and a 2 MiB
  // page a 2 MiB memset by the kernel), so memory growth is time.
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  using ms = std::chrono::duration<double, std::milli>;
  const double cpu = thread_cpu_ms();
  std::fprintf(stderr,
               "shardcheck: timing %-28s %8.2f ms  (cpu %6.2f ms; %6.2f..%6.2f on thread %ld; peak RSS %6.1f MB, "
               "%ld faults)\n",
               stage_, ms(now - start_).count(), cpu - start_cpu_ms_, ms(start_ - origin()).count(),
               ms(now - origin()).count(), static_cast<long>(gettid()), usage.ru_maxrss / 1024.0, usage.ru_minflt);
  stage_ = next;
  start_ = now;
  start_cpu_ms_ = cpu;
}

}  // namespace shardcheck::util
