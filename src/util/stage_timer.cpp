#include "util/stage_timer.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

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
  std::fprintf(stderr, "shardcheck: timing %-28s %8.2f ms\n", stage_,
               std::chrono::duration<double, std::milli>(now - start_).count());
  stage_ = next;
  start_ = now;
}

}  // namespace shardcheck::util
