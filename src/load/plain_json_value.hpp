#pragma once
// nlohmann::ordered_json built straight from plain JSON text (load/plain_json.hpp's subset, plus
// numbers of every JSON form, literals, arrays and objects), without nlohmann's lexer.
//
// Why: adapter_config.json of an all-linear adapter lists every targeted module by its full name
// (peft 0.20 tuners/tuners_utils.py _maybe_include_all_linear_layers keeps full names): ~900 strings,
// 34 KB for Llama-3.1-405B. nlohmann's lexer reads it a byte at a time through its input adapter,
// ~0.4 ms; this scan ~0.1 ms.
//
// The result must be exactly what ordered_json::parse gives for the same text, or nullopt: the
// caller then hands the text to ordered_json::parse, which accepts or rejects it and says where.
// So anything outside the plain subset is "no": a string with an escape or a control character,
// invalid UTF-8 anywhere, a number that does not convert exactly (an integer beyond 64 bits, a float
// beyond double's range), a byte-order mark, nesting deeper than kMaxPlainDepth. fuzz/fuzz_adapter.cpp
// compares the two readers on every input.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace shardcheck::detail {

inline constexpr std::size_t kMaxPlainDepth = 64;

// A member of the top-level object: its key and the offset of the key's opening quote in the text.
using TopLevelKey = std::pair<std::string_view, std::size_t>;

// Reads `text`, which must be followed by kJsonPadding readable bytes (load/padded_file.hpp). When
// `keys` is given and the text is an object, it receives the top-level members' keys in the text's
// order, repeats included.
std::optional<nlohmann::ordered_json> read_plain_json_value(std::string_view text,
                                                            std::vector<TopLevelKey>* keys = nullptr);

}  // namespace shardcheck::detail
