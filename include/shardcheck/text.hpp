#pragma once
// Small text helpers with one home: ASCII case folding and accelerate's truth strings.

#include <optional>
#include <string>
#include <string_view>

namespace shardcheck {

std::string ascii_lower(std::string s);
std::string ascii_upper(std::string s);

// accelerate utils/environment.py `str_to_bool` (on the lower-cased text): y/yes/t/true/on/1 -> true,
// n/no/f/false/off/0 -> false, anything else nullopt (accelerate raises "invalid truth value").
std::optional<bool> accelerate_str_to_bool(std::string_view s);

}  // namespace shardcheck
