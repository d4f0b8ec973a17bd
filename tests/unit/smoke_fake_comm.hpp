#pragma once
// An in-process Comm for the smoke runner's tests: W threads exchange buffers through shared
// memory, so run_rank() is tested without LibTorch. Sums F32 and BF16 (the fixtures' dtypes).
#include <barrier>
#include <bit>
#include <cstring>
#include <vector>

#include "smoke/comm.hpp"
#include "smoke/layout.hpp"

namespace shardcheck::smoke::testing {

struct Exchange {
  explicit Exchange(int w) : world(w), bar(w), posted(static_cast<std::size_t>(w)), vecs(static_cast<std::size_t>(w)) {}
  int world;
  std::barrier<> bar;
  std::vector<const std::byte*> posted;
  std::vector<std::vector<double>*> vecs;
};

// `shard_size` S: shard groups of S consecutive ranks, replica groups of the ranks S apart.
class FakeComm final : public Comm {
 public:
  FakeComm(Exchange& x, int rank, int shard_size = 0) : x_(x), rank_(rank), s_(shard_size > 0 ? shard_size : x.world) {}
  int rank() const override { return rank_; }
  int world() const override { return x_.world; }
  int shard_size() const override { return s_; }
  std::string backend() const override { return "loopback"; }
  std::string device() const override { return "cpu"; }
  void all_gather(DType d, const std::byte* in, std::int64_t count, std::byte* out) override {
    const std::size_t n = static_cast<std::size_t>(count * element_bytes(d));
    x_.posted[rank_] = in;
    x_.bar.arrive_and_wait();
    const int first = rank_ - shard_rank();
    for (int r = 0; r < s_; ++r) std::memcpy(out + r * n, x_.posted[first + r], n);
    x_.bar.arrive_and_wait();
  }
  void reduce_scatter_sum(DType d, const std::byte* in, std::int64_t count, std::byte* out) override {
    const int w = element_bytes(d);
    x_.posted[rank_] = in;
    x_.bar.arrive_and_wait();
    const int first = rank_ - shard_rank();
    for (std::int64_t i = 0; i < count; ++i) {
      float sum = 0;
      for (int r = 0; r < s_; ++r) sum += load(d, x_.posted[first + r] + (shard_rank() * count + i) * w);
      store(d, sum, out + i * w);
    }
    x_.bar.arrive_and_wait();
  }
  void all_reduce_replicas(DType d, std::byte* inout, std::int64_t count) override {
    if (drop_all_reduce) return;  // a broken backend, for the tests that must catch it
    const int w = element_bytes(d);
    x_.posted[rank_] = inout;
    x_.bar.arrive_and_wait();
    std::vector<std::byte> sum(static_cast<std::size_t>(count * w));
    for (std::int64_t i = 0; i < count; ++i) {
      float v = 0;
      for (int r = shard_rank(); r < x_.world; r += s_) v += load(d, x_.posted[r] + i * w);
      store(d, v, sum.data() + i * w);
    }
    x_.bar.arrive_and_wait();  // everyone has read every input before anyone overwrites its own
    std::memcpy(inout, sum.data(), sum.size());
    x_.bar.arrive_and_wait();
  }
  void all_reduce_sum(std::vector<double>& v) override {
    x_.vecs[rank_] = &v;
    x_.bar.arrive_and_wait();
    std::vector<double> sum(v.size(), 0.0);
    for (int r = 0; r < x_.world; ++r)
      for (std::size_t i = 0; i < v.size(); ++i) sum[i] += (*x_.vecs[r])[i];
    x_.bar.arrive_and_wait();
    v = sum;
    x_.bar.arrive_and_wait();
  }
  double time_collective(Collective, DType, std::int64_t, int, int) override { return 0.002; }
  std::string path(Collective c, DType) const override {
    return c == Collective::all_gather ? "memcpy" : c == Collective::all_reduce ? "replica sum" : "sum";
  }
  bool can_sum(DType d) const override { return d == DType::F32 || d == DType::BF16; }
  void set_phase(const std::string&) override {}
  std::string describe_laggards(const std::string&) override { return ""; }
  bool drop_all_reduce = false;

 private:
  static float load(DType d, const std::byte* p) {
    std::uint32_t bits = 0;
    if (d == DType::BF16) {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      bits = static_cast<std::uint32_t>(h) << 16;
    } else {
      std::memcpy(&bits, p, 4);
    }
    return std::bit_cast<float>(bits);
  }
  static void store(DType d, float v, std::byte* p) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(v);
    if (d == DType::BF16) {
      const std::uint16_t h = static_cast<std::uint16_t>(bits >> 16);
      std::memcpy(p, &h, 2);
    } else {
      std::memcpy(p, &bits, 4);
    }
  }
  Exchange& x_;
  int rank_;
  int s_;
};

}  // namespace shardcheck::smoke::testing
