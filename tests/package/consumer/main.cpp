// consumer MODEL WORLD_SIZE: plans FSDP for MODEL through the installed library and prints one line
// per unit, "path numel shard_numel", then the exit code the CLI would give.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "shardcheck/preflight.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: consumer MODEL WORLD_SIZE\n");
    return 2;
  }
  shardcheck::PreflightRequest req;
  req.rules_dir = CONSUMER_RULES_DIR;
  req.model = argv[1];
  const int world = std::atoi(argv[2]);
  req.overrides = [world](shardcheck::FsdpSettings& s) { s.world_size.value = world; };
  const shardcheck::PreflightResult r = shardcheck::run_preflight(req);
  for (const auto& d : r.sink.items()) std::fprintf(stderr, "%s: %s\n", d.code.c_str(), d.message.c_str());
  if (!r.plan) return 3;
  for (const auto& u : r.plan->units)
    std::printf("%s %lld %lld\n", u.path.empty() ? "(root)" : u.path.c_str(), static_cast<long long>(u.numel),
                static_cast<long long>(u.shard_numel));
  return static_cast<int>(r.sink.first_error_exit_code());
}
