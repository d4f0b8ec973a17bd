// run_rank() on W in-process ranks (smoke_fake_comm.hpp): counts summed over ranks as nccl-tests
// sums #wrong, the test-only shard shift caught with a hand-computed count, and the nccl-tests
// bandwidth arithmetic on the rows.
#include <doctest/doctest.h>

#include <thread>

#include "smoke/report.hpp"
#include "smoke/runner.hpp"
#include "smoke_fake_comm.hpp"

using namespace shardcheck;
using namespace shardcheck::smoke;

namespace {

std::vector<RunResult> run_all(int world, const RunOptions& opt) {
  testing::Exchange x(world);
  std::vector<RunResult> out(static_cast<std::size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      testing::FakeComm c(x, r);
      out[r] = run_rank(c, opt);
    });
  for (auto& t : threads) t.join();
  return out;
}

// a=[0,40), b=[40,65) over W=3: S=22, the last rank holds 21 real + 1 padding; over W=2: S=33.
UnitLayout unit65(DType d, int world = 3) {
  ShardUnit u;
  u.path = "layer";
  u.dtype = d;
  u.layout = {FlatSlot{"a", 0, 40, false}, FlatSlot{"b", 40, 25, false}};
  u.params = {"a", "b"};
  u.param_numels = {40, 25};
  u.numel = 65;
  u.shard_numel = (65 + world - 1) / world;
  u.padded_numel = u.shard_numel * world;
  std::string error;
  UnitLayout l = unit_layout(u, 3, 1, world, error);
  REQUIRE(error.empty());
  return l;
}

}  // namespace

TEST_CASE("smoke runner: three ranks verify a padded unit exactly (F32 and BF16)") {
  RunOptions opt;
  opt.units = {unit65(DType::F32), unit65(DType::BF16)};
  opt.units[1].index = 4;
  opt.time_units = false;
  auto res = run_all(3, opt);
  for (const auto& r : res) {
    REQUIRE(r.units.size() == 2);
    CHECK(r.wrong_total() == 0);
    CHECK(r.units[0].rs_ran);
    CHECK(r.units[0].pad == 1);
  }
}

TEST_CASE("smoke runner: a shard shifted by one element is caught on every rank") {
  RunOptions opt;
  opt.units = {unit65(DType::F32)};
  opt.shift_rank = 1;
  opt.time_units = false;
  auto res = run_all(3, opt);
  // Rank 1 sends elements [23,45) for positions [22,44): 22 real elements wrong, seen by each of
  // the 3 ranks: 66. The reduce-scatter does not use the shard and stays exact.
  CHECK(res[0].units[0].ag_wrong_real == 66);
  CHECK(res[0].units[0].ag_wrong_pad == 0);
  CHECK(res[0].units[0].rs_wrong_real == 0);
  RunHeader h;
  h.world = 3;
  const Verdict v = judge(h, res[0]);
  CHECK(v.exit_code == 20);
  CHECK(v.summary == "FAILED: 66 wrong elements in 1 of 1 units on 3 ranks");
}

TEST_CASE("smoke runner: sweep rows follow nccl-tests size/count/algbw/busbw") {
  RunOptions opt;
  opt.sweep = {1024, 4096};
  opt.units = {unit65(DType::F32, 2)};
  auto res = run_all(2, opt);
  const auto& rows = res[0].bandwidth;
  // 2 sweep sizes x 2 collectives + the unit size x 2.
  REQUIRE(rows.size() == 6);
  CHECK(rows[0].collective == Collective::all_gather);
  CHECK(rows[0].size == 1024);
  CHECK(rows[0].count == 128);  // 1024 B / (2 ranks x 4 B)
  CHECK(rows[0].wrong == 0);
  // The fake times every op at 2 ms: algbw = 1024 B / 0.002 s = 0.512 GB/s, busbw x (2-1)/2.
  CHECK(rows[0].seconds == doctest::Approx(0.002));
  CHECK(rows[0].algbw == doctest::Approx(0.000512));
  CHECK(rows[0].busbw == doctest::Approx(0.000256));
  CHECK(res[0].wrong_total() == 0);
  // The unit row: S = ceil(65/2) = 33 elements per rank, size 2 x 33 x 4 B.
  CHECK(rows[4].source == "layer");
  CHECK(rows[4].size == 2 * 33 * 4);
  RunHeader h;
  h.world = 2;
  h.expect_busbw = 1.0;  // 0.9 GB/s needed, far above a fake 2 ms per op
  CHECK(judge(h, res[0]).exit_code == 26);
}
