#pragma once
// A release number of torch, transformers, accelerate or peft, as the rules and the version gates
// compare them: major.minor.patch, with anything after the numbers ("dev0", "rc1", "+cu121") ignored.
#include <optional>
#include <string>
#include <string_view>

namespace shardcheck {

struct Version {
  int major = 0, minor = 0, patch = 0;
  static std::optional<Version> parse(std::string_view s);  // "4.48", "4.48.0", "5.16.0.dev0"
  std::string str() const;
  auto operator<=>(const Version&) const = default;
};

}  // namespace shardcheck
