#include "platform/mapped_reads.hpp"

#include "platform/tuning.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>

#include "shardcheck/exit_codes.hpp"

namespace shardcheck::platform {
namespace {

std::atomic<bool> allowed{false};

// Async-signal-safe: one write(2) of a fixed message, then _exit.
extern "C" void on_sigbus(int) {
  static constexpr char kMessage[] =
      "shardcheck: error: an input file shrank while it was being read (another process truncated or "
      "rewrote it; SIGBUS on its memory map). Nothing was checked: run again once nothing writes to "
      "the model directory.\n";
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
  ::_exit(static_cast<int>(ExitCode::io));
}

}  // namespace

bool allow_mapped_reads() {
  if (!tuning_enabled()) return false;  // files are copied
  static const bool installed = [] {
    struct sigaction action {};
    action.sa_handler = on_sigbus;
    sigemptyset(&action.sa_mask);
    return ::sigaction(SIGBUS, &action, nullptr) == 0;
  }();
  if (installed) allowed.store(true, std::memory_order_relaxed);
  return installed;
}

bool mapped_reads_allowed() { return allowed.load(std::memory_order_relaxed); }

}  // namespace shardcheck::platform
