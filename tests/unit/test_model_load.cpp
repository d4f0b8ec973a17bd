// ModelLoad::begin's `then` (and load_module_tree's `alongside`, which is it): the caller's work runs
// once, off the caller's thread, without holding finish() back (model_source.cpp runs it after the
// load's count_down); it never runs for a model that cannot be found.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <thread>

#include "model_fixtures.hpp"
#include "shardcheck/load_tree.hpp"

using namespace model_fixtures;

namespace model_load_test {

struct Work {
  std::atomic<int> runs{0};
  std::thread::id on;
  std::atomic<bool> released{false};

  // Waits (at most 5 s, so that a broken contract fails rather than hangs) for the caller's go.
  std::function<void()> fn() {
    return [this] {
      on = std::this_thread::get_id();
      for (int i = 0; i < 500 && !released.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      ++runs;
    };
  }
};

TEST_CASE("ModelLoad: `then` runs once off the caller's thread, and finish() does not wait for it") {
  for (const bool config_only : {false, true}) {
    CAPTURE(config_only);
    Work w;
    {
      DiagnosticSink sink;
      auto load = ModelLoad::begin((models_dir() / "llama").string(), config_only, sink, w.fn());
      REQUIRE(load.has_value());
      const ModelInputs inputs = load->finish(sink);  // returns while `then` still waits
      CHECK(inputs.checkpoint.has_value() == !config_only);
      CHECK(w.runs == 0);
      w.released = true;
    }  // the destructor joins the reading thread
    CHECK(w.runs == 1);
    CHECK(w.on != std::this_thread::get_id());
  }
}

TEST_CASE("ModelLoad: `then` never runs for a model that is not there") {
  Work w;
  w.released = true;
  DiagnosticSink sink;
  CHECK_FALSE(ModelLoad::begin((models_dir() / "no-such-model").string(), false, sink, w.fn()).has_value());
  CHECK(sink.has_errors());
  CHECK(w.runs == 0);
}

TEST_CASE("load_module_tree: the work alongside has run when it returns") {
  Work w;
  w.released = true;
  DiagnosticSink sink;
  const LoadedTree loaded =
      load_module_tree((models_dir() / "qwen3").string(), false, SHARDCHECK_SOURCE_DIR "/rules", {}, sink, w.fn());
  CHECK(loaded.tree.has_value());
  CHECK(w.runs == 1);
}

}  // namespace model_load_test
