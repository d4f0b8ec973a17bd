// Planning under tensor parallelism: whether transformers' layout can be simulated for this run, and
// FSDP2 over every TP rank's local tensors (moved here from the pipeline: both are simulation).
#include "simulate/tp_planning.hpp"

#include <fmt/format.h>

#include <map>

#include "shardcheck/finding_codes.hpp"
#include "shardcheck/tensor_parallel.hpp"

namespace shardcheck {

// Why the tensor-parallel layout cannot be simulated for this run ("" when it can). The layout is
// transformers 5.12.1's: plain local tensors cut in ceil pieces (integrations/tensor_parallel.py).
// The 4.5x releases placed DTensors cut by floor division and later main returns to DTensors, whose
// FSDP2 sharding (_StridedShard) is another layout.
std::string tp_not_simulated(const ModuleTree& tree, const FsdpSettings& s) {
  if (!tree.tp_plan) return fmt::format("the registry does not describe {}'s tensor-parallel plan", tree.model_type);
  if (tree.peft)
    for (const Module& m : tree.modules) {
      // peft 0.20 gives tensor-parallel plans only to the adapters of colwise and rowwise layers
      // (tuners/lora/model.py _SUPPORTED_TP_PLANS; an embedding's are applied in its forward).
      if (m.cls == "DoraLinearLayer" || m.cls == "ParamWrapper" || m.cls == "ModulesToSaveWrapper")
        return fmt::format("a PEFT model's {} layers under tensor parallelism are not laid out", m.cls);
      if (!m.cls.starts_with("lora.")) continue;
      const ModuleTree::TpEntry* e = tp_module_entry(tree, m.path + ".base_layer");
      if (e && (m.cls == "lora.Embedding" || (e->style.name != "colwise" && e->style.name != "rowwise")))
        return fmt::format("the LoRA adapters of '{}' (a {} layer) under tensor parallelism are not laid out", m.path,
                           e->style.name);
    }
  const Version& tf = s.transformers_version.value;
  if (tf < Version{5, 0, 0} || tf > Version{5, 12, 1})
    return fmt::format(
        "the layout is transformers 5.x's (plain local tensors, checked on 5.12.1) and transformers {} "
        "places tensor-parallel parameters as DTensors",
        tf.str());
  return "";
}

// FSDP2 over tensor-parallel local tensors: every TP rank's tree planned over its data-parallel group
// (accelerate 1.14 fsdp2_prepare_model shards over the mesh's dp_shard_cp dims; transformers 5.12.1's
// TP parameters are plain tensors, so fully_shard sees each rank's pieces as whole parameters). The
// plan and memory kept are the TP rank's with the largest per-rank peak; diagnostics come from TP rank 0.
TensorParallelPlan plan_tensor_parallel(const ModuleTree& tree, const FsdpSettings& s, const MemoryOptions& opts,
                                        DiagnosticSink& sink) {
  TensorParallelLayout layout = tensor_parallel_layout(tree, s, sink);
  const int tp = layout.tp_size;
  if (layout.split == 0)
    sink.report(model_setting_finding(
        "PLAN024", s.tp_size.source, tree.config_path,
        fmt::format("tensor parallelism (tp_size {}) splits no parameter of {}: transformers has no tensor-parallel "
                    "plan for it, so every TP rank holds and computes the whole model",
                    tp, tree.architecture),
        fmt::format("give the {} processes of each TP group to dp_shard instead (tp_size 1)", tp)));
  // TP ranks whose pieces have the same shapes hold the same plan (every rank, when tp_size divides
  // every split dimension): each distinct set of shapes is planned once.
  std::map<std::vector<std::int64_t>, int> first_with;  // the split sizes of a rank -> the first such rank
  std::optional<ShardPlan> best;
  MemoryEstimate best_memory;
  int best_rank = 0;
  std::vector<TpRankMemory> per_rank;
  std::vector<std::vector<ShardUnit>> unit_sets;  // each distinct TP rank's units
  std::vector<int> unit_set;                      // TP rank -> its set
  for (int t = 0; t < tp; ++t) {
    std::vector<std::int64_t> pieces;
    for (const auto& p : layout.params)
      if (p.dim) pieces.push_back(p.shapes[static_cast<std::size_t>(t)][static_cast<std::size_t>(*p.dim)]);
    if (const auto [it, fresh] = first_with.emplace(std::move(pieces), t); !fresh) {
      TpRankMemory copy = per_rank[static_cast<std::size_t>(it->second)];
      copy.tp_rank = t;
      copy.global_rank += t - it->second;
      per_rank.push_back(copy);
      unit_set.push_back(unit_set[static_cast<std::size_t>(it->second)]);
      continue;
    }
    const ModuleTree local = tp_local_tree(tree, layout, t);
    DiagnosticSink scratch;
    ShardPlan plan = plan_fsdp2(local, s, t == 0 ? sink : scratch);
    plan.tp_rank = t;
    plan.tensor_parallel = layout;  // the estimate cuts this TP rank's activations by it
    MemoryEstimate memory = estimate_memory(plan, local, s, opts);
    const RankMemory& peak = memory.ranks[static_cast<std::size_t>(memory.peak_rank)];
    // The tp index varies fastest on the mesh: TP rank t of rank 0's shard-group member k is that
    // member's global rank + t.
    const int global = plan.shard_peers.at(static_cast<std::size_t>(peak.rank)) + t;
    per_rank.push_back({t, global, peak});
    unit_set.push_back(static_cast<int>(unit_sets.size()));
    unit_sets.push_back(plan.units);
    if (!best || memory.peak > best_memory.peak) {
      best = std::move(plan);
      best_memory = std::move(memory);
      best_rank = global;
    }
  }
  best_memory.peak_mesh_rank = best_rank;
  best->tensor_parallel = std::move(layout);
  best->tp_unit_sets = std::move(unit_sets);
  best->tp_unit_set = std::move(unit_set);
  best_memory.tp_ranks = std::move(per_rank);
  return {std::move(*best), std::move(best_memory)};
}

}  // namespace shardcheck
