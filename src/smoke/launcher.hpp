#pragma once
// Launching like every PyTorch job: under torchrun / accelerate launch / srun a rank reads RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT (torch/distributed/run.py sets exactly these);
// `--nproc N` starts N such ranks on this machine itself and supervises them.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace shardcheck::smoke {

struct LaunchEnv {
  int rank = 0, world = 1, local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;  // torch's default (TCPStoreOptions::kDefaultPort)
};

// nullopt when neither RANK nor WORLD_SIZE is set (not launched as a rank). Throws SmokeFault
// (smoke_launch) naming the variable when a value is malformed or out of range.
std::optional<LaunchEnv> read_launch_env(const std::function<const char*(const char*)>& getenv);

// A TCP port that was free a moment ago on the loopback interface (bind to port 0, read, close).
int pick_free_port();

struct RankExit {
  int rank = 0;
  pid_t pid = 0;
  bool started = false;
  bool exited = false;
  int code = -1;   // exit status when it exited normally
  int signal = 0;  // terminating signal, 0 if none
  bool killed_by_us = false;
};

struct SuperviseOptions {
  int nproc = 1;
  std::vector<std::string> argv;  // argv[0] is the program to exec
  int port = 0;
  std::chrono::milliseconds timeout{60000};
  int absent_rank = -1;  // test only: never start this rank
};

struct SuperviseResult {
  int exit_code = 0;
  std::string message;  // the launcher's own explanation ("" when rank 0 said it all)
  std::vector<RankExit> ranks;
  bool rank0_reported = false;  // rank 0 exited normally, so it printed its own verdict
};

// Starts the ranks, waits for all of them; once one fails, the others get --timeout (plus a
// second) to finish before they are killed and named as hung.
SuperviseResult supervise(const SuperviseOptions& opt);
// How the launcher combines the ranks' endings into one exit code and message (pure; tested).
SuperviseResult summarize(std::vector<RankExit> ranks, std::chrono::milliseconds timeout);

}  // namespace shardcheck::smoke
