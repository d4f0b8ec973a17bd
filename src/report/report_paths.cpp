#include "report/report_paths.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>

namespace shardcheck::report_paths {

std::string relative_path(const std::string& file, const std::string& base) {
  namespace fs = std::filesystem;
  std::string out = file;
  std::error_code ec;
  if (!base.empty()) {
    const fs::path abs = fs::weakly_canonical(fs::absolute(file, ec), ec);
    const fs::path root = fs::weakly_canonical(fs::absolute(base, ec), ec);
    const fs::path rel = abs.lexically_relative(root);
    if (!rel.empty() && rel.native().rfind("..", 0) != 0) out = rel.generic_string();
  }
  while (out.rfind("./", 0) == 0) out = out.substr(2);
  return out;
}

std::string fingerprint(const Diagnostic& d, const std::string& path) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const std::string* s : {&d.code, &path, &d.message})
    for (unsigned char c : *s + "\x1f") {
      h ^= c;
      h *= 1099511628211ULL;
    }
  return fmt::format("{:016x}", h);
}

}  // namespace shardcheck::report_paths
