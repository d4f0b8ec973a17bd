// Context parallelism against REAL torch 2.14.1 (fixtures/oracle2/cp, scripts/cp_probe.py, CPU/gloo):
// - shard-*.json: each CP rank's piece of the sequence as torch's context_parallel cuts the step's
//   buffers, and whether it balanced the load. shardcheck's activation tokens must be the largest
//   piece, and its findings must say what torch did (PLAN027 uneven pieces, PLAN028 no balancing).
// - ring-*.json: every collective one layer's ring attention issues in forward and backward on
//   each rank (torch's own _templated_ring_attention[_backward], keys and values with the llama
//   fixture's 2 key/value heads of dim 5). shardcheck's per-step figures for that model (3 layers)
//   must be the same bytes in the same number of calls.
// And by hand: sp_size under FSDP builds no mesh (accelerate 1.14.0 parallelism_config.py
// build_device_mesh returns None), so FSDP2 shards over every process.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>
#include <string>

#include "shardcheck/memory.hpp"
#include "shardcheck/preflight.hpp"
#include "test_files.hpp"

using namespace shardcheck;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kCpRecords = fs::path(SHARDCHECK_FIXTURES_DIR) / "oracle2" / "cp";

// A plan of the llama fixture (4 heads, 2 key/value heads of dim 5, 3 layers) with this FSDP version
// over `world` ranks.
PreflightRequest llama_request(int fsdp_version, int world) {
  PreflightRequest req;
  req.rules_dir = SHARDCHECK_SOURCE_DIR "/rules";
  req.model = std::string(SHARDCHECK_FIXTURES_DIR) + "/models/llama";
  req.defaults.fsdp_version = {fsdp_version, "test"};
  req.defaults.world_size = {world, "test"};
  return req;
}

// `plan` of the llama fixture with FSDP2 over cp ranks, as the records ran: cp_size = world size, the
// given sequence and micro-batch.
PreflightResult cp_plan(int cp, std::int64_t seq_len, std::int64_t micro_batch,
                        const std::string& strategy = "allgather", const std::string& load_dtype = "",
                        const std::function<void(PreflightRequest&)>& tweak = nullptr) {
  PreflightRequest req = llama_request(2, cp);
  req.defaults.cp_size = {cp, "test"};
  req.defaults.cp_comm_strategy = {strategy, "test"};
  req.versions.torch = Setting<Version>{Version{2, 14, 1}, "test"};
  req.versions.transformers = Setting<Version>{Version{5, 12, 1}, "test"};
  req.versions.accelerate = Setting<Version>{Version{1, 14, 0}, "test"};
  req.resolve.load_dtype = load_dtype;
  req.memory.seq_len = seq_len;
  req.memory.micro_batch = micro_batch;
  if (tweak) tweak(req);
  return run_preflight(req);
}

bool reported(const PreflightResult& r, const std::string& code) {
  return std::any_of(r.sink.items().begin(), r.sink.items().end(), [&](const Diagnostic& d) { return d.code == code; });
}

}  // namespace

TEST_CASE("context parallelism: each rank's tokens and the load-balancing findings match torch's context_parallel") {
  int compared = 0;
  for (const auto& path : test::json_files(kCpRecords, "shard-")) {
    const json c = test::read_json(path);
    CAPTURE(path.filename().string());
    const int cp = c.at("cp").get<int>();
    const std::int64_t seq = c.at("seq_len").get<std::int64_t>();
    std::size_t largest = 0, smallest = SIZE_MAX;
    for (const json& piece : c.at("pieces")) {
      largest = std::max(largest, piece.size());
      smallest = std::min(smallest, piece.size());
    }
    const PreflightResult r = cp_plan(cp, seq, 1);
    REQUIRE(r.memory.activations.available);
    CHECK(r.memory.activations.cp_size == cp);
    CHECK(r.memory.activations.tokens == static_cast<std::int64_t>(largest));
    const bool balanced = c.at("load_balanced").get<bool>();
    CHECK(reported(r, "PLAN027") == (largest != smallest));
    CHECK(reported(r, "PLAN028") == (!balanced && largest == smallest));
    ++compared;
  }
  CHECK(compared >= 5);
}

TEST_CASE("context parallelism: ring attention's all-gathers and ring sends per step match torch's ring") {
  int compared = 0;
  for (const auto& path : test::json_files(kCpRecords, "ring-")) {
    const json c = test::read_json(path);
    if (c.at("kind") == "ring-uneven") continue;  // the next test's
    CAPTURE(path.filename().string());
    const int cp = c.at("cp").get<int>();
    // Every rank issues the same calls.
    for (const json& calls : c.at("calls")) CHECK(calls == c.at("calls").at(0));
    std::int64_t gather_bytes = 0, send_bytes = 0;
    int gathers = 0, sends = 0;
    for (const json& call : c.at("calls").at(0)) {
      const bool gather = call.at("op") == "all_gather";
      (gather ? gather_bytes : send_bytes) += call.at("bytes").get<std::int64_t>();
      ++(gather ? gathers : sends);
    }
    // The records ran 2-byte keys and values as float16, the float32 case as float32: the llama
    // fixture computes in its bfloat16 (2 bytes), or float32 when loaded so.
    const bool f32 = c.at("dtype") == "float32";
    const PreflightResult r = cp_plan(cp, c.at("seq_len").get<std::int64_t>(), c.at("batch").get<std::int64_t>(),
                                      c.at("strategy").get<std::string>(), f32 ? "float32" : "");
    REQUIRE(r.comm.context_parallel.has_value());
    const CpTraffic& t = *r.comm.context_parallel;
    REQUIRE(t.estimated);
    constexpr int kLayers = 3;
    CHECK(t.cp_size == cp);
    CHECK(static_cast<std::int64_t>(t.collectives.all_gather) == kLayers * gather_bytes);
    CHECK(t.collectives.all_gathers == kLayers * gathers);
    CHECK(static_cast<std::int64_t>(t.ring_send) == kLayers * send_bytes);
    CHECK(t.ring_sends == kLayers * sends);
    ++compared;
  }
  CHECK(compared >= 4);
}

// cp not dividing the sequence: the ring on torch.chunk's unequal pieces, run for real with both rotate
// methods (fixtures/oracle2/cp/ring-s7-cp2-*-uneven.json): the step does not complete (gloo aborts the
// rank holding the shorter piece in the first exchange; the other loses its peer). PLAN027 must be an
// error for that sequence and cp, with either strategy.
TEST_CASE("context parallelism: the ring on uneven pieces fails for real, and PLAN027 stops the plan") {
  int compared = 0;
  for (const auto& path : test::json_files(kCpRecords, "ring-")) {
    const json c = test::read_json(path);
    if (c.at("kind") != "ring-uneven") continue;
    CAPTURE(path.filename().string());
    std::set<std::int64_t> tokens;
    int failed = 0;
    for (const json& rank : c.at("ranks")) {
      tokens.insert(rank.at("tokens").get<std::int64_t>());
      failed += !rank.at("error").is_null();
    }
    CHECK(tokens.size() > 1);                // the pieces really were unequal
    CHECK(failed == c.at("cp").get<int>());  // and no rank finished the step
    const PreflightResult r =
        cp_plan(c.at("cp").get<int>(), c.at("seq_len").get<std::int64_t>(), 1, c.at("strategy").get<std::string>());
    CHECK(reported(r, "PLAN027"));
    CHECK(r.sink.first_error_exit_code() != ExitCode::ok);
    ++compared;
  }
  CHECK(compared == 2);
}

TEST_CASE("context parallelism: by hand, activations, checkpointed recompute and attention other than SDPA") {
  // 8,192 tokens over 2 CP ranks: 4,096 each. One layer's K and V: 4,096 x (2 + 2) x 5 = 81,920
  // elements, 163,840 bytes in bfloat16; allgather: 2 x 163,840 per call, forward and backward per
  // layer; backward's gradients: 2 ring sends of 81,920 x 4 bytes per layer.
  const PreflightResult r = cp_plan(2, 8192, 1);
  REQUIRE(r.comm.context_parallel.has_value());
  const CpTraffic& t = *r.comm.context_parallel;
  CHECK(t.tokens == 4096);
  CHECK(t.kv_bytes == 163840);
  CHECK(t.collectives.all_gather == 3u * 2u * 2u * 163840u);
  CHECK(t.ring_send == 3u * 2u * 81920u * 4u);
  CHECK(r.memory.activations.tokens == 4096);
  CHECK_FALSE(r.sink.has_errors());
  // Activation checkpointing runs each block's forward again in backward: 2 forward all-gathers and
  // one backward all-gather per layer.
  const PreflightResult ac = cp_plan(2, 8192, 1, "allgather", "", [](PreflightRequest& req) {
    req.defaults.activation_checkpointing = {true, "test"};
  });
  REQUIRE(ac.comm.context_parallel.has_value());
  CHECK(ac.comm.context_parallel->collectives.all_gathers == 3 * 3);
  CHECK(ac.comm.context_parallel->collectives.all_gather == 3u * 3u * 2u * 163840u);
  // Eager attention: the Trainer refuses it (PLAN026), an error.
  const PreflightResult eager =
      cp_plan(2, 8192, 1, "allgather", "", [](PreflightRequest& req) { req.resolve.attn_implementation = "eager"; });
  CHECK(reported(eager, "PLAN026"));
  CHECK(eager.memory.verdict == FitVerdict::withheld);
  // torch 2.5: accelerate refuses context parallelism (PLAN029).
  const PreflightResult old = cp_plan(2, 8192, 1, "allgather", "", [](PreflightRequest& req) {
    req.versions.torch = Setting<Version>{Version{2, 5, 1}, "test"};
  });
  CHECK(reported(old, "PLAN029"));
}

TEST_CASE("sequence parallelism under FSDP: no mesh, FSDP2 over every process, PLAN025") {
  PreflightRequest req = llama_request(2, 8);
  req.defaults.sp_size = {2, "test"};
  const PreflightResult r = run_preflight(req);
  REQUIRE(r.plan.has_value());
  CHECK(r.plan->shard_group == 8);
  CHECK(r.plan->mesh.empty());
  CHECK(reported(r, "PLAN025"));
  CHECK_FALSE(r.sink.has_errors());
  // accelerate 1.12.x still builds the mesh with an sp dim (build_device_mesh returns None from 1.13.0):
  // FSDP2 shards over dp_shard = 8 / 2 = 4 ranks, and the sp ranks repeat the work (PLAN025 says so).
  req.versions.accelerate = Setting<Version>{Version{1, 12, 0}, "test"};
  const PreflightResult old = run_preflight(req);
  REQUIRE(old.plan.has_value());
  CHECK(old.plan->shard_group == 4);
  CHECK(old.plan->mesh.size() == 2);
  CHECK(reported(old, "PLAN025"));
  // cp and sp together: accelerate 1.13+ refuses the ParallelismConfig (SET007), no plan.
  req.versions.accelerate = Setting<Version>{Version{1, 14, 0}, "test"};
  req.defaults.cp_size = {2, "test"};
  const PreflightResult both = run_preflight(req);
  CHECK(reported(both, "SET007"));
  CHECK(both.sink.has_errors());
}

TEST_CASE("context parallelism on sliding-window layers: accelerate's hook drops their masks (PLAN032)") {
  // Cohere-2 fixture: 2 sliding-window layers, window 8 (fixtures/oracle2/models/cohere2).
  const auto plan_cohere2 = [](std::int64_t seq_len) {
    PreflightRequest req;
    req.rules_dir = SHARDCHECK_SOURCE_DIR "/rules";
    req.model = std::string(SHARDCHECK_FIXTURES_DIR) + "/oracle2/models/cohere2";
    req.defaults.fsdp_version = {2, "test"};
    req.defaults.world_size = {4, "test"};
    req.defaults.cp_size = {2, "test"};
    req.memory.seq_len = seq_len;
    req.memory.micro_batch = 1;
    return run_preflight(req);
  };
  CHECK(reported(plan_cohere2(32), "PLAN032"));
  CHECK_FALSE(reported(plan_cohere2(4), "PLAN032"));    // shorter than the window: nothing changes
  CHECK_FALSE(reported(plan_cohere2(8), "PLAN032"));    // as long as the window: the sliding mask is the causal one
  CHECK_FALSE(reported(cp_plan(2, 32, 1), "PLAN032"));  // Llama has no sliding window
}

TEST_CASE("parallelism sizes under FSDP1 from flags: accelerate's refusal (SET008), not a fit verdict") {
  PreflightRequest req = llama_request(1, 4);
  req.defaults.cp_size = {2, "--cp-size"};
  const PreflightResult cp = run_preflight(req);
  CHECK(reported(cp, "SET008"));
  CHECK(cp.sink.has_errors());
  // A shell's PARALLELISM_CONFIG_CP_SIZE alone builds no ParallelismConfig: no error from it.
  req.defaults.cp_size = {2, "env PARALLELISM_CONFIG_CP_SIZE"};
  CHECK_FALSE(reported(run_preflight(req), "SET008"));
}
