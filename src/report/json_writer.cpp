#include "report/json_writer.hpp"

#include <fmt/format.h>

#include <cmath>

namespace shardcheck {

JsonWriter& JsonWriter::value(double v) {
  value_prefix();
  if (!std::isfinite(v))
    out_ += "null";  // JSON has no NaN/Inf
  else
    out_ += fmt::format("{}", v);
  return *this;
}

void JsonWriter::string_literal(std::string_view s) {
  out_ += '"';
  // Runs of bytes that need no escape are appended whole (names and paths nearly always are one
  // run); a byte at a time, appending was most of rendering a large tree.
  std::size_t run = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out_.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out_ += "\\\"";
        break;
      case '\\':
        out_ += "\\\\";
        break;
      case '\n':
        out_ += "\\n";
        break;
      case '\r':
        out_ += "\\r";
        break;
      case '\t':
        out_ += "\\t";
        break;
      default:
        out_ += fmt::format("\\u{:04x}", c);
    }
  }
  out_.append(s.data() + run, s.size() - run);
  out_ += '"';
}

}  // namespace shardcheck
