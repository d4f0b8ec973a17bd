#include "smoke/launcher.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "smoke/comm.hpp"

namespace shardcheck::smoke {
namespace {

std::optional<long> parse_int(const char* text) {
  if (!text || !*text) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0') return std::nullopt;
  return v;
}

int env_int(const std::function<const char*(const char*)>& getenv, const char* name, long lo, long hi,
            std::optional<int> fallback) {
  const char* text = getenv(name);
  if (!text) {
    if (fallback) return *fallback;
    throw SmokeFault(ExitCode::smoke_launch,
                     fmt::format("{} is not set: a rank needs RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT "
                                 "(torchrun sets them), or run `shardcheck smoke --nproc N`",
                                 name));
  }
  auto v = parse_int(text);
  if (!v || *v < lo || *v > hi)
    throw SmokeFault(ExitCode::smoke_launch,
                     fmt::format("expected an integer from {} to {} in {}, found '{}'", lo, hi, name, text));
  return static_cast<int>(*v);
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? fmt::format("signal {} (SIG{})", sig, abbrev) : fmt::format("signal {}", sig);
}

}  // namespace

std::optional<LaunchEnv> read_launch_env(const std::function<const char*(const char*)>& getenv) {
  if (!getenv("RANK") && !getenv("WORLD_SIZE")) return std::nullopt;
  LaunchEnv e;
  e.world = env_int(getenv, "WORLD_SIZE", 1, 1 << 20, std::nullopt);
  e.rank = env_int(getenv, "RANK", 0, 1 << 20, std::nullopt);
  if (e.rank >= e.world)
    throw SmokeFault(
        ExitCode::smoke_world_mismatch,
        fmt::format("RANK={} is not below WORLD_SIZE={}: this rank belongs to a larger job", e.rank, e.world));
  e.local_rank = env_int(getenv, "LOCAL_RANK", 0, 1 << 16, 0);
  if (const char* addr = getenv("MASTER_ADDR"); addr && *addr)
    e.master_addr = addr;
  else if (e.world > 1)
    throw SmokeFault(ExitCode::smoke_launch, "MASTER_ADDR is not set: every rank must know where rank 0 listens");
  e.master_port = env_int(getenv, "MASTER_PORT", 1, 65535, e.world == 1 ? std::optional<int>(29500) : std::nullopt);
  return e;
}

int pick_free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw SmokeFault(ExitCode::smoke_launch, fmt::format("socket(): {}", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw SmokeFault(ExitCode::smoke_launch, fmt::format("cannot find a free port on 127.0.0.1: {}", why));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

SuperviseResult summarize(std::vector<RankExit> ranks, std::chrono::milliseconds timeout) {
  SuperviseResult res;
  std::vector<std::string> lines;
  int worst = 0;
  for (const auto& r : ranks) {
    if (!r.started) continue;
    if (r.killed_by_us) {
      lines.push_back(fmt::format("rank {} (pid {}) was still running {} s after another rank failed: killed", r.rank,
                                  r.pid, timeout.count() / 1000.0 + 1));
      worst = worst ? worst : to_int(ExitCode::smoke_rank_lost);
    } else if (r.signal != 0) {
      lines.push_back(fmt::format("rank {} (pid {}) died: killed by {}", r.rank, r.pid, signal_name(r.signal)));
      worst = to_int(ExitCode::smoke_rank_lost);
    } else if (r.code != 0 && r.rank != 0 && (r.code < 20 || r.code > 29)) {
      lines.push_back(fmt::format("rank {} (pid {}) exited with status {}", r.rank, r.pid, r.code));
    }
  }
  const RankExit* r0 = nullptr;
  for (const auto& r : ranks)
    if (r.rank == 0 && r.started) r0 = &r;
  res.rank0_reported = r0 && r0->exited && r0->signal == 0 && !r0->killed_by_us;
  if (res.rank0_reported && r0->code != 0) {
    // Rank 0 explained its own failure; a rank that died outright is the more precise cause.
    res.exit_code = worst == to_int(ExitCode::smoke_rank_lost) ? worst : r0->code;
  } else if (res.rank0_reported) {
    res.exit_code = worst;  // 0 unless a rank died after rank 0 finished
    if (res.exit_code == 0)
      for (const auto& r : ranks)
        if (r.started && r.code != 0) res.exit_code = r.code >= 20 && r.code <= 29 ? r.code : 22;
  } else {
    res.exit_code = to_int(ExitCode::smoke_rank_lost);
  }
  for (std::size_t i = 0; i < lines.size(); ++i) res.message += (i ? "\n" : "") + lines[i];
  res.ranks = std::move(ranks);
  return res;
}

SuperviseResult supervise(const SuperviseOptions& opt) {
  std::vector<RankExit> ranks(static_cast<std::size_t>(opt.nproc));
  std::vector<char*> args;
  for (const auto& a : opt.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (int r = 0; r < opt.nproc; ++r) {
    ranks[r].rank = r;
    if (r == opt.absent_rank) continue;
    const pid_t pid = ::fork();
    if (pid < 0) {
      for (auto& x : ranks)
        if (x.started) ::kill(x.pid, SIGKILL);
      throw SmokeFault(ExitCode::smoke_launch,
                       fmt::format("cannot start rank {}: fork(): {}", r, std::strerror(errno)));
    }
    if (pid == 0) {
      // The environment torch/distributed/run.py gives each worker.
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(opt.nproc).c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", std::to_string(opt.nproc).c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", std::to_string(opt.port).c_str(), 1);
      ::setenv("SHARDCHECK_SMOKE_CHILD", "1", 1);
      ::execv(args[0], args.data());
      std::fprintf(stderr, "shardcheck smoke: cannot exec %s: %s\n", args[0], std::strerror(errno));
      ::_exit(to_int(ExitCode::smoke_launch));
    }
    ranks[r].pid = pid;
    ranks[r].started = true;
  }
  using clock = std::chrono::steady_clock;
  std::optional<clock::time_point> kill_at;
  auto running = [&] {
    for (const auto& r : ranks)
      if (r.started && !r.exited) return true;
    return false;
  };
  while (running()) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (auto& r : ranks) {
        if (r.pid != pid || !r.started) continue;
        r.exited = true;
        if (WIFSIGNALED(status))
          r.signal = WTERMSIG(status);
        else
          r.code = WEXITSTATUS(status);
        if ((r.signal != 0 || r.code != 0) && !kill_at) kill_at = clock::now() + opt.timeout + std::chrono::seconds(1);
      }
      continue;
    }
    if (pid < 0 && errno != EINTR) break;
    if (kill_at && clock::now() > *kill_at) {
      for (auto& r : ranks)
        if (r.started && !r.exited) {
          ::kill(r.pid, SIGKILL);
          r.killed_by_us = true;
        }
      kill_at.reset();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return summarize(std::move(ranks), opt.timeout);
}

}  // namespace shardcheck::smoke
