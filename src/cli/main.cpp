// shardcheck CLI: a thin layer that parses flags, calls the library and maps results to exit codes.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/commands.hpp"
#include "cli/usage_hints.hpp"
#include "shardcheck/exit_codes.hpp"
#include "shardcheck/rules_dir.hpp"

namespace {

const char* kExitCodeTable = R"(Exit codes:
  0  success, nothing found            6  safetensors file truncated or oversized
  1  findings (errors; --strict: warnings)  7  index disagrees with shards
  2  usage error                       8  malformed rules/ data
  3  I/O error                         9  checkpoint disagrees with the registry
  4  invalid config.json              10  unparsable accelerate config
  5  invalid safetensors header      11  model or adapter shardcheck cannot lay out
                                      12  invalid adapter_config.json
                                      13  invalid --module-tree file
 smoke (LibTorch runner):
 20  wrong elements / bytes differ    25  master unreachable
 21  ranks never joined (--timeout)   26  busbw below 0.9 x --expect-busbw
 22  a rank died or stopped answering 27  shardcheck-smoke not built
 23  WORLD_SIZE mismatch              28  --weights: checkpoint lacks the plan's tensors
 24  MASTER_PORT in use               29  bad RANK/WORLD_SIZE/MASTER_* or cannot start ranks
 Hub model ids (org/name[@revision]):
 30  not cached and HF_HUB_OFFLINE=1  35  404: repository, revision or file missing
 31  cannot connect                   36  429/5xx after retries
 32  timed out                        37  malformed reply (short body, bad range)
 33  401: gated/private, no token     38  redirect loop
 34  403: token has no access         39  cache unwritable or snapshot partial
                                      70  internal error)";

// The index in argv of the subcommand's name, or argc (none yet, or --help): only that one is
// registered, since building every subcommand's CLI11 options is a measurable part of a short run
// (lint of one file).
int subcommand_index(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--rules") {
      ++i;  // its value
      continue;
    }
    if (a.starts_with("-")) continue;
    return i;
  }
  return argc;
}

// A usage error of our own wording (exit 2, as CLI11's).
int usage_error(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  return shardcheck::to_int(shardcheck::ExitCode::usage);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace shardcheck;
  CLI::App app{"shardcheck: pre-flight checks for FSDP training (accelerate + PyTorch FSDP)"};
  app.set_version_flag("--version", std::string("shardcheck ") + SHARDCHECK_VERSION);
  app.footer(kExitCodeTable);
  app.require_subcommand(1);

  cli::CliContext ctx;
  ctx.rules_dir = default_rules_dir();
  ctx.color = isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
  app.add_option("--rules", ctx.rules_dir, "Directory of rule data (models/, accelerate/)")
      ->check(CLI::ExistingDirectory);

  using Register = void (*)(CLI::App&, cli::CliContext&);
  static constexpr std::pair<std::string_view, Register> kCommands[] = {
      {"inspect", cli::register_inspect}, {"lint", cli::register_lint}, {"rules", cli::register_rules},
      {"explain", cli::register_explain}, {"plan", cli::register_plan}, {"check", cli::register_check},
      {"smoke", cli::register_smoke}};
  const int sub_at = subcommand_index(argc, argv);
  const std::string_view wanted = sub_at < argc ? std::string_view(argv[sub_at]) : std::string_view();
  const bool known =
      std::any_of(std::begin(kCommands), std::end(kCommands), [&](const auto& c) { return c.first == wanted; });
  if (!known && !wanted.empty()) {
    std::vector<std::string> names;
    for (const auto& c : kCommands) names.emplace_back(c.first);
    if (auto message = cli::unknown_command(wanted, names)) return usage_error(*message);
  }
  for (const auto& [name, add] : kCommands)
    if (!known || name == wanted) add(app, ctx);  // an unknown name: all, so CLI11 lists them
  // The full exit-code table once, under `shardcheck --help`; a subcommand's help points there.
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    sub->footer("Exit codes: 0 clean, 1 findings, 2 usage, 3 I/O, ...; all of them: shardcheck --help");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // An unknown --flag is said with a suggestion; CLI11 would list it among "not expected" values.
    if (e.get_exit_code() != 0 && known) {
      const CLI::App* sub = app.get_subcommand(std::string(wanted));
      if (auto message = cli::unknown_flag(app, *sub, argc, argv, sub_at + 1)) return usage_error(*message);
    }
    const int rc = app.exit(e);
    return rc == 0 ? 0 : to_int(ExitCode::usage);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardcheck: internal error: %s\n", e.what());
    return to_int(ExitCode::internal);
  }
  return ctx.exit_code;
}
