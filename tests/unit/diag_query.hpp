#pragma once
// Queries over a DiagnosticSink that the loader tests share.

#include <algorithm>
#include <string>
#include <string_view>

#include "shardcheck/diagnostics.hpp"

namespace shardcheck::test {

inline std::size_t count_code(const DiagnosticSink& sink, std::string_view code) {
  return static_cast<std::size_t>(
      std::count_if(sink.items().begin(), sink.items().end(), [&](const Diagnostic& d) { return d.code == code; }));
}

inline const Diagnostic* first_code(const DiagnosticSink& sink, std::string_view code) {
  for (const auto& d : sink.items())
    if (d.code == code) return &d;
  return nullptr;
}

// "CODE: message" per line, for readable failure output.
inline std::string dump(const DiagnosticSink& sink) {
  std::string s;
  for (const auto& d : sink.items()) s += d.code + ": " + d.message + "\n";
  return s;
}

}  // namespace shardcheck::test
