#include "report/json_writer.hpp"

#include <fmt/format.h>

#include <cmath>

namespace shardcheck {

JsonWriter& JsonWriter::value(double v) {
  value_prefix();
  if (!std::isfinite(v)) out_ += "null";  // JSON has no NaN/Inf
  else out_ += fmt::format("{}", v);
  return *this;
}

void JsonWriter::string_literal(std::string_view s) {
  out_ += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out_ += "\\\""; break;
      case '\\': out_ += "\\\\"; break;
      case '\n': out_ += "\\n"; break;
      case '\r': out_ += "\\r"; break;
      case '\t': out_ += "\\t"; break;
      default:
        if (c < 0x20) out_ += fmt::format("\\u{:04x}", c);
        else out_ += static_cast<char>(c);
    }
  }
  out_ += '"';
}

}  // namespace shardcheck
