#pragma once
// A small streaming JSON writer: large outputs (a DeepSeek-V3 tree has ~100k modules) are written
// straight to a string buffer instead of being built as a DOM first.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shardcheck/diagnostics.hpp"

namespace shardcheck {

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  JsonWriter& begin_object() {
    value_prefix();
    out_ += '{';
    stack_.push_back(true);
    return *this;
  }
  JsonWriter& end_object() {
    out_ += '}';
    stack_.pop_back();
    return *this;
  }
  JsonWriter& begin_array() {
    value_prefix();
    out_ += '[';
    stack_.push_back(true);
    return *this;
  }
  JsonWriter& end_array() {
    out_ += ']';
    stack_.pop_back();
    return *this;
  }
  JsonWriter& key(std::string_view k) {
    comma();
    string_literal(k);
    out_ += ':';
    after_key_ = true;
    return *this;
  }
  JsonWriter& value(std::string_view s) {
    value_prefix();
    string_literal(s);
    return *this;
  }
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(std::int64_t v) {
    value_prefix();
    out_ += std::to_string(v);
    return *this;
  }
  JsonWriter& value(std::uint64_t v) {
    value_prefix();
    out_ += std::to_string(v);
    return *this;
  }
  JsonWriter& value(int v) { return value(static_cast<std::int64_t>(v)); }
  JsonWriter& value(double v);
  JsonWriter& value(bool v) {
    value_prefix();
    out_ += v ? "true" : "false";
    return *this;
  }
  JsonWriter& null() {
    value_prefix();
    out_ += "null";
    return *this;
  }
  // A list of plain values (numbers, strings, bools) as one JSON array.
  template <class T>
  JsonWriter& array(const std::vector<T>& items) {
    begin_array();
    for (const auto& x : items) value(x);
    return end_array();
  }
  // Splices already-serialised JSON in as one value.
  JsonWriter& raw(std::string_view json) {
    value_prefix();
    out_ += json;
    return *this;
  }

 private:
  void comma() {
    if (stack_.empty()) return;
    if (!stack_.back()) out_ += ',';
    stack_.back() = false;
  }
  void value_prefix() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    comma();
  }
  void string_literal(std::string_view s);

  std::string& out_;
  std::vector<bool> stack_;  // per open container: "no element written yet"
  bool after_key_ = false;
};

// `"diagnostics": [...]` as a member of the object being written (every JSON output has it).
void write_diagnostics(JsonWriter& w, const std::vector<Diagnostic>& diagnostics);

}  // namespace shardcheck
