#include "shardcheck/rules_dir.hpp"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace shardcheck {

namespace fs = std::filesystem;

std::string default_rules_dir() {
  if (const char* env = std::getenv("SHARDCHECK_RULES"); env && *env) return env;
  // /proc/self/exe, not argv[0]: the program may have been found on PATH or through a symlink
  // (pip's console script, /usr/bin), and this must name the real file's prefix.
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "shardcheck" / "rules";
    // The schema marks a rules directory; a bare share/shardcheck left by something else does not.
    if (fs::is_regular_file(installed / "accelerate" / "schema.yaml", ec)) return installed.string();
  }
  return SHARDCHECK_DEFAULT_RULES_DIR;
}

}  // namespace shardcheck
