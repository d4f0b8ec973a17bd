// --module-tree files (shardcheck/module_tree_file.hpp, docs/module-tree.md): the dumps of real
// transformers 5.12.1 models (fixtures/module-trees/, scripts/oracle/dump_module_trees.py) plan as the
// registry path plans the same config; the seed's string _no_split_modules gets accelerate 1.14.0's
// own error (fixtures/module-trees/string-no-split-accelerate.json, the real run's record); a broken
// file gets one finding with its position and exit code.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <vector>

#include "oracle_case.hpp"
#include "shardcheck/module_tree_file.hpp"
#include "shardcheck/preflight.hpp"
#include "test_files.hpp"

using namespace shardcheck;
using namespace shardcheck::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace module_tree_file_test {

const fs::path kTrees = fs::path(SHARDCHECK_FIXTURES_DIR) / "module-trees";

PreflightRequest request(int fsdp_version) {
  PreflightRequest req;
  req.rules_dir = SHARDCHECK_SOURCE_DIR "/rules";
  req.versions.torch = Setting<Version>{Version{2, 14, 1}, "test"};
  req.versions.transformers = Setting<Version>{Version{5, 12, 1}, "test"};
  req.versions.accelerate = Setting<Version>{Version{1, 14, 0}, "test"};
  req.overrides = [fsdp_version](FsdpSettings& s) {
    s.fsdp_version = {fsdp_version, "test"};
    s.world_size = {3, "test"};
  };
  return req;
}

// What a plan says about each unit and each rank, as one comparable text per unit.
std::vector<std::string> plan_facts(const PreflightResult& r) {
  std::vector<std::string> out;
  if (!r.plan) return out;
  for (const ShardUnit& u : r.plan->units) {
    std::string params;
    for (std::size_t i = 0; i < u.params.size(); ++i) params += fmt::format("{}={} ", u.params[i], u.param_numels[i]);
    out.push_back(fmt::format("{} [{}] numel {} padded {} shard {} dtype {} grad {} | {}", u.path, u.cls, u.numel,
                              u.padded_numel, u.shard_numel, static_cast<int>(u.dtype), u.requires_grad, params));
  }
  for (const RankMemory& m : r.memory.ranks)
    out.push_back(fmt::format("rank {}: params {} grads {} optimizer {} transient {}", m.rank, m.params, m.grads,
                              m.optimizer, m.transient));
  return out;
}

// The error findings, each as its code and its message up to the first class name accelerate may
// pick from a set (which one depends on the process's string hashing: both name one of the same).
std::string errors(const PreflightResult& r) {
  std::string s;
  for (const auto& d : r.sink.items())
    if (d.severity == Severity::error) s += d.code + ": " + d.message.substr(0, d.message.find(" class ")) + "\n";
  return s;
}

TEST_CASE("module tree: every registry fixture's dump plans as the registry path plans its config") {
  int compared = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(SHARDCHECK_FIXTURES_DIR) / "models")) {
    const fs::path dump = kTrees / (entry.path().filename().string() + ".json");
    // toyformer: transformers has no such model. deepseek_v3: an FP8 checkpoint, which from_pretrained
    // quantizes (its config.json's quantization_config) and from_config, which `dump` builds with, does
    // not; the dump is of the unquantized model.
    if (!fs::exists(dump) || entry.path().filename() == "deepseek_v3") continue;
    for (int version : {1, 2}) {
      CAPTURE(dump.filename().string());
      CAPTURE(version);
      PreflightRequest registry = request(version);
      registry.model = entry.path().string();
      PreflightRequest dumped = request(version);
      dumped.module_tree = dumped.model = dump.string();
      const PreflightResult a = run_preflight(registry);
      const PreflightResult b = run_preflight(dumped);
      CHECK(errors(b) == errors(a));
      REQUIRE(a.plan.has_value());
      REQUIRE(b.plan.has_value());
      CHECK(plan_facts(b) == plan_facts(a));
      ++compared;
    }
  }
  CHECK(compared == 2 * 16);
}

// Architectures the registry lacks (scripts/oracle/outside_oracle.py): each dumped, and prepared for
// real by torch 2.14.1 FSDP1/FSDP2 through accelerate 1.14.0 (fixtures/oracle2/module-trees/); planned
// from the dump alone, every unit, group, shard and rank's memory must be torch's, and every error
// torch raised must be ours.
TEST_CASE("module tree: models outside the registry plan from their dumps as real FSDP wraps them") {
  int compared = 0, errors = 0, with_memory = 0;
  for (const auto& file : json_files(fs::path(SHARDCHECK_FIXTURES_DIR) / "oracle2" / "module-trees")) {
    const json c = read_json(file);
    CAPTURE(c.at("case").get<std::string>());
    PreflightRequest req;
    req.rules_dir = SHARDCHECK_SOURCE_DIR "/rules";
    req.module_tree = req.model = (kTrees / ("outside-" + c.at("model").get<std::string>() + ".json")).string();
    req.defaults = settings_for(c);
    const json& v = c.at("versions");
    req.versions.torch = Setting<Version>{parse_version(v.at("torch").get<std::string>()), "oracle"};
    req.versions.transformers = Setting<Version>{parse_version(v.at("transformers").get<std::string>()), "oracle"};
    req.versions.accelerate = Setting<Version>{parse_version(v.at("accelerate").get<std::string>()), "oracle"};
    const PreflightResult r = run_preflight(req);
    ++compared;
    compare_case(c, r, errors, with_memory);
  }
  MESSAGE("compared " << compared << " cases outside the registry (" << errors << " errors, " << with_memory
                      << " with memory)");
  CHECK(compared >= 3);
}

// The record scripts/oracle/no_split_string_probe.py wrote in the chroot (accelerate 1.14.0,
// transformers 5.12.1, PYTHONHASHSEED=0): each way's exception, FSDP1 and FSDP2.
std::string accelerate_error(const char* way, const char* fsdp) {
  const auto record = read_json(kTrees / "string-no-split-accelerate.json");
  return record.at(way).at(fsdp).get<std::string>();
}

TEST_CASE("module tree: a string _no_split_modules fails as accelerate fails, with the hint to make it a list") {
  for (const char* way : {"attribute", "class"})
    for (int version : {1, 2}) {
      CAPTURE(way);
      CAPTURE(version);
      PreflightRequest req = request(version);
      req.module_tree = req.model = (kTrees / fmt::format("string-no-split-{}.json", way)).string();
      const PreflightResult r = run_preflight(req);
      const std::string truth = accelerate_error(way, version == 1 ? "fsdp1" : "fsdp2");
      const Diagnostic* wrap = nullptr;
      for (const auto& d : r.sink.items())
        if (d.code == "PLAN012") wrap = &d;
      REQUIRE(wrap != nullptr);
      CHECK(wrap->severity == Severity::error);
      CHECK(wrap->message.starts_with(truth));
      CHECK(wrap->help.find("Make it a list: _no_split_modules = [\"LlamaDecoderLayer\"]") != std::string::npos);
      CHECK(r.sink.first_error_exit_code() == ExitCode::findings);
    }
}

TEST_CASE("module tree: the string's characters in order; the set made of them in the dumping process's order") {
  DiagnosticSink sink;
  const auto attribute = load_module_tree_file((kTrees / "string-no-split-attribute.json").string(), {}, sink);
  REQUIRE(attribute.has_value());
  REQUIRE(attribute->held_no_split.has_value());
  CHECK(attribute->held_no_split->type == "str");
  CHECK(attribute->no_split_modules.size() == std::string("LlamaDecoderLayer").size());
  CHECK(attribute->no_split_modules.front() == "L");
  const auto by_class = load_module_tree_file((kTrees / "string-no-split-class.json").string(), {}, sink);
  REQUIRE(by_class.has_value());
  CHECK(by_class->held_no_split->type == "set");
  CHECK(by_class->held_no_split->declared_by == "StringNoSplitLlama");
  CHECK(by_class->held_no_split->declared_text == "LlamaDecoderLayer");
  CHECK(sink.items().empty());
}

struct Broken {
  std::string text;
  const char* code;
  int line, column;     // of the offending value, counted by hand in the text
  const char* message;  // a part of it
};

TEST_CASE("module tree: a broken file gets one finding with its line, column, expected and found") {
  const std::string head = R"({"format": "shardcheck-module-tree", "format_version": 1,)"
                           "\n";
  const std::string root = R"("modules": [{"path": "", "class": "M"}])";
  const std::string none = R"("model": {"class": "M", "no_split_modules": {"type": "none", "value": null}}, )";
  const std::vector<Broken> cases = {
      {"", "TREE002", 1, 1, "expected a value, found the end of the file"},
      {R"({"a": 1,})", "TREE002", 1, 9, "expected a member name in double quotes, found '}'"},
      {R"({"a": 1, "a": 2})", "TREE002", 1, 10, "\"a\" is repeated"},
      {R"({"a": "\ud800"})", "TREE002", 1, 14, "expected a \\u low surrogate"},
      {"[1]", "TREE003", 1, 1, "the file: expected an object (docs/module-tree.md), found an array"},
      {R"({"format": "x"})", "TREE003", 1, 12, "format: expected \"shardcheck-module-tree\", found the string \"x\""},
      {R"({"format": "shardcheck-module-tree", "format_version": 2})", "TREE004", 1, 56,
       "format_version: expected 1 (the version this shardcheck reads"},
      {head + none +
           R"("modules": [{"path": "", "class": "M", "parameters": [{"name": "w", "shape": [2, "3"], "dtype": "float32", "requires_grad": true}]}]})",
       "TREE003", 2, 160,
       "modules[0].parameters[0].shape: expected an array of non-negative integers, found the string \"3\""},
      {head + none + R"("modules": [{"path": "", "class": "M"}, {"path": "a.b", "class": "L"}]})", "TREE005", 2, 128,
       "modules[1].path: expected a module whose parent is listed before it"},
      {head + R"("model": {"class": "M", "no_split_modules": {"type": "dict", "value": {}}}, )" + root + "}", "TREE003",
       2, 54,
       "model.no_split_modules.type: expected one of list, tuple, set, frozenset, str, none, found the string "
       "\"dict\""},
      {head + R"("model": {"class": "N", "no_split_modules": {"type": "none", "value": null}}, )" + root + "}",
       "TREE005", 2, 20, "model.class: expected the root module's class \"M\""},
      {head + none +
           R"("modules": [{"path": "", "class": "M", "parameters": [{"name": "w", "shape": [2], "dtype": "float32", "requires_grad": true, "tied_to": "v"}]}]})",
       "TREE005", 2, 215, "modules[0].parameters[0].tied_to: expected the full name of an earlier parameter"},
      {head + none +
           R"("modules": [{"path": "", "class": "M", "parameters": [{"name": "w", "shape": [4194304, 4194304, 4194304], "dtype": "float32", "requires_grad": true}]}]})",
       "TREE003", 2, 175, "a tensor of at most 2^50 elements"},
  };
  for (const Broken& c : cases) {
    CAPTURE(c.text);
    DiagnosticSink sink;
    CHECK_FALSE(parse_module_tree_file(c.text, "t.json", {}, sink).has_value());
    REQUIRE(sink.items().size() == 1);
    const Diagnostic& d = sink.items().front();
    CHECK(d.code == c.code);
    CHECK(d.location.file == "t.json");
    CHECK(d.location.line == c.line);
    CHECK(d.location.column == c.column);
    CHECK(d.message.find(c.message) != std::string::npos);
    CHECK(d.exit_code == ExitCode::bad_module_tree);
  }
}

TEST_CASE("module tree: a missing file is an I/O error") {
  DiagnosticSink sink;
  CHECK_FALSE(load_module_tree_file((kTrees / "no-such.json").string(), {}, sink).has_value());
  REQUIRE(sink.items().size() == 1);
  CHECK(sink.items().front().code == "TREE001");
  CHECK(sink.items().front().exit_code == ExitCode::io);
  DiagnosticSink dir_sink;
  CHECK_FALSE(load_module_tree_file(kTrees.string(), {}, dir_sink).has_value());
  CHECK(dir_sink.items().front().message == "expected a module-tree file, found a directory");
}

}  // namespace module_tree_file_test
