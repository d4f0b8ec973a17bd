#pragma once
// Reading a whole file in tests (fixtures, sources): the bytes as they are, "" when unreadable.

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace shardcheck::test {

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace shardcheck::test
