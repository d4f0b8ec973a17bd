// Every global rank's place on the job's mesh, against accelerate's own: fixtures/oracle2/accelerate/
// mesh-ranks.json was written by scripts/oracle/mesh_ranks_probe.py, which builds accelerate 1.14's
// ParallelismConfig(...).build_device_mesh("cpu") as each rank (torch 2.14.1, fake process group) and
// records its coordinate and its index in the group FSDP2 shards over (dp_shard_cp).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "shardcheck/memory.hpp"
#include "test_files.hpp"

using namespace shardcheck;
using nlohmann::json;

TEST_CASE("mesh_ranks places every global rank where accelerate's device mesh does") {
  const json rec =
      test::read_json(std::filesystem::path(SHARDCHECK_FIXTURES_DIR) / "oracle2" / "accelerate" / "mesh-ranks.json");
  int cases = 0;
  for (const json& c : rec.at("cases")) {
    FsdpSettings s;
    s.fsdp_version.value = 2;
    s.world_size.value = c.at("world_size").get<int>();
    const json& sizes = c.at("sizes");
    s.dp_replicate.value = sizes.value("dp_replicate_size", 1);
    s.cp_size.value = sizes.value("cp_size", 1);
    s.tp_size.value = sizes.value("tp_size", 1);
    CAPTURE(sizes.dump());
    const std::vector<GlobalRank> ranks = mesh_ranks(s);
    REQUIRE(ranks.size() == c.at("ranks").size());
    for (const json& r : c.at("ranks")) {
      const auto g = r.at("rank").get<std::size_t>();
      CAPTURE(g);
      CHECK(ranks[g].rank == static_cast<int>(g));
      CHECK(ranks[g].shard_rank == r.at("fsdp_index").get<int>());
      CHECK(ranks[g].replica == r.value("dp_replicate", 0));
      CHECK(ranks[g].cp_rank == r.value("cp", 0));
      CHECK(ranks[g].tp_rank == r.value("tp", 0));
    }
    ++cases;
  }
  CHECK(cases == 6);
}

TEST_CASE("mesh_ranks: FSDP1's hybrid strategies shard within each node and replicate across nodes") {
  // torch 2.14.1 distributed/fsdp/_init_utils.py _init_intra_and_inter_node_groups: the intra-node
  // (shard) group of a rank is the node's local_world_size consecutive ranks; the inter-node
  // (replicate) group takes the same local rank of every node.
  FsdpSettings s;
  s.fsdp_version.value = 1;
  s.world_size.value = 8;
  s.num_machines.value = 2;
  s.sharding_strategy.value = ShardingStrategy::hybrid_shard;
  const std::vector<GlobalRank> ranks = mesh_ranks(s);
  REQUIRE(ranks.size() == 8);
  CHECK(ranks[5].shard_rank == 1);
  CHECK(ranks[5].replica == 1);
  CHECK(ranks[3].shard_rank == 3);
  CHECK(ranks[3].replica == 0);
  s.sharding_strategy.value = ShardingStrategy::full_shard;
  CHECK(mesh_ranks(s)[5].shard_rank == 5);
  CHECK(mesh_ranks(s)[5].replica == 0);
}
