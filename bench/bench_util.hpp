#pragma once
// Timing helpers shared by the benchmark drivers: medians, never single runs.

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
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

// One run of a command in a fresh process, stdout and stderr to /dev/null.
struct ProcessRun {
  int exit_code = -1;   // -1: killed by a signal, 127: could not exec
  double wall_ms = 0;   // spawned to reaped, what a user waits for
  long max_rss_kb = 0;  // peak resident set of the child
};

// Started with posix_spawn, as Python's subprocess and most CI runners start a tool: the child's
// cost, without copying this (larger) benchmark process's page tables the way fork() would.
inline ProcessRun run_process(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  ProcessRun r;
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  rusage ru{};
  if (rc != 0 || wait4(pid, &status, 0, &ru) < 0) return r;
  r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.max_rss_kb = ru.ru_maxrss;
  return r;
}

}  // namespace shardcheck::bench
