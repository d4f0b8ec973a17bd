// The stages of src/ reach only down: a file includes headers of its own stage and of lower ones,
// never of a stage that runs after it. The order, lowest first, as the code has it:
//
//   util, platform   text, diagnostics, versions; the allocator and mapping tricks
//   codes            the finding-code table and finding() (src/codes/)
//   load             files: safetensors, config.json, accelerate YAML, adapters, the Hub
//   rules            lint rules over an accelerate config
//   resolve          the module tree, the effective settings, the PeftModel
//   simulate         shard plans, memory, communication
//   check            plan checks over a finished plan (src/check/)
//   report           text, JSON, SARIF, HTML renderers
//   pipeline         run_preflight: the stages in order
//   smoke            the smoke runner
//   cli              the commands (and the smoke tool's main)
//
// A public header (include/shardcheck/) belongs to the stage that implements it (kPublicHeaders).
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "test_files.hpp"

namespace fs = std::filesystem;

namespace {

const std::map<std::string, int> kStageRank = {
    {"util", 0},     {"platform", 0}, {"codes", 1},  {"load", 2},     {"rules", 3}, {"resolve", 4},
    {"simulate", 5}, {"check", 6},    {"report", 7}, {"pipeline", 8}, {"smoke", 9}, {"cli", 10},
};

const std::map<std::string, std::string> kPublicHeaders = {
    {"accelerate_schema", "load"},
    {"adapter", "load"},
    {"checkpoint", "load"},
    {"config_doc", "load"},
    {"diagnostics", "util"},
    {"dtype", "util"},
    {"effective_settings", "resolve"},
    {"environment", "load"},
    {"exit_codes", "util"},
    {"expr", "resolve"},
    {"file_kind", "load"},
    {"finding_codes", "codes"},
    {"hub", "load"},
    {"lint", "rules"},
    {"load_tree", "pipeline"},
    {"memory", "simulate"},
    {"model_config", "load"},
    {"model_source", "load"},
    {"module_tree", "resolve"},
    {"module_tree_file", "resolve"},
    {"optimizers", "load"},
    {"peft_model", "resolve"},
    {"preflight", "pipeline"},
    {"quantization", "resolve"},
    {"registry", "resolve"},
    {"repeated_blocks", "resolve"},
    {"report", "report"},
    {"rules_dir", "util"},
    {"settings", "resolve"},
    {"shard_plan", "simulate"},
    {"stack_versions", "resolve"},
    {"tensor_parallel", "simulate"},
    {"text", "util"},
    {"training_args", "load"},
    {"trl_model_config", "resolve"},
    {"validate_settings", "resolve"},
    {"version", "util"},
};

// The upward includes that remain, each with what would remove it. Shrinking this list is progress;
// an include not listed fails the test, and so does an entry that no longer occurs.
const std::set<std::pair<std::string, std::string>> kAllowedUpward = {
    // config.json values are the registry expression language's (resolve/expr.cpp): the Value type
    // belongs in load.
    {"include/shardcheck/model_config.hpp", "shardcheck/expr.hpp"},
    // Setting<T> and MixedPrecision are declared with FsdpSettings (resolve): they belong in a header
    // of their own below load.
    {"include/shardcheck/training_args.hpp", "shardcheck/settings.hpp"},
    // The YAML loader raises the lint rules yaml-syntax and yaml-limits (loader_finding, defined with
    // the rule registry in src/rules/).
    {"src/load/config_doc.cpp", "shardcheck/lint.hpp"},
    {"src/load/yaml_events.cpp", "shardcheck/lint.hpp"},
};

// The stage of a file under src/ or include/shardcheck/; "" for one outside the stages.
std::string stage_of_file(const fs::path& relative) {
  const std::string first = relative.begin()->string();
  if (first == "include")
    return kPublicHeaders.count(relative.stem().string()) ? kPublicHeaders.at(relative.stem().string()) : "";
  auto part = std::next(relative.begin());
  if (part == relative.end()) return "";
  const std::string stage = part->string();
  // The smoke tool's main() is a program, as the CLI is.
  if (stage == "smoke" && std::next(part) != relative.end() && std::next(part)->string() == "tool") return "cli";
  return kStageRank.count(stage) ? stage : "";
}

// The stage of an included header: "shardcheck/x.hpp" by kPublicHeaders, "stage/..." by its folder.
std::string stage_of_include(const std::string& include) {
  if (include.starts_with("shardcheck/")) {
    const std::string name = fs::path(include).stem().string();
    return kPublicHeaders.count(name) ? kPublicHeaders.at(name) : "";
  }
  const std::string first = include.substr(0, include.find('/'));
  return include.find('/') != std::string::npos && kStageRank.count(first) ? first : "";
}

struct Include {
  std::string file, header;
  bool operator<(const Include& o) const { return std::pair(file, header) < std::pair(o.file, o.header); }
};

std::set<Include> upward_includes() {
  const fs::path root(SHARDCHECK_SOURCE_DIR);
  const std::regex include_line(R"rx(#include "([^"]+)")rx");
  std::set<Include> found;
  for (const fs::path& dir : {root / "src", root / "include" / "shardcheck"})
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file()) continue;
      const fs::path relative = fs::relative(e.path(), root);
      const std::string stage = stage_of_file(relative);
      if (stage.empty()) continue;
      const std::string text = shardcheck::test::read_file(e.path());
      for (std::sregex_iterator it(text.begin(), text.end(), include_line), end; it != end; ++it) {
        const std::string target = stage_of_include((*it)[1]);
        if (!target.empty() && kStageRank.at(target) > kStageRank.at(stage))
          found.insert({relative.generic_string(), (*it)[1]});
      }
    }
  return found;
}

}  // namespace

TEST_CASE("layers: every public header belongs to a stage") {
  for (const auto& e : fs::directory_iterator(fs::path(SHARDCHECK_SOURCE_DIR) / "include" / "shardcheck"))
    CHECK_MESSAGE(kPublicHeaders.count(e.path().stem().string()) == 1,
                  e.path().filename().string() << " has no stage in test_layers.cpp kPublicHeaders");
}

TEST_CASE("layers: no file includes a header of a later stage") {
  const std::set<Include> upward = upward_includes();
  for (const Include& i : upward)
    CHECK_MESSAGE(kAllowedUpward.count({i.file, i.header}) == 1,
                  i.file << " includes " << i.header << ", a header of a later stage");
  for (const auto& [file, header] : kAllowedUpward)
    CHECK_MESSAGE(upward.count({file, header}) == 1,
                  file << " no longer includes " << header << ": remove it from kAllowedUpward");
}
