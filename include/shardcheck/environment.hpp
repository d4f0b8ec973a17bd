#pragma once
// The caller's environment variables that accelerate and FSDP read (FSDP_*, ACCELERATE_*,
// PARALLELISM_CONFIG_*), sorted by name.

#include <vector>

#include "shardcheck/lint.hpp"

namespace shardcheck {

std::vector<EnvVar> fsdp_environment_of_process();

}  // namespace shardcheck
