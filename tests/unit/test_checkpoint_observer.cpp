// Tensors paired with the tree on the load's reading threads (TreeExpansion::checkpoint_observer,
// FileObserver) must give exactly the tree and diagnostics of pairing them after the load, whichever
// files were seen early: none, some, all, or files of another load that must be ignored.
#include <doctest/doctest.h>

#include "model_fixtures.hpp"
#include "shardcheck/load_tree.hpp"
#include "shardcheck/report.hpp"

using namespace model_fixtures;

namespace {

struct Outcome {
  std::string tree_json;
  std::vector<std::string> diagnostics;
};

Outcome outcome(const std::optional<ModuleTree>& tree, const DiagnosticSink& sink) {
  Outcome o;
  REQUIRE(tree.has_value());
  o.tree_json = render_tree_json(*tree, {});
  for (const Diagnostic& d : sink.items()) o.diagnostics.push_back(d.code + " " + d.message);
  return o;
}

// Which of a checkpoint's files the observer sees before the load ends.
enum class Seen { none, every_other, all, another_load };

Outcome observed(const fs::path& dir, Seen seen) {
  DiagnosticSink load_sink, sink;
  auto inputs = load_model(dir.string(), false, load_sink);
  REQUIRE(inputs.has_value());
  REQUIRE(inputs->checkpoint.has_value());
  auto expansion = expand_module_tree(inputs->config, registry(), {}, sink);
  REQUIRE(expansion.has_value());
  FileObserver* observer = expansion->checkpoint_observer();
  if (!observer) {
    // A model_type the registry lacks: the tree is inferred from the checkpoint after the load,
    // nothing can be paired early. Only the fixture made for that has one.
    CHECK(dir.filename() == "toyformer");
    return outcome(complete_module_tree(std::move(*expansion), &*inputs->checkpoint, sink), sink);
  }
  const auto& files = inputs->checkpoint->files;
  std::optional<ModelInputs> other;  // the same files, read again: other addresses
  if (seen == Seen::another_load) {
    DiagnosticSink other_sink;
    other = load_model(dir.string(), false, other_sink);
    REQUIRE(other.has_value());
    for (const SafetensorsFile& f : other->checkpoint->files) observer->file_read(f);
  }
  for (std::size_t i = 0; i < files.size(); ++i)
    if (seen == Seen::all || (seen == Seen::every_other && i % 2 == 0)) observer->file_read(files[i]);
  auto tree = complete_module_tree(std::move(*expansion), &*inputs->checkpoint, sink);
  return outcome(tree, sink);
}

std::vector<fs::path> checkpoint_fixtures() {
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(models_dir()))
    if (e.is_directory() &&
        (fs::exists(e.path() / "model.safetensors") || fs::exists(e.path() / "model.safetensors.index.json")))
      dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

}  // namespace

TEST_CASE("checkpoint observer: pairing tensors during the load changes nothing in the result") {
  const auto dirs = checkpoint_fixtures();
  REQUIRE(dirs.size() >= 10);
  for (const fs::path& dir : dirs) {
    INFO(dir.filename().string());
    Built reference = build(dir, false);
    DiagnosticSink match_sink;  // the reference's diagnostics after the load's (which `observed` keeps apart)
    for (const Diagnostic& d : reference.sink.items())
      if (!d.code.starts_with("ST") && !d.code.starts_with("IX")) match_sink.report(d);
    const Outcome expected = outcome(reference.tree, match_sink);
    for (Seen seen : {Seen::none, Seen::every_other, Seen::all, Seen::another_load}) {
      INFO("seen " << static_cast<int>(seen));
      const Outcome got = observed(dir, seen);
      CHECK(got.tree_json == expected.tree_json);
      CHECK(got.diagnostics == expected.diagnostics);
    }
    // The CLI's path: the observer set while the load's threads run.
    DiagnosticSink sink;
    const LoadedTree loaded = load_module_tree(dir.string(), false, SHARDCHECK_SOURCE_DIR "/rules", {}, sink);
    CHECK(outcome(loaded.tree, DiagnosticSink{}).tree_json == expected.tree_json);
  }
}

TEST_CASE("checkpoint observer: the tree of a sharded checkpoint is paired file by file") {
  // llama's fixture is two shards and an index: the observer sees each shard separately.
  const fs::path dir = models_dir() / "llama";
  REQUIRE(fs::exists(dir / "model.safetensors.index.json"));
  const Outcome none = observed(dir, Seen::none), half = observed(dir, Seen::every_other);
  CHECK(half.tree_json == none.tree_json);
  CHECK(half.diagnostics == none.diagnostics);
  CHECK(none.tree_json.find("\"num_params\"") != std::string::npos);
}
