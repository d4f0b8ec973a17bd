#pragma once
// Reading a whole file in tests (fixtures, sources): the bytes as they are, "" when unreadable.

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

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

// The *.json files of a folder whose names start with `prefix`, sorted by name (oracle cases).
inline std::vector<std::filesystem::path> json_files(const std::filesystem::path& dir, const std::string& prefix = "") {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".json" && entry.path().filename().string().starts_with(prefix))
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace shardcheck::test
