#pragma once
// Planning under tensor parallelism (FSDP2 with a tp mesh dimension above 1).

#include <string>

#include "shardcheck/diagnostics.hpp"
#include "shardcheck/memory.hpp"
#include "shardcheck/module_tree.hpp"
#include "shardcheck/settings.hpp"
#include "shardcheck/shard_plan.hpp"

namespace shardcheck {

// Why the tensor-parallel layout cannot be simulated for this run ("" when it can).
std::string tp_not_simulated(const ModuleTree& tree, const FsdpSettings& s);

struct TensorParallelPlan {
  ShardPlan plan;         // the TP rank's with the largest per-rank peak
  MemoryEstimate memory;  // its estimate, with every TP rank's peak (tp_ranks)
};

// FSDP2 over every TP rank's local tensors; diagnostics from TP rank 0 (and PLAN024) go to `sink`.
TensorParallelPlan plan_tensor_parallel(const ModuleTree& tree, const FsdpSettings& s, const MemoryOptions& opts,
                                        DiagnosticSink& sink);

}  // namespace shardcheck
