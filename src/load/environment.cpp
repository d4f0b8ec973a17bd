#include "shardcheck/environment.hpp"

#include <algorithm>
#include <string_view>

extern char** environ;

namespace shardcheck {

std::vector<EnvVar> fsdp_environment_of_process() {
  std::vector<EnvVar> out;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    const auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    std::string name(kv.substr(0, eq));
    if (name.rfind("FSDP_", 0) == 0 || name.rfind("ACCELERATE_", 0) == 0 || name.rfind("PARALLELISM_CONFIG_", 0) == 0)
      out.push_back({name, std::string(kv.substr(eq + 1)), 0});
  }
  std::sort(out.begin(), out.end(), [](const EnvVar& a, const EnvVar& b) { return a.name < b.name; });
  return out;
}

}  // namespace shardcheck
