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

// `shard_size`: ranks per shard group (0: all); `drop_all_reduce`: the replicas never sum.
std::vector<RunResult> run_all(int world, const RunOptions& opt, int shard_size = 0, bool drop_all_reduce = false) {
  testing::Exchange x(world);
  std::vector<RunResult> out(static_cast<std::size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      testing::FakeComm c(x, r, shard_size);
      c.drop_all_reduce = drop_all_reduce;
      out[r] = run_rank(c, opt);
    });
  for (auto& t : threads) t.join();
  return out;
}

// a=[0,40), b=[40,65) over W=3: S=22, the last rank holds 21 real + 1 padding; over W=2: S=33.
UnitLayout unit65(DType d, int world = 3) {
  ShardUnit u;
  u.path = "layer";
  u.dtype = u.compute_dtype = u.reduce_dtype = d;
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

namespace {

// The 65-element unit sharded over `shard` ranks with `replicas` copies of that group.
RunOptions replicated65(DType d, int shard, int replicas) {
  RunOptions opt;
  UnitLayout l = unit65(d, shard);
  l.replicas = replicas;
  opt.units = {l};
  opt.time_units = false;
  return opt;
}

}  // namespace

TEST_CASE("smoke runner: HSDP, 2 replicas of 2-rank shard groups, and NO_SHARD") {
  // Ranks {0,1} and {2,3} each gather the unit over S=2 (S = ceil(65/2) = 33: rank 1 of a group
  // holds 32 real + 1 padding); each slice is then all-reduced with the same slice of the other group.
  const RunOptions opt = replicated65(DType::F32, 2, 2);
  auto res = run_all(4, opt, 2);
  for (const auto& r : res) {
    CHECK(r.wrong_total() == 0);
    CHECK(r.units[0].ar_ran);
  }
  // Without the all-reduce every real element of every slice holds only its own group's sum (grad
  // values are >= 1, so that is short): 33 + 32 real elements per group, 2 groups.
  auto broken = run_all(4, opt, 2, /*drop_all_reduce=*/true);
  CHECK(broken[0].units[0].rs_wrong_real == 130);
  CHECK(broken[0].units[0].rs_wrong_pad == 0);
  CHECK(broken[0].units[0].ag_wrong_real == 0);

  // NO_SHARD on 3 ranks: groups of one rank (the whole unit, no padding), gradients summed over all 3.
  auto ns = run_all(3, replicated65(DType::BF16, 1, 3), 1);
  CHECK(ns[0].units[0].shard_numel == 65);
  CHECK(ns[0].units[0].pad == 0);
  CHECK(ns[0].wrong_total() == 0);
  CHECK(ns[0].units[0].ar_ran);
}

TEST_CASE("smoke runner: HSDP bandwidth rows, all-reduce in nccl-tests' conventions") {
  RunOptions opt = replicated65(DType::F32, 2, 2);
  opt.sweep = {1024};
  opt.time_units = true;
  auto res = run_all(4, opt, 2);
  const auto& rows = res[0].bandwidth;
  // The sweep size: all-gather and reduce-scatter over 2 ranks, all-reduce over 2 replicas; then
  // the unit's three.
  REQUIRE(rows.size() == 6);
  CHECK(rows[0].collective == Collective::all_gather);
  CHECK(rows[0].count == 128);  // 1024 B / (2 ranks x 4 B)
  CHECK(rows[0].ranks == 2);
  CHECK(rows[2].collective == Collective::all_reduce);
  CHECK(rows[2].count == 256);  // the whole 1024 B buffer
  CHECK(rows[2].size == 1024);
  CHECK(rows[2].wrong == 0);
  // all-reduce busbw = algbw x 2(n-1)/n = algbw for n = 2: 1024 B / 2 ms = 0.000512 GB/s.
  CHECK(rows[2].algbw == doctest::Approx(0.000512));
  CHECK(rows[2].busbw == doctest::Approx(0.000512));
  CHECK(rows[5].collective == Collective::all_reduce);
  CHECK(rows[5].size == 33 * 4);  // the unit's gradient slice
  CHECK(res[0].wrong_total() == 0);
}
