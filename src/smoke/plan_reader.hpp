#pragma once
// `--plan plan.json`: the ShardPlan back from `shardcheck plan --format json` (the contract written
// by src/report/plan_json.cpp), so a run can verify a plan made elsewhere or earlier.

#include <optional>
#include <string>

#include "shardcheck/shard_plan.hpp"

namespace shardcheck::smoke {

struct ReadPlan {
  ShardPlan plan;
  std::string strategy;
  // The plan has a tensor-parallel layout (its units are one TP rank's): plan.tensor_parallel, and every
  // TP rank's units in plan.tp_unit_sets / tp_unit_set (both empty in a plan written before they were).
  bool tensor_parallel = false;
};

// nullopt with `error` naming the file and the field (or JSON byte position) on bad input.
std::optional<ReadPlan> read_plan_json(const std::string& path, std::string& error);
std::optional<ReadPlan> parse_plan_json(const std::string& text, const std::string& label, std::string& error);

}  // namespace shardcheck::smoke
