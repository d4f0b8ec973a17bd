// cache-with-checkpointing: accelerate's activation checkpointing with the model's KV cache on, which
// fails at the first backward.
#include <fmt/format.h>

#include "check/plan_check.hpp"

namespace shardcheck::checks {
namespace cache_with_checkpointing {

constexpr FindingCode kCodes[] = {
    {"PLAN034", Severity::warning, ExitCode::ok,
     "Activation checkpointing with the KV cache on: the first backward raises CheckpointError",
     "accelerate's fsdp_activation_checkpointing wraps each decoder block (FSDP1) or each of its children (FSDP2, "
     "fsdp2_apply_ac) in torch's non-reentrant checkpoint. A transformers model whose config has use_cache true "
     "(the default) builds a DynamicCache in training too, and when backward recomputes the attention it appends "
     "the keys and values to that cache again: the recomputed tensors are twice as long as the saved ones and "
     "torch.utils.checkpoint raises CheckpointError at the first backward (checked on real torch 2.14.1 + "
     "transformers 5.12.1 steps under FSDP1 and FSDP2). The Trainer sets config.use_cache from "
     "TrainingArguments.use_cache, false by default, and transformers' own gradient_checkpointing turns the cache "
     "off; a plain accelerate loop does neither. Pass use_cache=False to the model or set model.config.use_cache = "
     "False."},
};
constexpr const FindingCode& kCacheOn = kCodes[0];

// accelerate's activation checkpointing (fsdp_activation_checkpointing: FSDP1's checkpoint_wrapper on
// each block, FSDP2's fsdp2_apply_ac on each block's children) with the model's KV cache on: the
// recomputed attention appends its keys and values to the cache a second time, and
// torch.utils.checkpoint raises CheckpointError at the first backward (real torch 2.14.1 +
// transformers 5.12.1 steps, FSDP1 and FSDP2: fixtures/oracle2/peak/*-cache.json). The Trainer sets
// config.use_cache from TrainingArguments.use_cache (false by default, trainer.py); transformers' own
// gradient_checkpointing turns it off; a plain loop keeps config.json's use_cache (true by default).
void run(const PlanContext& ctx, DiagnosticSink& sink) {
  if (!ctx.model_config) return;
  const ModelConfig& config = *ctx.model_config;
  const FsdpSettings& s = ctx.settings;
  const MemoryOptions& opts = ctx.memory;
  if (!s.activation_checkpointing.value || checkpointing_by_transformers(s, opts) ||
      training_loop(opts, s) != TrainingLoop::accelerate)
    return;
  if (config.bool_field("use_cache").value_or(true) == false) return;
  std::string from;
  SourceLocation where = setting_location(s.activation_checkpointing.source, config.path, &from);
  sink.report(finding(
      kCacheOn, std::move(where),
      fmt::format("activation checkpointing{} with the model's KV cache on (config.json use_cache: {}): in a loop that "
                  "calls model(...) without use_cache=False, the recomputed attention appends to the cache again and "
                  "the first backward raises torch.utils.checkpoint.CheckpointError (\"Recomputed values for the "
                  "following tensors have different metadata than during the forward pass\")",
                  from, config.bool_field("use_cache") ? "true" : "absent, so true"),
      "pass use_cache=False in the forward call, or set model.config.use_cache = False before training (the "
      "Trainer does so by itself)"));
}

}  // namespace cache_with_checkpointing

extern const PlanCheck kCacheWithCheckpointing;
const PlanCheck kCacheWithCheckpointing{
    .name = "cache-with-checkpointing",
    .codes = cache_with_checkpointing::kCodes,
    .run = cache_with_checkpointing::run,
};

}  // namespace shardcheck::checks
