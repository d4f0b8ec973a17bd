#include "shardcheck/text.hpp"

#include <cctype>

namespace shardcheck {

std::string ascii_lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string ascii_upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::optional<bool> accelerate_str_to_bool(std::string_view s) {
  const std::string v = ascii_lower(std::string(s));
  if (v == "y" || v == "yes" || v == "t" || v == "true" || v == "on" || v == "1") return true;
  if (v == "n" || v == "no" || v == "f" || v == "false" || v == "off" || v == "0") return false;
  return std::nullopt;
}

}  // namespace shardcheck
