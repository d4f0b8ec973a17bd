// `shardcheck smoke ...`: hands the whole command line to the shardcheck-smoke binary installed
// next to this one. The runner links LibTorch; keeping it a separate program means the static
// tool never loads (or needs) LibTorch, and a rank under torchrun is one plain process.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "cli/commands.hpp"
#include "shardcheck/exit_codes.hpp"

namespace shardcheck::cli {
namespace {

std::filesystem::path smoke_binary() {
  if (const char* env = std::getenv("SHARDCHECK_SMOKE_BINARY"); env && *env) return env;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (ec ? std::filesystem::path(".") : self.parent_path()) / "shardcheck-smoke";
}

bool asks_for_help(const std::vector<std::string>& rest) {
  for (const auto& a : rest) {
    if (a == "--") break;
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

// Help must print even where the runner is missing: what smoke is, how it is called, and why its
// own options cannot be listed here (they are the runner's).
int help_without_runner(const std::filesystem::path& binary) {
  std::printf(
      "Verify the shard plan with real all-gather / reduce-scatter over c10d process groups (LibTorch)\n"
      "Usage: shardcheck smoke MODEL [runner options...]\n\n"
      "Every argument after `smoke` goes to the runner, shardcheck-smoke, which is not installed here (%s).\n"
      "It is built only where CMake finds LibTorch (scripts/setup.sh installs Debian's libtorch-dev and\n"
      "libgloo-dev; then rebuild), and `shardcheck smoke --help` then lists its options. docs/smoke.md\n"
      "describes them. Without the runner, `shardcheck smoke MODEL ...` exits 27.\n",
      binary.c_str());
  return 0;
}

int exec_smoke(const std::vector<std::string>& rest, const CliContext& ctx) {
  const auto binary = smoke_binary();
  std::vector<std::string> args{binary.string()};
  args.insert(args.end(), rest.begin(), rest.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::setenv("SHARDCHECK_RULES", ctx.rules_dir.c_str(), 1);  // same rules as this process
  std::fflush(stdout);
  ::execv(binary.c_str(), argv.data());
  const int err = errno;
  if (asks_for_help(rest)) return help_without_runner(binary);
  std::fprintf(stderr,
               "shardcheck smoke: cannot run %s: %s\n"
               "  the smoke runner is built only where CMake finds LibTorch (scripts/setup.sh installs Debian's "
               "libtorch-dev and libgloo-dev; then rebuild)\n",
               binary.c_str(), std::strerror(err));
  return to_int(ExitCode::smoke_not_built);
}

}  // namespace

void register_smoke(CLI::App& app, CliContext& ctx) {
  CLI::App* cmd = app.add_subcommand(
      "smoke", "Verify the shard plan with real all-gather / reduce-scatter over c10d process groups (LibTorch)");
  cmd->prefix_command();  // everything after `smoke` belongs to shardcheck-smoke
  cmd->set_help_flag();   // ... --help included
  cmd->callback([cmd, &ctx] { ctx.exit_code = exec_smoke(cmd->remaining(), ctx); });
}

}  // namespace shardcheck::cli
