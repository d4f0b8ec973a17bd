#pragma once
// The fast path of every YAML reader here (accelerate configs, rules/accelerate/schema.yaml, the
// architecture registry): the events yaml-cpp's parser would deliver, for text in the plain shape
// these files nearly always have, without yaml-cpp's scanner.
//
// Why: yaml-cpp scans at ~10 MB/s and allocates per token; reading the 14 KB schema took 1.3 ms warm
// and 2.8 ms in a fresh `shardcheck lint` process (its code and heap faulted in), more than half of
// the whole run. This reads the same text in ~0.05 ms.
//
// The subset: one document of block mappings and sequences indented with spaces; keys that are plain
// or quoted scalars on one line; values that are plain scalars on one line, quoted scalars without
// escapes ('' or \) on one line, or flow collections ([..], {k: v}) on one line; comments. Anything
// else (anchors, aliases, tags, block scalars | >, multi-line scalars, indentless sequences,
// documents markers, tabs, CR, non-ASCII outside comments, ...) is "no", and the caller hands the
// text to yaml-cpp, which reads or rejects it as before. So the fast path may only ever accept text
// whose events it gives exactly as yaml-cpp 0.7 does, marks included: fuzz/fuzz_plain_yaml.cpp and
// tests/unit/test_plain_yaml.cpp compare the two.

#include <string_view>

#include <yaml-cpp/eventhandler.h>

namespace shardcheck::detail {

// Delivers to `handler` the events of yaml-cpp's YAML::Parser::HandleNextDocument on `text` (with the
// same marks, tags "?" for plain and "!" for quoted scalars, and styles), when `text` is in the
// subset above; false when it is not, and then no event has been delivered.
bool plain_yaml_events(std::string_view text, YAML::EventHandler& handler);

}  // namespace shardcheck::detail
