#include "cli/usage_hints.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "shardcheck/text.hpp"

namespace shardcheck::cli {
namespace {

std::set<std::string> long_flags(const CLI::App& app) {
  std::set<std::string> out{"--help"};
  for (const CLI::Option* o : app.get_options())
    for (const std::string& name : o->get_lnames()) out.insert("--" + name);
  return out;
}

// accelerate launch's option for what shardcheck calls differently (commands/launch.py, v1.14.0):
// the spelling with '_' for '-' and the fsdp_/parallelism_config_ prefixes dropped is tried first.
const std::map<std::string, std::string, std::less<>>& accelerate_names() {
  static const std::map<std::string, std::string, std::less<>> m = {
      {"--num-processes", "--world-size"},       {"--config-file", "--config"},
      {"--auto-wrap-policy", "--policy"},        {"--transformer-layer-cls-to-wrap", "--wrap-cls"},
      {"--dp-replicate-size", "--dp-replicate"},
  };
  return m;
}

// What an accelerate-style spelling stands for: "--world_size" is "--world-size" written with '_';
// "--fsdp_sharding_strategy" and "--num_processes" are accelerate launch options that shardcheck
// calls "--sharding-strategy" and "--world-size". "" when `flag` is neither.
std::string from_accelerate_spelling(const std::string& flag, const std::set<std::string>& known) {
  std::string dashed = flag;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  dashed = ascii_lower(std::move(dashed));
  if (dashed == flag) return {};  // no '_' nor capitals: a plain typo, left to did_you_mean
  if (known.count(dashed)) return fmt::format("shardcheck's options are written with '-': {}", dashed);
  std::string bare = dashed;
  for (std::string_view prefix : {"--fsdp-", "--parallelism-config-"})
    if (bare.starts_with(prefix)) bare = "--" + bare.substr(prefix.size());
  if (auto it = accelerate_names().find(bare); it != accelerate_names().end()) bare = it->second;
  if (known.count(bare)) return fmt::format("that is accelerate launch's option; shardcheck calls it {}", bare);
  return {};
}

}  // namespace

std::optional<std::string> unknown_command(std::string_view word, const std::vector<std::string>& commands) {
  if (word.empty() || std::find(commands.begin(), commands.end(), word) != commands.end()) return std::nullopt;
  std::string list;
  for (const auto& c : commands) list += (list.empty() ? "" : ", ") + c;
  const std::string guess = did_you_mean(word, commands);
  return fmt::format("shardcheck: unknown command '{}'{} (commands: {}; shardcheck --help describes them)", word,
                     guess.empty() ? "" : fmt::format("; did you mean '{}'?", guess), list);
}

std::optional<std::string> unknown_flag(const CLI::App& app, const CLI::App& sub, int argc, char** argv, int first) {
  std::set<std::string> known = long_flags(sub);
  known.merge(long_flags(app));
  known.insert("--version");
  for (int i = first; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    if (!arg.starts_with("--") || arg.size() == 2) continue;
    const std::string flag(arg.substr(0, arg.find('=')));
    if (known.count(flag)) continue;
    const std::string command = sub.get_name().empty() ? "shardcheck" : "shardcheck " + sub.get_name();
    if (const std::string hint = from_accelerate_spelling(flag, known); !hint.empty())
      return fmt::format("{}: unknown option '{}': {}", command, flag, hint);
    const std::string guess = did_you_mean(flag, {known.begin(), known.end()});
    return fmt::format("{}: unknown option '{}'{} ({} --help lists the options)", command, flag,
                       guess.empty() ? "" : fmt::format("; did you mean '{}'?", guess), command);
  }
  return std::nullopt;
}

}  // namespace shardcheck::cli
