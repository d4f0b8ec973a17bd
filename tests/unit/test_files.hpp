#pragma once
// Reading a whole file in tests (fixtures, sources): the bytes as they are, "" when unreadable.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace shardcheck::test {

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A JSON fixture; an unreadable file fails the test here.
inline nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in, "cannot read " << path);
  return nlohmann::json::parse(in);
}

}  // namespace shardcheck::test
