// rules/optimizers.yaml: the optimizer models the memory estimate and the step replay count.
#include "shardcheck/optimizers.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace shardcheck {

std::optional<OptimizerModel> load_optimizer(const std::string& rules_dir, const std::string& name,
                                             std::string& error) {
  const std::string path = rules_dir + "/optimizers.yaml";
  try {
    const YAML::Node root = YAML::LoadFile(path);
    OptimizerModel o;
    o.name = name;
    const YAML::Node entry = root[name];
    if (!entry || !entry.IsMap()) {
      o.known = false;
      return o;
    }
    const auto count = [&](const char* key, int fallback) {
      const YAML::Node n = entry[key];
      return n ? n.as<int>() : fallback;
    };
    o.states = count("states", 0);
    o.byte_states = count("byte_states", 0);
    o.block = count("block", 0);
    o.temporaries = count("temporaries", 0);
    if (entry["source"]) o.source = entry["source"].as<std::string>();
    return o;
  } catch (const std::exception& e) {
    error = fmt::format("{}: cannot read the optimizer models: {}", path, e.what());
    return std::nullopt;
  }
}

}  // namespace shardcheck
