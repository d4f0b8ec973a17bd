// The only translation unit that includes LibTorch: rendezvous through a c10d TCPStore and the
// collectives on ProcessGroupGloo (CPU) or ProcessGroupNCCL (CUDA builds, SHARDCHECK_SMOKE_NCCL).
// Everything else of the smoke runner is plain C++ behind smoke::Comm.
//
// Release differences handled at run time, not by version checks: ProcessGroupGloo in LibTorch
// 1.13 throws "no support for _allgather_base" and "does not support reduce_scatter" and has no
// BFloat16 (torch/csrc/distributed/c10d/ProcessGroupGloo.cpp, v1.13.1); every such refusal happens
// before any byte is sent, identically on every rank, so falling back to the next path is safe.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <thread>
#include <tuple>

#ifdef SHARDCHECK_SMOKE_NCCL
#include <cuda_runtime_api.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "smoke/comm.hpp"
#include "smoke/bandwidth.hpp"
#include "smoke/pattern.hpp"

namespace shardcheck::smoke {
namespace {

using clock_type = std::chrono::steady_clock;

std::optional<at::ScalarType> scalar_type(DType d) {
  switch (d) {
    case DType::F32:
      return at::kFloat;
    case DType::F64:
      return at::kDouble;
    case DType::F16:
      return at::kHalf;
    case DType::BF16:
      return at::kBFloat16;
    case DType::I8:
      return at::kChar;
    case DType::U8:
      return at::kByte;
    case DType::I16:
      return at::kShort;
    case DType::I32:
      return at::kInt;
    case DType::I64:
      return at::kLong;
    default:
      return std::nullopt;
  }
}

std::string first_line(const char* what) {
  std::string s = what;
  if (auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  return s;
}

// A c10::Error a backend raises before communicating when it lacks an operation or a dtype.
bool is_refusal(const std::exception& e) {
  const std::string s = e.what();
  return s.find("no support for") != std::string::npos || s.find("does not support") != std::string::npos ||
         s.find("Invalid scalar type") != std::string::npos || s.find("Unsupported") != std::string::npos;
}

// A process group and this rank's place in it. `pg` is null for a group of one rank inside a larger
// job (NO_SHARD's shard groups, plain sharding's replica groups); a job of one rank keeps its world
// group so that its collectives still run through the backend.
template <class PG>
struct Group {
  c10::intrusive_ptr<PG> pg;
  int rank = 0, size = 1;
};

template <class PG>
class C10dComm final : public Comm {
 public:
  // `shard` and `replica`: this rank's shard and replica groups (see Comm); either may be the world.
  C10dComm(c10::intrusive_ptr<c10d::Store> store, Group<PG> world, Group<PG> shard, Group<PG> replica,
           const RendezvousSpec& spec, std::string backend, at::Device device)
      : store_(std::move(store)),
        pg_(world.pg),
        world_(std::move(world)),
        shard_(std::move(shard)),
        replica_(std::move(replica)),
        spec_(spec),
        backend_(std::move(backend)),
        device_(device) {}

  int rank() const override { return spec_.rank; }
  int world() const override { return spec_.world; }
  int shard_size() const override { return shard_.size; }
  int tp_size() const override { return std::max(1, spec_.tp); }
  std::string backend() const override { return backend_; }
  std::string device() const override { return device_.str(); }

  void all_gather(DType d, const std::byte* in, std::int64_t count, std::byte* out) override {
    if (!shard_.pg) {  // NO_SHARD: the rank already holds the whole parameter
      std::memcpy(out, in, static_cast<std::size_t>(count * element_bytes(d)));
      return;
    }
    const at::ScalarType t = transport(d);
    at::Tensor src = to_device(in, count, d);
    if (src.scalar_type() != t) src = as_bytes(src);
    at::Tensor dst = empty(shard_.size * src.numel(), t);
    guarded("all_gather", [&] { gather_into(shard_, dst, src); });
    from_device(dst, out);
  }

  void reduce_scatter_sum(DType d, const std::byte* in, std::int64_t count, std::byte* out) override {
    if (!shard_.pg) {  // NO_SHARD: the whole gradient is this rank's "slice"
      std::memcpy(out, in, static_cast<std::size_t>(count * element_bytes(d)));
      return;
    }
    at::Tensor src = to_device(in, shard_.size * count, d), dst = empty(count, *scalar_type(d));
    guarded("reduce_scatter", [&] { scatter_into(shard_, dst, src); });
    from_device(dst, out);
  }

  void all_reduce_replicas(DType d, std::byte* inout, std::int64_t count) override {
    if (!replica_.pg) return;
    at::Tensor t = to_device(inout, count, d);
    guarded("all_reduce", [&] { t = reduce_across(replica_, t); });
    from_device(t.to(*scalar_type(d)), inout);
  }

  void all_reduce_sum(std::vector<double>& values) override {
    if (values.empty()) return;
    at::Tensor t = at::from_blob(values.data(), {static_cast<std::int64_t>(values.size())}, at::kDouble).to(device_);
    guarded("all_reduce of counts", [&] {
      std::vector<at::Tensor> ts{t};
      pg_->allreduce(ts)->wait();
    });
    at::Tensor host = t.cpu();
    std::memcpy(values.data(), host.data_ptr(), values.size() * sizeof(double));
  }

  double time_collective(Collective c, DType d, std::int64_t count, int warmup, int iters) override {
    const int W = shard_.size;
    at::Tensor small, big;
    if (c == Collective::all_reduce) {
      small = empty(count, *scalar_type(d)).zero_();
    } else if (c == Collective::all_gather) {
      const at::ScalarType t = transport(d);
      const std::int64_t n = t == at::kByte ? count * element_bytes(d) : count;
      small = empty(n, t);
      big = empty(W * n, t);
    } else {
      small = empty(count, *scalar_type(d));
      big = empty(W * count, *scalar_type(d)).zero_();
    }
    auto once = [&] {
      if (c == Collective::all_reduce)
        (void)reduce_across(replica_, small);
      else if (c == Collective::all_gather)
        gather_into(shard_, big, small);
      else
        scatter_into(shard_, small, big);
    };
    double seconds = 0;
    guarded(collective_name(c), [&] {
      for (int i = 0; i < warmup; ++i) once();
      sync();
      const auto t0 = clock_type::now();
      for (int i = 0; i < iters; ++i) once();
      sync();
      seconds = std::chrono::duration<double>(clock_type::now() - t0).count() / std::max(1, iters);
    });
    return seconds;
  }

  std::string path(Collective c, DType d) const override {
    const auto name = std::string(dtype_name(d));
    if (c == Collective::all_reduce) {
      std::string p = fmt::format("allreduce (sum) across {} replicas", replica_.size);
      if (sum_as_f32_.count(d) && sum_as_f32_.at(d))
        p += fmt::format("; {} summed as F32 ({} cannot sum {})", name, backend_, name);
      return p;
    }
    if (!shard_.pg)
      return c == Collective::all_gather ? "none: a shard group of one rank holds the whole parameter"
                                         : "none: a shard group of one rank keeps its whole gradient";
    if (c == Collective::all_gather) {
      std::string p = ag_base_ == false
                          ? fmt::format("allgather into {} tensors ({} has no _allgather_base)", shard_.size, who())
                          : "_allgather_base into one flat buffer";
      if (bytes_for_.count(d) && bytes_for_.at(d))
        p += fmt::format("; {} carried as bytes ({} has no {})", name, backend_, name);
      return p;
    }
    std::string p = rs_mode_ == 0   ? "_reduce_scatter_base (sum)"
                    : rs_mode_ == 1 ? "reduce_scatter of a tensor list (sum)"
                                    : fmt::format(
                                          "allreduce (sum) then each rank keeps its slice ({} has neither "
                                          "_reduce_scatter_base nor reduce_scatter)",
                                          who());
    if (sum_as_f32_.count(d) && sum_as_f32_.at(d))
      p += fmt::format("; {} summed as F32 ({} cannot sum {})", name, backend_, name);
    return p;
  }

  bool can_sum(DType d) const override { return scalar_type(d).has_value() && exact_integer_limit(d) > 0; }

  void set_phase(const std::string& phase) override {
    phase_ = phase;
    try {
      store_->set(fmt::format("shardcheck/phase/{}", spec_.rank), std::vector<uint8_t>(phase.begin(), phase.end()));
    } catch (const std::exception&) {
      // The store lives in rank 0; if it is gone the next collective reports that.
    }
  }

  std::string describe_laggards(const std::string& phase) override {
    std::vector<std::string> behind;
    try {
      store_->setTimeout(std::chrono::seconds(2));
      for (int r = 0; r < spec_.world; ++r) {
        const std::string key = fmt::format("shardcheck/phase/{}", r);
        std::string seen = "(never reported)";
        if (store_->check({key})) {
          auto v = store_->get(key);
          seen = std::string(v.begin(), v.end());
        }
        if (seen != phase) behind.push_back(fmt::format("rank {} last at '{}'", r, seen));
      }
    } catch (const std::exception&) {
      return fmt::format("the store on rank 0 ({}:{}) no longer answers: rank 0 is gone", spec_.master_addr,
                         spec_.master_port);
    }
    if (behind.empty()) return "every rank reached this step";
    std::string out = "ranks not at this step: ";
    for (std::size_t i = 0; i < behind.size(); ++i) out += (i ? ", " : "") + behind[i];
    return out;
  }

 private:
  std::string who() const { return fmt::format("{} of LibTorch {}", backend_, TORCH_VERSION); }

  // The tensor type an all-gather moves d in: d itself if the backend takes it, else raw bytes.
  at::ScalarType transport(DType d) {
    auto st = scalar_type(d);
    if (!st) return at::kByte;
    auto it = bytes_for_.find(d);
    if (it == bytes_for_.end()) {
      // Probe once per dtype with a one-element all-gather; a refusal comes before any traffic.
      at::Tensor one = empty(1, *st).zero_(), all = empty(spec_.world, *st);
      bool refused = false;
      guarded("all_gather dtype probe", [&] {
        try {
          gather_into(world_, all, one);
        } catch (const std::exception& e) {
          if (!is_refusal(e)) throw;
          refused = true;
        }
      });
      it = bytes_for_.emplace(d, refused).first;
    }
    return it->second ? at::kByte : *st;
  }

  at::Tensor empty(std::int64_t n, at::ScalarType st) {
    return at::empty({n}, at::TensorOptions().dtype(st).device(device_));
  }

  // Host bytes of `count` elements of d as a device tensor of d (or bytes if d has no torch type).
  at::Tensor to_device(const std::byte* p, std::int64_t count, DType d) {
    auto st = scalar_type(d);
    const std::int64_t n = st ? count : count * element_bytes(d);
    at::Tensor host = at::from_blob(const_cast<std::byte*>(p), {n}, st ? *st : at::kByte);
    return host.to(device_, /*non_blocking=*/false, /*copy=*/true);
  }

  void from_device(const at::Tensor& t, std::byte* out) {
    at::Tensor host = t.cpu().contiguous();
    std::memcpy(out, host.data_ptr(), static_cast<std::size_t>(host.numel() * host.element_size()));
  }

  void sync() {
#ifdef SHARDCHECK_SMOKE_NCCL
    if (device_.is_cuda()) cudaDeviceSynchronize();
#endif
  }

  // dst: W*count elements; src: count elements; both of dst's type, or src reinterpreted as bytes.
  void gather_into(Group<PG>& g, at::Tensor& dst, at::Tensor& src) {
    at::Tensor in = src.scalar_type() == dst.scalar_type() ? src : as_bytes(src);
    if (ag_base_ != false) {
      try {
        g.pg->_allgather_base(dst, in)->wait();
        ag_base_ = true;
        return;
      } catch (const std::exception& e) {
        if (ag_base_ == true || !is_refusal(e)) throw;
        ag_base_ = false;
      }
    }
    const std::int64_t n = in.numel();
    std::vector<std::vector<at::Tensor>> outs(1);
    for (int r = 0; r < g.size; ++r) outs[0].push_back(dst.narrow(0, r * n, n));
    std::vector<at::Tensor> ins{in};
    g.pg->allgather(outs, ins)->wait();
  }

  at::Tensor as_bytes(const at::Tensor& t) {
    // A contiguous tensor's storage as uint8 (the transport for dtypes the backend lacks).
    at::Tensor c = t.contiguous();
    return at::from_blob(
        c.data_ptr(), {c.numel() * static_cast<std::int64_t>(c.element_size())}, [keep = c](void*) {},
        at::TensorOptions().dtype(at::kByte).device(c.device()));
  }

  // dst: count elements; src: W*count elements (summed over ranks, dst = this rank's slice).
  void scatter_into(Group<PG>& g, at::Tensor& dst, at::Tensor& src) {
    const std::int64_t n = dst.numel();
    if (rs_mode_ <= 0) {
      try {
        g.pg->_reduce_scatter_base(dst, src)->wait();
        rs_mode_ = 0;
        return;
      } catch (const std::exception& e) {
        if (rs_mode_ == 0 || !is_refusal(e)) throw;
        rs_mode_ = 1;
      }
    }
    if (rs_mode_ == 1 && !rs_list_refused_) {
      try {
        std::vector<at::Tensor> outs{dst};
        std::vector<std::vector<at::Tensor>> ins(1);
        for (int r = 0; r < g.size; ++r) ins[0].push_back(src.narrow(0, r * n, n));
        g.pg->reduce_scatter(outs, ins)->wait();
        return;
      } catch (const std::exception& e) {
        if (!is_refusal(e)) throw;
        rs_list_refused_ = true;
        rs_mode_ = 2;
      }
    }
    // allreduce + slice: every rank receives the whole sum and keeps its own chunk.
    at::Tensor sum = reduce_across(g, src);
    dst.copy_(sum.narrow(0, g.rank * n, n));
  }

  // The sum of `src` over the group (a new tensor; float32 where the backend cannot sum the dtype,
  // e.g. BFloat16 in gloo 1.13, as FSDP does with reduce_dtype=float32).
  at::Tensor reduce_across(Group<PG>& g, const at::Tensor& src) {
    const DType d = dtype_of(src.scalar_type());
    bool& wide = sum_as_f32_[d];
    at::Tensor sum = wide ? src.to(at::kFloat) : src.clone();
    try {
      std::vector<at::Tensor> ts{sum};
      g.pg->allreduce(ts)->wait();
    } catch (const std::exception& e) {
      if (wide || !is_refusal(e)) throw;
      wide = true;
      sum = src.to(at::kFloat);
      std::vector<at::Tensor> ts{sum};
      g.pg->allreduce(ts)->wait();
    }
    return sum;
  }

  static DType dtype_of(at::ScalarType st) {
    for (DType d :
         {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8, DType::U8, DType::I16, DType::I32, DType::I64})
      if (scalar_type(d) == st) return d;
    return DType::U8;
  }

  // Runs a collective; a failure that is not a refusal means a peer is gone or too slow.
  template <class F>
  void guarded(const char* what, F&& f) {
    const auto t0 = clock_type::now();
    try {
      f();
    } catch (const SmokeFault&) {
      throw;
    } catch (const std::exception& e) {
      if (is_refusal(e)) throw;
      const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
      throw SmokeFault(ExitCode::smoke_rank_lost,
                       fmt::format("{} at step '{}' failed on rank {} after {:.1f} s: {}; {}", what, phase_, spec_.rank,
                                   s, first_line(e.what()), describe_laggards(phase_)));
    }
  }

  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<PG> pg_;  // the world: counts, dtype probes
  Group<PG> world_, shard_, replica_;
  RendezvousSpec spec_;
  std::string backend_;
  at::Device device_;
  std::string phase_ = "start";
  std::optional<bool> ag_base_;
  int rs_mode_ = -1;  // -1 untried, 0 _reduce_scatter_base, 1 list, 2 allreduce+slice
  bool rs_list_refused_ = false;
  std::map<DType, bool> bytes_for_;   // dtype -> all-gathered as bytes
  std::map<DType, bool> sum_as_f32_;  // dtype -> summed in float32
};

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
std::string string_of(const std::vector<uint8_t>& v) { return {v.begin(), v.end()}; }

std::string joined_list(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

c10::intrusive_ptr<c10d::TCPStore> open_store(const RendezvousSpec& spec) {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(spec.master_port);
  opts.isServer = spec.rank == 0;
  opts.waitWorkers = false;  // we wait ourselves, to name the ranks that are missing
  opts.timeout = spec.timeout;
  const std::string where = fmt::format("{}:{}", spec.master_addr, spec.master_port);
  try {
    return c10::make_intrusive<c10d::TCPStore>(spec.master_addr, opts);
  } catch (const std::exception& e) {
    const std::string why = first_line(e.what());
    if (spec.rank == 0 && (why.find("in use") != std::string::npos || why.find("EADDRINUSE") != std::string::npos))
      throw SmokeFault(ExitCode::smoke_port_in_use,
                       fmt::format("rank 0 cannot listen on {}: the port is in use (another job, or a rank of an "
                                   "earlier run); set MASTER_PORT to a free port: {}",
                                   where, why));
    if (spec.rank == 0)
      throw SmokeFault(ExitCode::smoke_master_unreachable,
                       fmt::format("rank 0 cannot serve the rendezvous on {}: {}", where, why));
    throw SmokeFault(ExitCode::smoke_master_unreachable,
                     fmt::format("rank {} cannot reach the master at {} within {} s: {}; is rank 0 running and "
                                 "MASTER_ADDR/MASTER_PORT the same on every rank?",
                                 spec.rank, where, spec.timeout.count() / 1000.0, why));
  }
}

std::string who_joined(const std::string& value);

// Every rank registers "world|host|pid"; rank 0 waits for all of them (naming those missing at the
// deadline), checks they agree on WORLD_SIZE, then releases everyone or tells them why not.
void rendezvous(c10d::TCPStore& store, const RendezvousSpec& spec) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  store.set(fmt::format("shardcheck/join/{}", spec.rank),
            bytes_of(fmt::format("{}|{}|{}", spec.world, host, ::getpid())));
  store.add("shardcheck/joined", 1);
  const auto deadline = clock_type::now() + spec.timeout;
  const auto tick = std::chrono::milliseconds(50);
  if (spec.rank != 0) {
    const auto late = deadline + std::chrono::seconds(2);  // rank 0 names the missing ranks first
    for (;;) {
      try {
        if (store.check({"shardcheck/abort"})) {
          const std::string v = string_of(store.get("shardcheck/abort"));
          const auto bar = v.find('|');
          store.add("shardcheck/abort_seen", 1);
          throw SmokeFault(static_cast<ExitCode>(std::stoi(v.substr(0, bar))), v.substr(bar + 1));
        }
        if (store.check({"shardcheck/go"})) return;
      } catch (const SmokeFault&) {
        throw;
      } catch (const std::exception& e) {
        throw SmokeFault(ExitCode::smoke_rank_lost,
                         fmt::format("rank {} lost the master ({}:{}) during the rendezvous: rank 0 is gone ({})",
                                     spec.rank, spec.master_addr, spec.master_port, first_line(e.what())));
      }
      if (clock_type::now() > late)
        throw SmokeFault(ExitCode::smoke_join_timeout, fmt::format("rank {}: rank 0 did not start the run within {} s",
                                                                   spec.rank, spec.timeout.count() / 1000.0));
      std::this_thread::sleep_for(tick);
    }
  }
  auto abort = [&](ExitCode code, const std::string& msg) {
    store.set("shardcheck/abort", bytes_of(fmt::format("{}|{}", to_int(code), msg)));
    // The store lives in this process: stay until the other joined ranks have read why (<= 2 s).
    const std::int64_t others = store.add("shardcheck/joined", 0) - 1;
    const auto until = clock_type::now() + std::chrono::seconds(2);
    while (store.add("shardcheck/abort_seen", 0) < others && clock_type::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    throw SmokeFault(code, msg);
  };
  std::vector<std::string> seen(static_cast<std::size_t>(spec.world));
  for (;;) {
    std::vector<int> missing;
    for (int r = 0; r < spec.world; ++r) {
      if (!seen[r].empty()) continue;
      const std::string key = fmt::format("shardcheck/join/{}", r);
      if (store.check({key}))
        seen[r] = string_of(store.get(key));
      else
        missing.push_back(r);
    }
    for (int r = 0; r < spec.world; ++r) {
      if (seen[r].empty()) continue;
      const int their_world = std::stoi(seen[r].substr(0, seen[r].find('|')));
      if (their_world != spec.world)
        abort(ExitCode::smoke_world_mismatch,
              fmt::format("rank {} ({}) was started with WORLD_SIZE={}, rank 0 with WORLD_SIZE={}: every rank "
                          "must get the same world size",
                          r, who_joined(seen[r]), their_world, spec.world));
    }
    const std::int64_t joined = store.add("shardcheck/joined", 0);
    if (joined > spec.world)
      abort(ExitCode::smoke_world_mismatch,
            fmt::format("{} ranks joined the rendezvous on {}:{}, but WORLD_SIZE={} (a rank with another "
                        "WORLD_SIZE, or a second job on the same MASTER_PORT)",
                        joined, spec.master_addr, spec.master_port, spec.world));
    if (missing.empty()) break;
    if (clock_type::now() > deadline) {
      std::vector<int> present;
      for (int r = 0; r < spec.world; ++r)
        if (!seen[r].empty()) present.push_back(r);
      abort(ExitCode::smoke_join_timeout,
            fmt::format("rank{} {} of WORLD_SIZE={} never joined the rendezvous on {}:{} within {} s (joined: {}); "
                        "did every node start, with the same MASTER_ADDR and MASTER_PORT?",
                        missing.size() == 1 ? "" : "s", joined_list(missing), spec.world, spec.master_addr,
                        spec.master_port, spec.timeout.count() / 1000.0, joined_list(present)));
    }
    std::this_thread::sleep_for(tick);
  }
  store.set("shardcheck/go", bytes_of("1"));
}

// "world|host|pid" as "host vm, pid 123".
std::string who_joined(const std::string& value) {
  const auto a = value.find('|'), b = value.rfind('|');
  return fmt::format("host {}, pid {}", value.substr(a + 1, b - a - 1), value.substr(b + 1));
}

bool is_loopback(const std::string& addr) { return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1"; }

}  // namespace

bool c10d_has_nccl() {
#ifdef SHARDCHECK_SMOKE_NCCL
  return true;
#else
  return false;
#endif
}

std::string c10d_torch_version() { return TORCH_VERSION; }

std::unique_ptr<Comm> connect_c10d(const RendezvousSpec& spec) {
  auto store = open_store(spec);
  try {
    rendezvous(*store, spec);
  } catch (const SmokeFault&) {
    throw;
  } catch (const std::exception& e) {
    throw SmokeFault(ExitCode::smoke_rank_lost,
                     fmt::format("rank {}: the rendezvous store failed: {}", spec.rank, first_line(e.what())));
  }
  auto pg_store = c10::make_intrusive<c10d::PrefixStore>("shardcheck/pg", store);
  // Shard groups: ranks [i*S, (i+1)*S); replica groups: {j, j+S, j+2S, ...}. Each rank builds only
  // the two it belongs to, every rank in the same order (shard, then replica), each over its own
  // key prefix, as torch.distributed.new_group does with a PrefixStore per group. With T TP ranks
  // (innermost on the mesh) the same holds among the ranks of each TP rank t: data-parallel rank
  // rank / T, one shard and one replica group per t.
  const int T = std::max(1, spec.tp);
  const int S = spec.shard_size > 0 ? spec.shard_size : spec.world / T;
  if (spec.world % (S * T) != 0)
    throw SmokeFault(ExitCode::usage, fmt::format("shard groups of {} ranks x {} TP ranks do not divide WORLD_SIZE={}",
                                                  S, T, spec.world));
  const int t = spec.rank % T, dp = spec.rank / T;
  const int shard_index = dp / S, shard_rank = dp % S, R = spec.world / (S * T);
  const std::string tp_suffix = T > 1 ? fmt::format("/tp{}", t) : "";
  auto groups = [&](auto make) {
    using G = typename decltype(make(std::string(), 0, 0))::element_type;
    Group<G> world{make("world", spec.rank, spec.world), spec.rank, spec.world};
    Group<G> shard = S == spec.world ? world : Group<G>{{}, 0, 1};
    if (S > 1 && S < spec.world)
      shard = Group<G>{make(fmt::format("shard/{}{}", shard_index, tp_suffix), shard_rank, S), shard_rank, S};
    Group<G> replica = R == spec.world ? world : Group<G>{{}, 0, 1};
    if (R > 1 && R < spec.world)
      replica = Group<G>{make(fmt::format("replica/{}{}", shard_rank, tp_suffix), shard_index, R), shard_index, R};
    return std::tuple{world, shard, replica};
  };
  try {
    if (spec.cuda) {
#ifdef SHARDCHECK_SMOKE_NCCL
      cudaSetDevice(spec.local_rank);
      auto make = [&](const std::string& prefix, int rank, int size) {
        auto opts = c10d::ProcessGroupNCCL::Options::create();
        opts->timeout = spec.timeout;
        return c10::make_intrusive<c10d::ProcessGroupNCCL>(c10::make_intrusive<c10d::PrefixStore>(prefix, pg_store),
                                                           rank, size, opts);
      };
      auto [world, shard, replica] = groups(make);
      return std::make_unique<C10dComm<c10d::ProcessGroupNCCL>>(store, world, shard, replica, spec, "nccl",
                                                                at::Device(at::kCUDA, spec.local_rank));
#else
      throw SmokeFault(ExitCode::smoke_launch, "this shardcheck-smoke was built with a CPU-only LibTorch: no NCCL");
#endif
    }
    auto make = [&](const std::string& prefix, int rank, int size) {
      auto opts = c10d::ProcessGroupGloo::Options::create(spec.timeout);
      // torch.distributed picks the interface the same way: GLOO_SOCKET_IFNAME, else the hostname.
      if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
      else if (is_loopback(spec.master_addr))
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      else
        opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      return c10::make_intrusive<c10d::ProcessGroupGloo>(c10::make_intrusive<c10d::PrefixStore>(prefix, pg_store), rank,
                                                         size, opts);
    };
    auto [world, shard, replica] = groups(make);
    return std::make_unique<C10dComm<c10d::ProcessGroupGloo>>(store, world, shard, replica, spec, "gloo",
                                                              at::Device(at::kCPU));
  } catch (const SmokeFault&) {
    throw;
  } catch (const std::exception& e) {
    throw SmokeFault(ExitCode::smoke_rank_lost,
                     fmt::format("rank {}: creating the process group failed (a rank left after the rendezvous?): {}",
                                 spec.rank, first_line(e.what())));
  }
}

}  // namespace shardcheck::smoke
