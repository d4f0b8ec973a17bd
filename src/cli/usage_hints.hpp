#pragma once
// Usage mistakes CLI11 reports without help ("A subcommand is required" for `shardcheck chek`, "The
// following arguments were not expected: 8 --world-sise"): the same mistakes said plainly, each with
// a did-you-mean from the project's one suggestion helper, and accelerate launch's spellings
// (--num_processes, --world_size, --fsdp_sharding_strategy) pointed at shardcheck's flag.

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardcheck::cli {

// "unknown command 'chek'; did you mean 'check'? (commands: ...)" when `word` is not one of `commands`.
std::optional<std::string> unknown_command(std::string_view word, const std::vector<std::string>& commands);

// The first --flag of argv[first..] that neither `sub` nor `app` defines, explained; nullopt when
// every flag is known. Arguments after "--" are not flags.
std::optional<std::string> unknown_flag(const CLI::App& app, const CLI::App& sub, int argc, char** argv, int first);

}  // namespace shardcheck::cli
