#pragma once
// Each subcommand lives in its own cmd_<name>.cpp and adds itself to the app here.
// A command's callback stores its exit code in `CliContext::exit_code`.

#include <CLI/CLI.hpp>
#include <string>

namespace shardcheck::cli {

struct CliContext {
  int exit_code = 0;
  std::string rules_dir;  // --rules, else default_rules_dir() (shardcheck/rules_dir.hpp)
  bool color = false;     // stdout is a terminal and NO_COLOR is unset
};

void register_inspect(CLI::App& app, CliContext& ctx);
void register_lint(CLI::App& app, CliContext& ctx);
void register_rules(CLI::App& app, CliContext& ctx);
void register_explain(CLI::App& app, CliContext& ctx);
void register_plan(CLI::App& app, CliContext& ctx);
void register_check(CLI::App& app, CliContext& ctx);
void register_smoke(CLI::App& app, CliContext& ctx);

}  // namespace shardcheck::cli
