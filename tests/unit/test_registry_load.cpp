#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "shardcheck/registry.hpp"

using namespace shardcheck;
namespace fs = std::filesystem;

TEST_CASE("registry load: only the wanted model types and their extends chain are read") {
  DiagnosticSink sink;
  auto part = Registry::load(SHARDCHECK_SOURCE_DIR "/rules", sink, {"gemma3_text"});
  REQUIRE(part);
  CHECK(part->find("gemma3_text"));
  CHECK(part->find("gemma2"));  // parent via extends
  CHECK(part->find("llama"));   // root of the chain
  CHECK_FALSE(part->find("gpt2"));
  auto all = Registry::load(SHARDCHECK_SOURCE_DIR "/rules", sink, {"no_such_type"});
  REQUIRE(all);
  CHECK(all->find("gpt2"));  // an unknown type loads everything (to list what is known)
  CHECK_FALSE(sink.has_errors());
}

TEST_CASE("registry load: a file must be named after its model_type") {
  const fs::path dir = fs::temp_directory_path() / "shardcheck-reg-name-test";
  fs::create_directories(dir / "models");
  std::ofstream(dir / "models" / "foo.yaml") << "model_type: bar\narchitectures: [Bar]\nclasses:\n  Bar: {}\n";
  DiagnosticSink sink;
  CHECK_FALSE(Registry::load(dir, sink));
  REQUIRE(sink.has_errors());
  CHECK(sink.items().front().message.find("expected model_type 'foo'") != std::string::npos);
  CHECK(sink.items().front().location.line == 1);
  fs::remove_all(dir);
}
