#pragma once
// Rendering of a smoke run (rank 0 prints it): a per-unit table, the nccl-tests-style bandwidth
// table and a verdict in text; the same facts with every count and measurement in JSON.

#include <optional>
#include <string>
#include <vector>

#include "smoke/runner.hpp"

namespace shardcheck::smoke {

struct RunHeader {
  int world = 1;
  int shard_size = 1;  // S: ranks a unit is sharded over
  int replicas = 1;    // R = world / (S * T): shard groups whose gradients are all-reduced
  int tp = 1;          // T: tensor-parallel ranks, each with its own pieces and its own shard groups
  std::string backend, device, torch_version;
  std::string model;  // model directory or plan file
  int fsdp_version = 1;
  std::string strategy;
  int plan_units = 0;  // units in the plan (the run may cover fewer: --units)
  bool weights = false;
  bool shifted = false;                // the test-only shift was on
  std::optional<double> expect_busbw;  // GB/s
};

struct Verdict {
  int exit_code = 0;  // 0, 20 (wrong elements) or 26 (bandwidth)
  std::string summary;
};

Verdict judge(const RunHeader& h, const RunResult& r);
std::string render_smoke_text(const RunHeader& h, const RunResult& r, const Verdict& v);
std::string render_smoke_json(const RunHeader& h, const RunResult& r, const Verdict& v);
// A run that ended in a fault: {"verdict": "error", "exit_code", "error"} for --format json.
std::string render_smoke_error_json(int exit_code, const std::string& message);

}  // namespace shardcheck::smoke
