// The JSON writer's string escapes: every output contract (inspect, plan, lint's JSON and SARIF)
// goes through them, with names that come from files shardcheck did not write.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "report/json_writer.hpp"

using shardcheck::JsonWriter;

namespace {
std::string written(std::string_view s) {
  std::string out;
  JsonWriter(out).value(s);
  return out;
}
}  // namespace

TEST_CASE("json writer: escapes exactly what RFC 8259 requires in a string") {
  CHECK(written("model.layers.0.mlp.weight") == "\"model.layers.0.mlp.weight\"");
  CHECK(written("") == "\"\"");
  CHECK(written("a\"b") == "\"a\\\"b\"");
  CHECK(written("a\\b") == "\"a\\\\b\"");
  CHECK(written("\n\r\t") == "\"\\n\\r\\t\"");
  CHECK(written(std::string_view("x\0y", 3)) == "\"x\\u0000y\"");
  CHECK(written("\x01\x1f") == "\"\\u0001\\u001f\"");
  CHECK(written("\x7f") == "\"\x7f\"");                // DEL needs no escape
  CHECK(written("caf\xc3\xa9") == "\"caf\xc3\xa9\"");  // UTF-8 passes through
  CHECK(written("\"") == "\"\\\"\"");                  // an escape at either end of a run
  CHECK(written("ab\n") == "\"ab\\n\"");
}

TEST_CASE("json writer: a JSON reader gets every byte back") {
  std::string all;
  for (int c = 1; c < 0x80; ++c) all += static_cast<char>(c);
  all = "lead " + all + " tail";
  std::string out;
  JsonWriter(out).begin_object().key(all).value(all).end_object();
  const auto parsed = nlohmann::json::parse(out);
  REQUIRE(parsed.contains(all));
  CHECK(parsed[all].get<std::string>() == all);
}
