// Smoke layouts against hand arithmetic from the torch sources (shared research fsdp-semantics.md
// §2.4 alignment/world-size padding, §2.5 FlatParamHandle._get_shard, §5.2 _chunk_with_empty).
#include <doctest/doctest.h>

#include "smoke/layout.hpp"

using namespace shardcheck;
using namespace shardcheck::smoke;

namespace {

ShardUnit fsdp1_unit(std::vector<std::pair<std::string, std::int64_t>> slots, int world) {
  ShardUnit u;
  u.path = "layer";
  std::int64_t off = 0;
  for (auto& [name, n] : slots) {
    u.layout.push_back(FlatSlot{name, off, n, name.empty()});
    if (!name.empty()) {
      u.params.push_back(name);
      u.param_numels.push_back(n);
      u.numel += n;
    }
    off += n;
  }
  u.shard_numel = (off + world - 1) / world;
  u.padded_numel = u.shard_numel * world;
  return u;
}

void check(const Segment& s, std::int64_t offset, std::int64_t numel, int param, std::int64_t param_offset) {
  CHECK(s.offset == offset);
  CHECK(s.numel == numel);
  CHECK(s.param == param);
  CHECK(s.param_offset == param_offset);
}

}  // namespace

TEST_CASE("smoke layout: FSDP1 without padding slots, N=65 W=3 -> S=22, pads (0,0,1)") {
  // 1.13 / use_orig_params=False: a=[0,40), b=[40,65); shard = ceil(65/3) = 22.
  ShardUnit u = fsdp1_unit({{"a", 40}, {"b", 25}}, 3);
  std::string error;
  UnitLayout l = unit_layout(u, 0, 1, 3, error);
  REQUIRE(error.empty());
  CHECK(l.shard_numel == 22);
  CHECK(l.padded_numel == 66);
  CHECK(l.pad_elements() == 1);
  REQUIRE(l.ranks[0].size() == 1);
  check(l.ranks[0][0], 0, 22, 0, 0);
  REQUIRE(l.ranks[1].size() == 2);  // [22,44): a[22..40) then b[0..4)
  check(l.ranks[1][0], 22, 18, 0, 22);
  check(l.ranks[1][1], 40, 4, 1, 0);
  REQUIRE(l.ranks[2].size() == 2);  // [44,66): b[4..25) then one element of F.pad
  check(l.ranks[2][0], 44, 21, 1, 4);
  check(l.ranks[2][1], 65, 1, -1, 0);
}

TEST_CASE("smoke layout: FSDP1 alignment + world-size padding, numels 75,15,75,5 fp32 W=4") {
  // §2.4 worked example: [75,+1,15,+1,75,+1,5,+3] -> N=176, S=44.
  ShardUnit u = fsdp1_unit({{"p0", 75}, {"", 1}, {"p1", 15}, {"", 1}, {"p2", 75}, {"", 1}, {"p3", 5}, {"", 3}}, 4);
  std::string error;
  UnitLayout l = unit_layout(u, 0, 1, 4, error);
  REQUIRE(error.empty());
  CHECK(l.shard_numel == 44);
  CHECK(l.real_elements() == 170);
  CHECK(l.pad_elements() == 6);
  REQUIRE(l.ranks[1].size() == 3);  // [44,88): p0[44..75), pad at 75, p1[0..12)
  check(l.ranks[1][0], 44, 31, 0, 44);
  check(l.ranks[1][1], 75, 1, -1, 0);
  check(l.ranks[1][2], 76, 12, 1, 0);
  REQUIRE(l.ranks[3].size() == 4);  // [132,176): p2[40..75), pad, p3, 3 pads
  check(l.ranks[3][0], 132, 35, 2, 40);
  check(l.ranks[3][1], 167, 1, -1, 0);
  check(l.ranks[3][2], 168, 5, 3, 0);
  check(l.ranks[3][3], 173, 3, -1, 0);
}

TEST_CASE("smoke layout: FSDP2 per-parameter dim-0 chunks, d0=10 and d0=6 over W=4") {
  // pad0 = ceil(10/4) = 3 rows of 3 (rows 3,3,3,1); pad0 = ceil(6/4) = 2 rows of 2 (rows 2,2,2,0).
  // Every rank's all-gather input: 3*3 + 2*2 = 13 elements; the output 52.
  ShardUnit u;
  u.path = "group";
  u.params = {"w", "v"};
  u.param_numels = {30, 12};
  u.shards = {ParamShard{"w", {10, 3}, 3, 3}, ParamShard{"v", {6, 2}, 2, 2}};
  u.numel = 42;
  u.shard_numel = 13;
  u.padded_numel = 52;
  std::string error;
  UnitLayout l = unit_layout(u, 0, 2, 4, error);
  REQUIRE(error.empty());
  CHECK(l.pad_elements() == 10);
  REQUIRE(l.ranks[1].size() == 2);  // block [13,26): w rows 3..5 then v rows 2..3
  check(l.ranks[1][0], 13, 9, 0, 9);
  check(l.ranks[1][1], 22, 4, 1, 4);
  REQUIRE(l.ranks[3].size() == 3);  // block [39,52): w row 9, 2 empty w rows, 2 empty v rows
  check(l.ranks[3][0], 39, 3, 0, 27);
  check(l.ranks[3][1], 42, 6, -1, 0);
  check(l.ranks[3][2], 48, 4, -1, 0);
}

TEST_CASE("smoke layout: inconsistent units are reported, not laid out") {
  ShardUnit u = fsdp1_unit({{"a", 10}}, 2);
  u.padded_numel = 12;  // not 2 x 5
  std::string error;
  unit_layout(u, 0, 1, 2, error);
  CHECK(error.find("padded_numel 12 is not world size 2 x shard_numel 5") != std::string::npos);
}

TEST_CASE("smoke layout: --units picks the K largest plus evenly spread others, in plan order") {
  // Unit 0 has no parameters and is never picked; the largest two are 3 (300) and 4 (200); the rest
  // in plan order are 1, 2, 5, 6 and a sample of 2 takes positions 0 and 2 of them: units 1 and 5.
  const std::vector<std::int64_t> bytes{0, 100, 50, 300, 200, 10, 20};
  CHECK(select_units(bytes, 2, 2) == std::vector<int>{1, 3, 4, 5});
  CHECK(select_units(bytes, -1, 0) == std::vector<int>{1, 2, 3, 4, 5, 6});
  CHECK(select_units(bytes, 1, 0) == std::vector<int>{3});
  CHECK(select_units(bytes, 10, 2) == std::vector<int>{1, 2, 3, 4, 5, 6});
}

TEST_CASE("smoke layout: element sizes") {
  CHECK(element_bytes(DType::BF16) == 2);
  CHECK(element_bytes(DType::F32) == 4);
  CHECK(element_bytes(DType::F8_E4M3) == 1);
  CHECK(element_bytes(DType::F4) == 0);
}
