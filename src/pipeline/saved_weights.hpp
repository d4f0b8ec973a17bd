#pragma once
// The pipeline's one concurrent check: a saved adapter's weights against the PeftModel, beside the plan.

#include <cstddef>
#include <exception>
#include <iterator>
#include <system_error>
#include <thread>
#include <utility>

#include "shardcheck/peft_model.hpp"
#include "shardcheck/preflight.hpp"

namespace shardcheck {

// The check of a saved adapter's weights against the PeftModel (check_saved_adapter_weights), on a
// thread of its own beside the plan when the tree is folded: it reads the tree only, as the plan's
// stages do until the memory estimate. For a 405B all-linear adapter's 1,764 saved keys it is ~0.3 ms,
// which the plan (~0.3 ms) then hides. Its findings go where the adapter's end, as if it had run
// first; a saved matrix that does not fit (PEFT008) stops the run there, as the synchronous check did:
// what came after is dropped and the settings are as they were.
class SavedWeightsCheck {
 public:
  // False when the check ran here (an unfolded tree) and stops the run: `r` is then final.
  bool start(PreflightResult& r, const LoraAdapter& adapter) {
    started_ = true;
    if (!adapter.weights) return true;
    at_ = r.sink.items().size();
    settings_ = r.settings;
    const ModuleTree& tree = *r.tree;
    auto run = [this, &tree, &adapter] {
      try {
        ok_ = check_saved_adapter_weights(tree, adapter, sink_);
      } catch (...) {
        failure_ = std::current_exception();
      }
    };
    if (tree.folded) {
      try {
        thread_ = std::jthread(run);
        return true;
      } catch (const std::system_error&) {
        // no thread to be had: check it now
      }
    }
    run();
    return finish(r);
  }

  // Joins the check and puts its findings in place; false when it stops the run (`r` is then final).
  // Call before anything changes the tree; again later, it does nothing.
  bool finish(PreflightResult& r) {
    if (!started_ || finished_) return ok_;
    finished_ = true;
    if (thread_.joinable()) thread_.join();
    if (failure_) std::rethrow_exception(failure_);
    auto& items = r.sink.items();
    if (!ok_) {  // (memory and communication come after the last finish())
      items.erase(items.begin() + static_cast<std::ptrdiff_t>(at_), items.end());
      r.settings = std::move(settings_);
      r.plan.reset();
    }
    items.insert(items.begin() + static_cast<std::ptrdiff_t>(at_), std::make_move_iterator(sink_.items().begin()),
                 std::make_move_iterator(sink_.items().end()));
    return ok_;
  }

 private:
  bool started_ = false, finished_ = false, ok_ = true;
  std::size_t at_ = 0;
  FsdpSettings settings_;
  DiagnosticSink sink_;
  std::exception_ptr failure_;
  std::jthread thread_;  // declared last: joined first if finish() was never called
};

}  // namespace shardcheck
