#include "platform/tuning.hpp"

#include <cstdlib>
#include <string_view>

namespace shardcheck::platform {

bool tuning_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("SHARDCHECK_NO_TUNING");
    return v == nullptr || std::string_view(v).empty() || std::string_view(v) == "0";
  }();
  return enabled;
}

}  // namespace shardcheck::platform
