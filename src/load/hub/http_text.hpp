#pragma once
// Pure parsers for the few pieces of HTTP text the Hub client reads (response header lines,
// Content-Range, Retry-After) and URL quoting. They take untrusted bytes from the network, so they
// are separate from the transfer code and fuzzed (fuzz/fuzz_hub_text.cpp).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace shardcheck::hub {

// A decimal number that fits 64 bits; no sign, no spaces, at most 20 digits.
std::optional<std::uint64_t> parse_decimal_u64(std::string_view s);

// "Name: value\r\n" -> {"Name", "value"} with optional whitespace trimmed (RFC 9110 §5.5);
// nullopt for a status line, a blank line or a line without ':'.
std::optional<std::pair<std::string_view, std::string_view>> split_header_line(std::string_view line);

// ASCII case-insensitive equality, for header names.
bool header_name_is(std::string_view name, std::string_view expected);

// Content-Range of a 206 reply (RFC 9110 §14.4): "bytes FIRST-LAST/COMPLETE" with
// FIRST <= LAST; COMPLETE may be "*" (unknown) but otherwise must exceed LAST.
struct ContentRange {
  std::uint64_t first = 0, last = 0;
  std::optional<std::uint64_t> complete;
};
std::optional<ContentRange> parse_content_range(std::string_view value);

// Retry-After as delta-seconds (RFC 9110 §10.2.3); an HTTP-date is not used by the Hub and
// gives nullopt, as does anything else.
std::optional<std::uint64_t> parse_retry_after_seconds(std::string_view value);

// Percent-encodes everything but RFC 3986 unreserved characters (and '/' when keep_slash):
// huggingface_hub quotes the revision with safe="" and file names with '/' kept
// (file_download.py hf_hub_url).
std::string url_quote(std::string_view s, bool keep_slash);

}  // namespace shardcheck::hub
