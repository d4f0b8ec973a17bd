#pragma once
// Small helpers shared by rule files: spelling suggestions, list formatting, line arithmetic.

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcheck/lint.hpp"
#include "shardcheck/text.hpp"

namespace shardcheck::rules {

using shardcheck::did_you_mean;   // shardcheck/text.hpp: the project's one suggestion helper
using shardcheck::edit_distance;  // shardcheck/text.hpp
// "a, b or c" with backticks.
std::string quoted_list(const std::vector<std::string>& items, std::string_view last_sep = "or");
// Python's repr of a sorted list of strings: ['a', 'b'].
std::string python_list(std::vector<std::string> items);

// Byte range of the whole lines [first line of `start`, end of the line holding `end`], newline included.
std::pair<std::size_t, std::size_t> line_span(const ConfigDoc& doc, std::size_t start, std::size_t end);
// Byte offset where line `line` (1-based) starts; text.size() past the end.
std::size_t line_start(const ConfigDoc& doc, int line);
// The offset just past an entry's last character (value end, else key end).
std::size_t entry_end(const YamlEntry& e);
// A YAML-1.1-safe single-quoted rendering of a string.
std::string single_quoted(std::string_view s);

// One parallelism_config size as written (accelerate parallelism_config.py ParallelismConfig): the
// YAML integer and its entry; an absent key is 1 with no entry.
struct ParallelismSize {
  std::int64_t value = 1;
  const YamlEntry* entry = nullptr;
};
struct ParallelismSizes {
  ParallelismSize dp_replicate, dp_shard, tp, cp, sp;
};
// The sizes of the parallelism_config section; nullopt when it is absent or a size is not a plain
// integer (wrong-type reports that).
std::optional<ParallelismSizes> parallelism_sizes(const LintContext& ctx);

// training-args-as-config: the one finding for a Trainer/TRL recipe given as the accelerate config,
// made before any rule runs; nullopt for any other file.
std::optional<Diagnostic> training_args_as_config(const ConfigDoc& doc);

}  // namespace shardcheck::rules

namespace shardcheck::rules {
// Where an environment finding goes: the --env-file line, else the related key, else distributed_type.
SourceLocation env_location(const LintContext& ctx, const EnvVar& var, const YamlEntry* related);
bool env_truthy(const std::string& value);
}  // namespace shardcheck::rules
