// The registry against real transformers: every fixtures/hf-records/<name>.json is what transformers
// 5.12.1 built on the meta device for a config (scripts/hf_record.py; transformers' own defaults for
// every registry model_type, the real Hub configs of fixtures/corpus-configs, the tiny oracle
// models). shardcheck builds each config-only and must give the same head class, the same modules
// holding parameters with their classes in registration order, the same parameters with their
// shapes in named_parameters() order, the same tied aliases and the same _no_split_modules.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "shardcheck/load_tree.hpp"
#include "test_files.hpp"

using namespace shardcheck;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct RecordTree {
  std::optional<ModuleTree> tree;
  std::string errors;
};

RecordTree build_config_only(const json& config, const std::string& transformers, const fs::path& dir) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << config.dump();
  ResolveOptions options;
  options.transformers = *Version::parse(transformers.substr(0, transformers.find('+')));  // the recorder's
  // from_config builds a quantised config's model unquantised, as from_pretrained's dequantize does.
  options.dequantize = config.contains("quantization_config");
  DiagnosticSink sink;
  RecordTree b;
  b.tree = load_module_tree(dir.string(), true, SHARDCHECK_SOURCE_DIR "/rules", options, sink).tree;
  for (const auto& d : sink.items())
    if (d.severity == Severity::error) b.errors += "[" + d.code + "] " + d.message + "\n";
  return b;
}

// The model types conforming at two configs or more when this was last raised (rules/models, issue #39).
constexpr int kConformingTypes = 185;

std::string join_path(const std::string& module, const std::string& name) {
  return module.empty() ? name : module + "." + name;
}

}  // namespace

TEST_CASE("hf records: config-only trees equal what transformers 5.12.1 builds") {
  const fs::path records = fs::path(SHARDCHECK_FIXTURES_DIR) / "hf-records";
  const fs::path work = fs::temp_directory_path() / "shardcheck-hf-records";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(records))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  int compared = 0;
  // The distinct configs each model_type was compared at: the record's own type and the types of its
  // sub-configs (a composite's vision tower and text model are built and compared with it).
  std::map<std::string, std::set<std::string>> configs_of;
  for (const auto& file : files) {
    const json rec = test::read_json(file);
    const std::string name = rec.at("name").get<std::string>();
    CAPTURE(name);
    const json& cfg = rec.at("config");
    configs_of[cfg.value("model_type", "")].insert(cfg.dump());
    for (const auto& [key, sub] : cfg.items())
      if (sub.is_object() && sub.contains("model_type") && sub.at("model_type").is_string())
        configs_of[sub.at("model_type").get<std::string>()].insert(sub.dump());
    const RecordTree b =
        build_config_only(rec.at("config"), rec.at("versions").at("transformers").get<std::string>(), work / name);
    REQUIRE_MESSAGE(b.tree.has_value(), "no tree:\n" << b.errors);
    const ModuleTree& t = *b.tree;
    ++compared;
    CHECK(t.architecture == rec.at("class").get<std::string>());
    CHECK_MESSAGE(b.errors.empty(), b.errors);

    // Parameters in named_parameters() order: pre-order over modules, registration order within a
    // module, a tied alias not listed again.
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> ours, theirs;
    std::set<std::string> param_modules;
    for (const auto& m : t.modules)
      for (const auto& p : m.params)
        if (!p.buffer && p.tied_to.empty()) {
          ours.emplace_back(join_path(m.path, p.name), p.shape);
          param_modules.insert(m.path);
        }
    for (const auto& p : rec.at("params"))
      theirs.emplace_back(p[0].get<std::string>(), p[1].get<std::vector<std::int64_t>>());
    CHECK(ours.size() == theirs.size());
    for (std::size_t i = 0; i < std::min(ours.size(), theirs.size()); ++i) {
      CAPTURE(i);
      CHECK(ours[i].first == theirs[i].first);
      CHECK(ours[i].second == theirs[i].second);
      if (ours[i] != theirs[i]) break;  // one difference says where; the rest would repeat it
    }

    // The classes of the modules that hold parameters (what FSDP policies and wrapping see).
    std::map<std::string, std::string> their_class;
    for (const auto& m : rec.at("modules")) their_class[m[0].get<std::string>()] = m[1].get<std::string>();
    for (const auto& m : t.modules) {
      if (!param_modules.count(m.path)) continue;
      CAPTURE(m.path);
      REQUIRE_MESSAGE(their_class.count(m.path), "module not built by transformers");
      CHECK(m.cls == their_class.at(m.path));
    }

    std::vector<std::string> nsm = t.no_split_modules;
    std::sort(nsm.begin(), nsm.end());
    nsm.erase(std::unique(nsm.begin(), nsm.end()), nsm.end());
    CHECK(nsm == rec.at("no_split_modules").get<std::vector<std::string>>());

    std::set<std::pair<std::string, std::string>> our_tied, their_tied;
    for (const auto& tw : t.tied) our_tied.emplace(tw.alias, tw.target);
    for (const auto& p : rec.at("tied")) their_tied.emplace(p[0].get<std::string>(), p[1].get<std::string>());
    CHECK(our_tied == their_tied);
  }
  fs::remove_all(work);
  MESSAGE("compared " << compared << " transformers records");
  CHECK(compared >= 50);

  // Every registry model type is compared at two configs or more (its transformers default and a
  // varied or published one), and the registry does not shrink: a type dropped or left without its
  // second record fails here.
  int types = 0;
  for (const auto& e : fs::directory_iterator(fs::path(SHARDCHECK_SOURCE_DIR) / "rules" / "models")) {
    const std::string stem = e.path().stem().string();
    if (e.path().extension() != ".yaml" || stem.starts_with("_")) continue;
    CAPTURE(stem);
    CHECK(configs_of[stem].size() >= 2);
    types += configs_of[stem].size() >= 2;
  }
  MESSAGE(types << " model types conform at two configs or more");
  CHECK(types >= kConformingTypes);
}
