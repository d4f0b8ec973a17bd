#pragma once
// The collectives the smoke runner needs, behind an interface so that everything but the c10d calls
// (patterns, verification, timing, reports, launching) builds and is tested without LibTorch. The
// only implementation over real process groups is src/smoke/c10d/c10d_comm.cpp.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "shardcheck/dtype.hpp"
#include "shardcheck/exit_codes.hpp"

namespace shardcheck::smoke {

// A run that cannot go on: the cause, as a sentence naming ranks, and its exit code (20-29).
struct SmokeFault : std::runtime_error {
  ExitCode code;
  SmokeFault(ExitCode c, const std::string& message) : std::runtime_error(message), code(c) {}
};

enum class Collective { all_gather, reduce_scatter, all_reduce };

// Ranks form shard groups of S consecutive ranks and replica groups of the ranks with the same
// position in their shard group ({j, j+S, j+2S, ...}), as FSDP1's HYBRID_SHARD builds them
// (torch/distributed/fsdp/_init_utils.py _init_intra_and_inter_node_groups) and FSDP2's 2-D mesh
// arange(W).view(R, S) does (DeviceMesh, shard dim last). S = W is plain sharding (one replica);
// S = 1 is NO_SHARD (every rank its own "shard group", gradients all-reduced across all ranks).
// With tensor parallelism (T > 1) the mesh is arange(W).view(R, S, T), tp innermost as accelerate's
// ParallelismConfig orders it: a shard group holds the ranks of one TP rank (stride T), and the FSDP
// collectives never cross TP ranks.
class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  virtual int shard_size() const { return world(); }
  virtual int tp_size() const { return 1; }
  int tp_rank() const { return rank() % tp_size(); }
  // This rank among the data-parallel ranks of its TP rank (0 .. S*R-1).
  int dp_rank() const { return rank() / tp_size(); }
  int shard_rank() const { return dp_rank() % shard_size(); }
  int replicas() const { return world() / (shard_size() * tp_size()); }
  virtual std::string backend() const = 0;  // "gloo", "nccl", "loopback"
  virtual std::string device() const = 0;   // "cpu", "cuda:0"
  // Blocking, within this rank's shard group. `in` holds `count` elements of d; `out` receives
  // shard_size()*count, rank-major.
  virtual void all_gather(DType d, const std::byte* in, std::int64_t count, std::byte* out) = 0;
  // Blocking sum within the shard group. `in` holds shard_size()*count elements; `out` receives
  // this rank's `count`.
  virtual void reduce_scatter_sum(DType d, const std::byte* in, std::int64_t count, std::byte* out) = 0;
  // Blocking sum of `count` elements across this rank's replica group, in place (HSDP's gradient
  // all-reduce after the reduce-scatter); nothing to do with one replica.
  virtual void all_reduce_replicas(DType d, std::byte* inout, std::int64_t count) = 0;
  // Sums small vectors of counts and timings across ranks (f64: exact for counts below 2^53).
  virtual void all_reduce_sum(std::vector<double>& values) = 0;
  // Mean seconds per operation on this rank: `warmup` untimed, then `iters` timed back to back on
  // buffers that stay where the backend keeps them (device memory for NCCL). All-gather and
  // reduce-scatter run in the shard group (`count` per rank), all-reduce across the replicas
  // (`count` elements in all).
  virtual double time_collective(Collective c, DType d, std::int64_t count, int warmup, int iters) = 0;
  // Which implementation ran, in words (e.g. "allgather into 4 tensors; BF16 carried as bytes").
  virtual std::string path(Collective c, DType d) const = 0;
  // Whether reduce-scatter can sum d exactly on this backend (possibly in a wider type).
  virtual bool can_sum(DType d) const = 0;
  // Progress marker other ranks read when a collective fails ("unit 3 all_gather").
  virtual void set_phase(const std::string& phase) = 0;
  // After a failure: which ranks did not reach `phase` and what they last reported, if known.
  virtual std::string describe_laggards(const std::string& phase) = 0;
};

struct RendezvousSpec {
  int rank = 0, world = 1, local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int shard_size = 0;  // S ranks per shard group (0: the whole world); S * tp must divide world
  int tp = 1;          // T tensor-parallel ranks, innermost on the mesh
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  bool cuda = false;  // NCCL on cuda:LOCAL_RANK (only in a CUDA build)
};

// Joins the job: TCPStore rendezvous (rank 0 serves), every rank accounted for, then the process
// group. Throws SmokeFault naming missing ranks, mismatched world sizes, a taken port or an
// unreachable master. Defined in the torch translation unit.
std::unique_ptr<Comm> connect_c10d(const RendezvousSpec& spec);
// Whether this binary was built with ProcessGroupNCCL (a CUDA LibTorch).
bool c10d_has_nccl();
std::string c10d_torch_version();

}  // namespace shardcheck::smoke
