#pragma once
// The caller's environment variables that accelerate and FSDP read (FSDP_*, ACCELERATE_*,
// PARALLELISM_CONFIG_*), sorted by name.

#include <string>
#include <vector>

namespace shardcheck {

// A variable of the caller's shell or of an --env-file.
struct EnvVar {
  std::string name, value;
  int line = 0;  // line in --env-file (0 = the process environment)
};

std::vector<EnvVar> fsdp_environment_of_process();

}  // namespace shardcheck
