// libFuzzer harness for the YAML fast path (src/load/plain_yaml.cpp), differential against yaml-cpp,
// which every YAML reader here falls back to.
//
// Whenever the fast path accepts a text, yaml-cpp must read it without error and deliver the same
// events: kinds, marks (offset, line, column), tags, styles, values, in the same order. Beyond that,
// no crash, no hang, no read out of bounds (ASan/UBSan). Seeds: rules/ and the fixtures' configs.

#include <cstddef>
#include <cstdint>
#include <string>

#include "load/plain_yaml.hpp"
#include "yaml_event_log.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  shardcheck::test::YamlEventLog fast;
  if (!shardcheck::detail::plain_yaml_events(text, fast)) return 0;
  const auto reference = shardcheck::test::yaml_cpp_events(text);
  if (!reference || *reference != fast.lines) __builtin_trap();
  return 0;
}
