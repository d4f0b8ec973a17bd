#pragma once
// Where shardcheck's rule data (rules/: models/, accelerate/, peft.yaml, ...) is found when no
// --rules flag names it. One answer for the CLI, the smoke runner and code that embeds the library.
#include <string>

namespace shardcheck {

// In order: the SHARDCHECK_RULES environment variable; <prefix>/share/shardcheck/rules when the
// running program is <prefix>/bin/<program> from `cmake --install`, a Debian package or the Python
// wheel (so an installed copy never reads a source tree that may have moved or changed); else the
// rules/ directory of the source tree this library was built from.
std::string default_rules_dir();

}  // namespace shardcheck
