#pragma once
// Small text helpers with one home: ASCII case folding, accelerate's truth strings, human units.

#include <cstdint>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardcheck {

std::string ascii_lower(std::string s);
std::string ascii_upper(std::string s);

// accelerate utils/environment.py `str_to_bool` (on the lower-cased text): y/yes/t/true/on/1 -> true,
// n/no/f/false/off/0 -> false, anything else nullopt (accelerate raises "invalid truth value").
std::optional<bool> accelerate_str_to_bool(std::string_view s);

// Python's str.split(sep): every piece, empty ones included, nothing stripped (accelerate splits
// transformer_cls_names_to_wrap this way, so "A, B" gives " B").
std::vector<std::string> python_split(std::string_view s, char sep);

// Optimal-string-alignment edit distance (a transposition counts 1): spelling suggestions.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The one spelling suggestion of the project (config keys, enum values, environment variables,
// subcommands, flags): the candidate nearest to `word`, ignoring ASCII case, within a distance that
// grows with the word (at most 2, or a quarter of its length) and keeps at least one of its
// characters, as ruff's and clang's "did you mean" do; "" when none is that close. Returned as the
// candidate is spelled.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// 7615616512 -> "7.62B" (powers of 1000, as parameter counts are published)
std::string human_count(std::int64_t n);
// 85899345920 -> "80.00 GiB" (powers of 1024)
std::string human_bytes(std::uint64_t b);

}  // namespace shardcheck
