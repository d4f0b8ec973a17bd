#pragma once
// The check stage: what the resolved job tells about how it will run, before it runs. It sits between
// simulate and report. A check is shaped like a lint rule (src/rules/): one file in src/check/ holding
// its finding codes (summary and explanation, the upstream behaviour it reproduces: file, version), and
// one function over a read-only context; one line registers it, in the order its findings are
// reported. Two kinds, by what they read:
//   - release checks (all_release_checks.def): the release set against the model and the adapter,
//     once both are built and before the plan (a release that cannot run stops nothing, but it comes
//     first in the output);
//   - plan checks (all_checks.def): the finished plan.
// `shardcheck explain CODE` and docs/codes.md read the codes from the check's file (finding_codes(),
// src/check/catalogue.cpp).

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shardcheck/diagnostics.hpp"
#include "shardcheck/finding_codes.hpp"
#include "shardcheck/memory.hpp"
#include "shardcheck/model_config.hpp"
#include "shardcheck/module_tree.hpp"
#include "shardcheck/peft_model.hpp"
#include "shardcheck/settings.hpp"
#include "shardcheck/shard_plan.hpp"
#include "shardcheck/stack_versions.hpp"

namespace shardcheck {

// What a check reads: the planned tree, the effective settings and the plan, never changed.
struct PlanContext {
  const ModuleTree& tree;
  const FsdpSettings& settings;
  const ShardPlan& plan;
  const ModelConfig* model_config;    // config.json as read; nullptr when the load gave none
  const MemoryOptions& memory;        // the recipe's sequence, micro-batch and loop
  const StackVersions& versions;      // the release set (peft and trl among them)
  bool wrap_failed = false;           // resolving the wrap classes failed: accelerate stops there
  bool tensor_parallel = false;       // FSDP2 with a tp mesh dimension above 1
  std::string_view tp_not_simulated;  // why the TP layout was not simulated; "" when it was (or no TP)
};

struct PlanCheck {
  const char* name;                    // "context-parallel": the file's name, for a reader
  std::span<const FindingCode> codes;  // every code it reports, documented here
  void (*run)(const PlanContext& ctx, DiagnosticSink& sink);
};

// What a release check reads: the release set, its rules, and the model and adapter built on it.
struct ReleaseContext {
  const ModuleTree& tree;
  const FsdpSettings& settings;
  const StackVersions& versions;
  const VersionRules& version_rules;                    // rules/versions.yaml
  const PeftRules* peft_rules;                          // rules/peft.yaml; nullptr without an adapter
  const std::optional<std::string>& accelerate_config;  // its path, when the job has one
};

struct ReleaseCheck {
  const char* name;
  std::span<const FindingCode> codes;
  void (*run)(const ReleaseContext& ctx, DiagnosticSink& sink);
};

// Every release check, in all_release_checks.def order, and all of them run over `ctx`.
const std::vector<const ReleaseCheck*>& all_release_checks();
void run_release_checks(const ReleaseContext& ctx, DiagnosticSink& sink);

// Every plan check, in all_checks.def order.
const std::vector<const PlanCheck*>& all_plan_checks();

// Runs every check over `ctx`, in order; their findings go to `sink`.
void run_plan_checks(const PlanContext& ctx, DiagnosticSink& sink);

}  // namespace shardcheck
