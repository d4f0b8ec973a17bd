// The smoke runner's torch-free support: nccl-tests size parsing and bandwidth formulas, launcher
// environment and rank-exit summaries, the --plan reader, and --weights reads of a real fixture.
#include <doctest/doctest.h>
#include <signal.h>

#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "smoke/bandwidth.hpp"
#include "smoke/launcher.hpp"
#include "smoke/plan_reader.hpp"
#include "smoke/weights.hpp"

using namespace shardcheck;
using namespace shardcheck::smoke;

TEST_CASE("smoke bandwidth: nccl-tests conventions") {
  CHECK(parse_nccl_size("32M") == 33554432);
  CHECK(parse_nccl_size("1K") == 1024);
  CHECK(parse_nccl_size("4096") == 4096);
  CHECK_FALSE(parse_nccl_size("12X"));
  CHECK_FALSE(parse_nccl_size("-1"));
  std::string error;
  CHECK(sweep_sizes(1024, 65536, 4, error) == std::vector<std::int64_t>{1024, 4096, 16384, 65536});
  CHECK(sweep_sizes(8, 8, 1, error) == std::vector<std::int64_t>{8});
  CHECK(sweep_sizes(64, 8, 2, error).empty());
  CHECK(error == "expected 0 < -b <= -e, found -b 64 and -e 8");
  // 1 GB in 0.5 s = 2 GB/s; on 4 ranks busbw = 2 x 3/4.
  CHECK(algbw_gbps(1'000'000'000, 0.5) == doctest::Approx(2.0));
  CHECK(busbw_gbps(2.0, 4) == doctest::Approx(1.5));
  CHECK(busbw_gbps(2.0, 1) == 0.0);
  CHECK(count_per_rank(1024, 3, 4) == 85);  // floor(1024 / 12)
  CHECK(count_per_rank(8, 4, 4) == 0);
}

TEST_CASE("smoke launcher: RANK/WORLD_SIZE/MASTER_* like torchrun") {
  std::map<std::string, std::string> env;
  auto get = [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  CHECK_FALSE(read_launch_env(get));
  env = {{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29600"}, {"LOCAL_RANK", "1"}};
  auto e = read_launch_env(get);
  REQUIRE(e);
  CHECK(e->rank == 1);
  CHECK(e->world == 4);
  CHECK(e->master_addr == "node0");
  CHECK(e->master_port == 29600);
  env["RANK"] = "4";
  try {
    read_launch_env(get);
    FAIL("expected a fault");
  } catch (const SmokeFault& f) {
    CHECK(f.code == ExitCode::smoke_world_mismatch);
    CHECK(std::string(f.what()) == "RANK=4 is not below WORLD_SIZE=4: this rank belongs to a larger job");
  }
  env["RANK"] = "0";
  env["MASTER_PORT"] = "70000";
  try {
    read_launch_env(get);
    FAIL("expected a fault");
  } catch (const SmokeFault& f) {
    CHECK(f.code == ExitCode::smoke_launch);
    CHECK(std::string(f.what()) == "expected an integer from 1 to 65535 in MASTER_PORT, found '70000'");
  }
}

TEST_CASE("smoke launcher: a rank that died decides the exit code and is named") {
  std::vector<RankExit> ranks(3);
  for (int r = 0; r < 3; ++r) {
    ranks[r].rank = r;
    ranks[r].pid = 100 + r;
    ranks[r].started = ranks[r].exited = true;
    ranks[r].code = 22;
  }
  ranks[2].code = -1;
  ranks[2].signal = SIGKILL;
  auto res = summarize(ranks, std::chrono::seconds(5));
  CHECK(res.exit_code == 22);
  CHECK(res.rank0_reported);
  CHECK(res.message == "rank 2 (pid 102) died: killed by signal 9 (SIGKILL)");
  // All ranks fine: 0. Rank 0 reports a verification failure: its code.
  for (auto& r : ranks) r.code = 0, r.signal = 0;
  CHECK(summarize(ranks, std::chrono::seconds(5)).exit_code == 0);
  ranks[0].code = 20;
  CHECK(summarize(ranks, std::chrono::seconds(5)).exit_code == 20);
}

TEST_CASE("smoke plan reader: the plan JSON contract, and errors naming the field") {
  const std::string text = R"({"world_size": 2, "shard_group_size": 2, "fsdp_version": 1,
    "sharding_strategy": "FULL_SHARD", "units": [{"path": "", "numel": 5, "padded_numel": 6, "shard_numel": 3,
    "dtype": "BF16", "params": ["a"], "param_numels": [5], "rank_pad": [0, 1],
    "layout": [{"param": "a", "offset": 0, "numel": 5}]}]})";
  std::string error;
  auto p = parse_plan_json(text, "p.json", error);
  REQUIRE(p);
  CHECK(p->plan.world_size == 2);
  CHECK(p->strategy == "FULL_SHARD");
  REQUIRE(p->plan.units.size() == 1);
  CHECK(p->plan.units[0].dtype == DType::BF16);
  CHECK(p->plan.units[0].layout[0].numel == 5);
  CHECK_FALSE(parse_plan_json(R"({"world_size": 2, "fsdp_version": 1, "sharding_strategy": "X",
      "units": [{"path": "", "numel": "five"}]})",
                              "p.json", error));
  CHECK(error == "p.json: $.units[0].numel: expected an integer from 0 to 4398046511104, found \"five\"");
  // Numbers that arithmetic on them could overflow, or that are not whole, are refused by path.
  const auto unit = [](const std::string& numel) {
    return R"({"world_size": 2, "fsdp_version": 1, "sharding_strategy": "X", "units": [{"path": "", "numel": )" +
           numel + "}]}";
  };
  CHECK_FALSE(parse_plan_json(unit("1e20"), "p.json", error));
  CHECK(error == "p.json: $.units[0].numel: expected an integer from 0 to 4398046511104, found 1e+20");
  CHECK_FALSE(parse_plan_json(unit("-1"), "p.json", error));
  CHECK(error.find("found -1") != std::string::npos);
  CHECK_FALSE(parse_plan_json(unit("4398046511105"), "p.json", error));  // 2^42 + 1
  CHECK_FALSE(parse_plan_json(unit("18446744073709551615"), "p.json", error));
  CHECK_FALSE(parse_plan_json(R"({"world_size": 2000000, "fsdp_version": 1, "sharding_strategy": "X", "units": []})",
                              "p.json", error));
  CHECK(error == "p.json: $.world_size: expected an integer from 1 to 1048576, found 2000000");
  CHECK_FALSE(parse_plan_json(R"({"world_size": 2, "fsdp_version": 1.5, "sharding_strategy": "X", "units": []})",
                              "p.json", error));
  CHECK(error == "p.json: $.fsdp_version: expected an integer from 1 to 2, found 1.5");
  CHECK_FALSE(parse_plan_json("{\"world_size\": ", "p.json", error));
  CHECK(error.rfind("p.json: not JSON at byte", 0) == 0);
}

TEST_CASE("smoke plan reader: a tensor-parallel plan's layout and every TP rank's units") {
  // Two TP ranks of one unit set: q cut by rows (3 + 2 of 5: transformers' ceil pieces), gate_up packed in 2
  // blocks (4 + 4 of 8).
  const auto plan = [](const std::string& ranks, const std::string& shapes) {
    return R"({"world_size": 4, "shard_group_size": 2, "fsdp_version": 2, "sharding_strategy": "FULL_SHARD",
      "units": [], "tensor_parallel": {"tp_size": 2, "ranks": )" +
           ranks + R"(, "unit_sets": [{"units": [{"path": "m", "numel": 15, "padded_numel": 16, "shard_numel": 8,
      "dtype": "F32", "params": ["q"], "param_numels": [15], "rank_pad": [0, 1],
      "param_shards": [{"param": "q", "rows_per_rank": 2, "row_numel": 4}]}]}],
      "params": [{"name": "q", "style": "colwise", "dim": 0, "local_shapes": )" +
           shapes + R"(}, {"name": "gate_up", "style": "packed_colwise", "dim": 0, "blocks": 2,
      "local_shapes": [[4, 3], [4, 3]]}]}})";
  };
  const std::string ranks = R"([{"tp_rank": 0, "unit_set": 0}, {"tp_rank": 1, "unit_set": 0}])";
  std::string error;
  auto p = parse_plan_json(plan(ranks, "[[3, 3], [2, 3]]"), "tp.json", error);
  REQUIRE_MESSAGE(p, error);
  CHECK(p->tensor_parallel);
  REQUIRE(p->plan.tensor_parallel);
  CHECK(p->plan.tensor_parallel->tp_size == 2);
  CHECK(p->plan.tensor_parallel->split == 2);
  CHECK(p->plan.tensor_parallel->params[0].shapes[1] == std::vector<std::int64_t>{2, 3});
  CHECK(p->plan.tensor_parallel->params[1].blocks == 2);
  CHECK(p->plan.tp_unit_set == std::vector<int>{0, 0});
  REQUIRE(p->plan.tp_unit_sets.size() == 1);
  CHECK(p->plan.tp_unit_sets[0][0].shards[0].rows_per_rank == 2);
  // TP rank 1's piece of q starts after rank 0's 3 rows; each rank holds 2 of gate_up's 4 rows a block.
  const auto pieces = tp_pieces(*p->plan.tensor_parallel, 1);
  CHECK(pieces.at("q").start == 3);
  CHECK(pieces.at("q").length == 2);
  CHECK(pieces.at("q").full_shape == std::vector<std::int64_t>{5, 3});
  CHECK(pieces.at("gate_up").start == 2);
  CHECK(pieces.at("gate_up").length == 2);
  // Refusals name the field.
  CHECK_FALSE(parse_plan_json(plan(ranks, "[[3, 3]]"), "tp.json", error));
  CHECK(error == "tp.json: $.tensor_parallel.params[0].local_shapes: expected one shape per TP rank (2)");
  CHECK_FALSE(parse_plan_json(
      plan(R"([{"tp_rank": 0, "unit_set": 0}, {"tp_rank": 1, "unit_set": 1}])", "[[3, 3], [2, 3]]"), "tp.json", error));
  CHECK(error == "tp.json: $.tensor_parallel.ranks[1].unit_set: expected an integer from 0 to 0, found 1");
  CHECK_FALSE(parse_plan_json(plan(R"([{"tp_rank": 0, "unit_set": 0}])", "[[3, 3], [2, 3]]"), "tp.json", error));
  CHECK(error == "tp.json: $.tensor_parallel.ranks: expected one entry per TP rank (2)");
}

TEST_CASE("smoke weights: a rank reads exactly its shard's bytes of the real fixture") {
  // The Llama fixture's embedding: 37 x 20 BF16 in model-00001-of-00002.safetensors. The expected
  // bytes come from parsing the file here, independently of the core loader.
  const std::string dir = SHARDCHECK_FIXTURES_DIR "/models/llama";
  const std::string file = dir + "/model-00001-of-00002.safetensors";
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  const auto header = nlohmann::json::parse(bytes.substr(8, n));
  REQUIRE(header.contains("model.embed_tokens.weight"));
  const std::uint64_t begin = header["model.embed_tokens.weight"]["data_offsets"][0];

  DiagnosticSink sink;
  auto meta = load_checkpoint(dir, sink);
  REQUIRE(meta);
  WeightReader reader(std::move(*meta), {{"lm_head.weight", "model.embed_tokens.weight"}});
  UnitLayout u;
  u.path = "(test)";
  u.dtype = DType::BF16;
  u.params = {"model.embed_tokens.weight"};
  u.param_numels = {740};
  std::string error;
  REQUIRE(reader.bind(u, error));
  RealBytes src = reader.source();
  std::vector<std::byte> got(2 * 100);
  src(0, 370, 100, got.data());  // elements 370..469
  CHECK(std::memcmp(got.data(), bytes.data() + 8 + n + begin + 2 * 370, 200) == 0);
  CHECK(reader.bytes_read() == 200);

  u.param_numels = {741};
  CHECK_FALSE(reader.bind(u, error));
  CHECK(error.find("is 740 x BF16 in model-00001-of-00002.safetensors, the plan expects 741 x BF16") !=
        std::string::npos);
  u.params = {"model.nope.weight"};
  CHECK_FALSE(reader.bind(u, error));
  CHECK(error.find("parameter 'model.nope.weight' is not in the checkpoint") != std::string::npos);

  // A checkpoint rename (disk "model.embed_tokens." is "model.tok." in the model) is undone.
  DiagnosticSink sink2;
  WeightReader renamed(*load_checkpoint(dir, sink2), {}, "", {{"model.embed_tokens.", "model.tok."}});
  u.params = {"model.tok.weight"};
  u.param_numels = {740};
  REQUIRE(renamed.bind(u, error));
  std::vector<std::byte> all(2 * 740);
  renamed.source()(0, 0, 740, all.data());
  CHECK(std::memcmp(all.data(), bytes.data() + 8 + n + begin, all.size()) == 0);
}

TEST_CASE("smoke weights: a 5.x fused expert parameter is the per-expert concatenation, stacked") {
  // transformers 5.x loads Mixtral's per-expert w1 [I, H] and w3 [I, H] into
  // mlp.experts.gate_up_proj [E, 2I, H]: MergeModulelist(dim=0) stacks each list over the experts,
  // Concatenate(dim=1) joins them, so expert j's block is w1_j then w3_j (conversion_mapping.py).
  // The fixture: 3 experts, I = 28, H = 20, BF16, one file; expected bytes parsed here, by name.
  const std::string dir = SHARDCHECK_FIXTURES_DIR "/models/mixtral";
  std::ifstream in(dir + "/model.safetensors", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  const auto header = nlohmann::json::parse(bytes.substr(8, n));
  std::string expected;
  for (int j = 0; j < 3; ++j)
    for (const char* w : {"w1", "w3"}) {
      const std::string name = "model.layers.0.block_sparse_moe.experts." + std::to_string(j) + "." + w + ".weight";
      REQUIRE(header.contains(name));
      const std::uint64_t begin = header[name]["data_offsets"][0], end = header[name]["data_offsets"][1];
      CHECK(end - begin == 28 * 20 * 2);
      expected += bytes.substr(8 + n + begin, end - begin);
    }

  DiagnosticSink sink;
  WeightReader reader(*load_checkpoint(dir, sink), {}, "model", {{".block_sparse_moe.", ".mlp."}},
                      {{"model.layers.0.mlp.experts.gate_up_proj", {"*.w1.weight", "*.w3.weight"}}});
  UnitLayout u;
  u.path = "(test)";
  u.dtype = DType::BF16;
  u.params = {"model.layers.0.mlp.experts.gate_up_proj"};
  u.param_numels = {3 * 2 * 28 * 20};
  std::string error;
  REQUIRE_MESSAGE(reader.bind(u, error), error);
  std::vector<std::byte> all(expected.size());
  reader.source()(0, 0, u.param_numels[0], all.data());
  CHECK(std::memcmp(all.data(), expected.data(), expected.size()) == 0);
  // A range across the w1/w3 boundary of expert 1: elements [1*1120 + 500, + 200).
  std::vector<std::byte> part(2 * 200);
  reader.source()(0, 1120 + 500, 200, part.data());
  CHECK(std::memcmp(part.data(), expected.data() + 2 * (1120 + 500), part.size()) == 0);

  u.param_numels = {3 * 2 * 28 * 20 + 1};
  CHECK_FALSE(reader.bind(u, error));
  CHECK(error.find("fuses 6 checkpoint tensors (*.w1.weight, *.w3.weight) with 3360 elements, the plan expects 3361") !=
        std::string::npos);
}
