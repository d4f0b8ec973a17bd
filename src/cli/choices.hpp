#pragma once
// Enum-valued flags: one validator for every fixed set of choices, so that each wrong value gets the
// same message with the project's one suggestion helper (shardcheck/text.hpp did_you_mean):
// "expected one of a, b or c, found 'x'; did you mean 'b'?".

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "shardcheck/text.hpp"

namespace shardcheck::cli {

// "found 'x'" with a did-you-mean among `choices`, or only the list when nothing is close.
inline std::string choice_error(const std::string& value, const std::vector<std::string>& choices) {
  std::string list;
  for (std::size_t i = 0; i < choices.size(); ++i)
    list += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
  std::string message = fmt::format("expected {}{}, found '{}'", choices.size() > 2 ? "one of " : "", list, value);
  if (const std::string guess = did_you_mean(value, choices); !guess.empty())
    message += fmt::format("; did you mean '{}'?", guess);
  return message;
}

// A CLI11 validator accepting exactly `choices` (any ASCII case when `ignore_case`, the value then
// rewritten to the choice's spelling, as CLI::IsMember with CLI::ignore_case does).
inline CLI::Validator one_of(std::vector<std::string> choices, bool ignore_case = false) {
  std::string description = "{";
  for (std::size_t i = 0; i < choices.size(); ++i) description += (i ? "," : "") + choices[i];
  description += "}";
  return CLI::Validator(
      [choices, ignore_case](std::string& value) -> std::string {
        for (const auto& c : choices) {
          if (c == value || (ignore_case && ascii_lower(c) == ascii_lower(value))) {
            value = c;
            return {};
          }
        }
        return choice_error(value, choices);
      },
      description);
}

}  // namespace shardcheck::cli
