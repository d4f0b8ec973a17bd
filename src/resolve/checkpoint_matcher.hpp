#pragma once
// Stage "resolve": pairing checkpoint tensors with the expanded module tree's parameters (the
// rules of checkpoint_match.cpp), in two steps so that the per-tensor step can run on the load's
// reading threads while headers are still being read (FileObserver), and only the ordered pass
// that changes the tree and reports is left for after the load.
//
// Why: deciding DeepSeek-V3's 92k tensors after the load meant walking 92k descriptions, their
// names and shapes, long evicted from cache: ~4 ms on two threads, on inspect's critical path.
// Decided right after each header is parsed, the same work finds them in cache and overlaps the
// rest of the load.

#include <memory>

#include "resolve/tree_internal.hpp"
#include "shardcheck/checkpoint.hpp"

namespace shardcheck {

class CheckpointMatcher final : public FileObserver {
 public:
  // Builds the lookup tables from the expanded tree. `tree`, `arch`, `fused` and `globals` must
  // outlive the matcher, and the tree must not change before apply().
  CheckpointMatcher(const ModuleTree& tree, const ArchSpec& arch, const FusedSources& fused, const Frame& globals);
  ~CheckpointMatcher() override;
  CheckpointMatcher(const CheckpointMatcher&) = delete;
  CheckpointMatcher& operator=(const CheckpointMatcher&) = delete;

  // Decides what each tensor of `file` is; safe to call from several threads at once.
  void file_read(const SafetensorsFile& file) noexcept override;

  // Decides the files file_read did not see (on two threads when there are many tensors), then
  // walks every tensor in checkpoint order: shapes checked, dtypes taken, fused parameters
  // gathered, missing and unexpected tensors reported. Call once, after the load.
  void apply(ModuleTree& tree, const CheckpointMeta& ckpt, DiagnosticSink& sink);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardcheck
