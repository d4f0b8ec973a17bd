// Tests for the YAML fast path (src/load/plain_yaml.cpp): whenever it accepts a text, its events must
// be exactly yaml-cpp's, marks included; it must accept the shapes our rules files and ordinary
// accelerate configs have; and it must refuse what it does not read exactly.

#include <doctest/doctest.h>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "load/plain_yaml.hpp"
#include "yaml_event_log.hpp"
#include "test_files.hpp"

namespace fs = std::filesystem;
using shardcheck::detail::plain_yaml_events;
using shardcheck::test::yaml_cpp_events;
using shardcheck::test::YamlEventLog;

namespace {

// The fast path's events, or nullopt when it refused.
std::optional<std::vector<std::string>> plain_events(const std::string& text) {
  YamlEventLog log;
  if (!plain_yaml_events(text, log)) return std::nullopt;
  return log.lines;
}

void check_same_as_yaml_cpp(const std::string& text) {
  INFO("text:\n" << text);
  const auto fast = plain_events(text);
  REQUIRE(fast);
  const auto reference = yaml_cpp_events(text);
  REQUIRE(reference);
  CHECK(*fast == *reference);
}

}  // namespace

TEST_CASE("plain yaml: the events and marks of yaml-cpp for the subset") {
  for (const char* text :
       {"a: 1\nb:\n  c: x # c\n  d:\nseq:\n  - p\n  -  q\n  - k: v\n    k2: v2\nf: [a, \"b\", {x: 1}]\ne:\nz: ~\n",
        "a:",
        "a:\n",
        "a:\n# c\n",
        "b: 1\na:",
        "b: 1\na:   ",
        "b: 1\na: # c",
        "b:\n  c:\n",
        "s:\n  - a\n  -\n",
        "a:\n  - \n  -\nb: 1",
        "a:   v w   # c\nb: \"q\"  # x\n",
        "\"k\": v\n'k2': w",
        "",
        "# only\n",
        "\n\n  \n",
        "x: [ ]\ny: {}\n",
        "k: [a, [b, c], {d: e, f: [g]}]\n",
        "- a\n- - b\n  - c\n",
        "a:\n    b: 1\n    c: 2\nd: 3",
        "k: x\n\n\n",
        "k: a#b\n",
        "k:  \"a#b\" \n",
        "- k: v\n  j:\n- z\n",
        "a: -1\nb: -x\nd: x:y\ne: a,b]\n",
        "# §§ non-ASCII in a comment\na: 1  # ü\n",
        "~: null\nNULL: Null\n",
        "key   : v\n",
        "k: [~, null, 'null']\n",
        "top:\n  mid:\n    - {value: X, since: 1.5.0}\n    - Y\n  end: 3\n",
        "distributed_type: 'NO'\nmixed_precision: no\nfsdp_config:\n  fsdp_min_num_params: 1e8\n",
        "a: [1,\n 2]\n",
        "a: N?x\n",
        " -\n ",
        "a:\n  b:\n ",
        "- \n  # c",
        "a:\n  - x\n  -\n  ",
        "a:\n  - x\n  -\n   ",
        "k:\n  v: [a, # c\n     b,\n\n     {c: d,\n      e: f}]\n  w: 'x\\y'\n"}) {
    check_same_as_yaml_cpp(text);
  }
}

TEST_CASE("plain yaml: refuses what it does not read exactly") {
  for (const char* text : {"a: &x 1\nb: *x\n",
                           "a: !!str 1\n",
                           "a: |\n  text\n",
                           "a: >-\n  text\n",
                           "k: v\n  more\n",
                           "q: 'it''s'\n",
                           "q: \"a\\nb\"\n",
                           "a:\n- x\n",
                           "---\na: 1\n",
                           "a: 1\n...\n",
                           "%YAML 1.2\n---\na: 1\n",
                           "a:\tb\n",
                           "a: 1\r\nb: 2\r\n",
                           "a: ü\n",
                           "? a\n: b\n",
                           "a: [1,\n2]\n",
                           "a: [1, ]\n",
                           "a\n",
                           "[a, b]\n",
                           "k: \"x\": y\n",
                           "a: b: c\n",
                           "a:\n  b\n",
                           "a: {b}\n",
                           "a: [b: c]\n",
                           "a: @x\n",
                           "a: `x`\n",
                           "a: x\x04y\n",
                           "a: x\x7fy\n",
                           "- [N?]   ",
                           "a: 1\n b: 2\n"}) {
    INFO("text:\n" << std::string(text));
    CHECK_FALSE(plain_events(text));
  }
}

TEST_CASE("plain yaml: reads the rules files and the fixtures' configs as yaml-cpp does") {
  std::vector<fs::path> files;
  for (const char* dir : {"/rules/accelerate", "/rules/models", "/fixtures/configs"})
    for (const auto& e : fs::directory_iterator(std::string(SHARDCHECK_SOURCE_DIR) + dir))
      if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::size_t accepted = 0;
  for (const fs::path& f : files) {
    const std::string text = shardcheck::test::read_file(f);
    INFO(f.string());
    if (const auto fast = plain_events(text)) {
      ++accepted;
      const auto reference = yaml_cpp_events(text);
      REQUIRE(reference);
      CHECK(*fast == *reference);
    }
  }
  // The schema, which every lint reads, must take the fast path; so must every registry file, one of
  // which every inspect and plan reads (yaml-cpp took ~1 ms of DeepSeek-V3's load for its anchors
  // and a folded scalar): write the plain form there.
  CHECK(
      plain_events(shardcheck::test::read_file(std::string(SHARDCHECK_SOURCE_DIR) + "/rules/accelerate/schema.yaml")));
  for (const auto& e : fs::directory_iterator(std::string(SHARDCHECK_SOURCE_DIR) + "/rules/models"))
    if (e.path().extension() == ".yaml") {
      INFO(e.path().string());
      CHECK(plain_events(shardcheck::test::read_file(e.path())));
    }
  CHECK(accepted * 10 >= files.size() * 8);
  MESSAGE(accepted << " of " << files.size() << " YAML files read by the fast path");
}
