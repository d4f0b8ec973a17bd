#pragma once
// The check stage: what a finished plan tells about the job before it runs. It sits between simulate
// and report. A plan check is shaped like a lint rule (src/rules/): one file in src/check/ holding its
// finding codes (summary and explanation, the upstream behaviour it reproduces: file, version), and
// one function over a read-only PlanContext; one line in src/check/all_checks.def registers it, in
// the order its findings are reported. `shardcheck explain CODE` and docs/codes.md read the codes from
// the check's file (finding_codes(), src/check/catalogue.cpp).

#include <span>
#include <string_view>
#include <vector>

#include "shardcheck/diagnostics.hpp"
#include "shardcheck/finding_codes.hpp"
#include "shardcheck/memory.hpp"
#include "shardcheck/model_config.hpp"
#include "shardcheck/module_tree.hpp"
#include "shardcheck/settings.hpp"
#include "shardcheck/shard_plan.hpp"
#include "shardcheck/stack_versions.hpp"

namespace shardcheck {

// What a check reads: the planned tree, the effective settings and the plan, never changed.
struct PlanContext {
  const ModuleTree& tree;
  const FsdpSettings& settings;
  const ShardPlan& plan;
  const ModelConfig* model_config;  // config.json as read; nullptr when the load gave none
  const MemoryOptions& memory;      // the recipe's sequence, micro-batch and loop
  const StackVersions& versions;    // the release set (peft and trl among them)
  bool wrap_failed = false;         // resolving the wrap classes failed: accelerate stops there
  bool tensor_parallel = false;     // FSDP2 with a tp mesh dimension above 1
  std::string_view tp_not_simulated;  // why the TP layout was not simulated; "" when it was (or no TP)
};

struct PlanCheck {
  const char* name;                    // "context-parallel": the file's name, for a reader
  std::span<const FindingCode> codes;  // every code it reports, documented here
  void (*run)(const PlanContext& ctx, DiagnosticSink& sink);
};

// Every plan check, in all_checks.def order.
const std::vector<const PlanCheck*>& all_plan_checks();

// Runs every check over `ctx`, in order; their findings go to `sink`.
void run_plan_checks(const PlanContext& ctx, DiagnosticSink& sink);

}  // namespace shardcheck
