#include "smoke/runner.hpp"

#include <fmt/format.h>

#include <map>
#include <tuple>
#include <vector>

#include "smoke/pattern.hpp"

namespace shardcheck::smoke {
namespace {

std::vector<std::byte> buffer(std::int64_t numel, DType d) {
  return std::vector<std::byte>(static_cast<std::size_t>(numel * element_bytes(d)));
}

// A unit-shaped layout without padding for the sweep's correctness check: rank r holds elements
// [r*count, (r+1)*count) of one parameter.
UnitLayout sweep_layout(int index, int world, std::int64_t count, DType d) {
  UnitLayout u;
  u.index = index;
  u.path = "sweep";
  u.dtype = u.reduce_dtype = d;
  u.world = world;
  u.numel = u.padded_numel = count * world;
  u.shard_numel = count;
  u.params = {"sweep"};
  u.param_numels = {u.numel};
  u.ranks.resize(world);
  for (int r = 0; r < world; ++r) u.ranks[r].push_back(Segment{r * count, count, 0, r * count});
  return u;
}

struct Checked {
  WrongCount ag, rs;
  bool rs_ran = false, ar_ran = false;
};

// One FSDP step's collectives for a unit: all-gather the shards inside the shard group, then
// reduce-scatter the gradient there and, with replicas (HSDP, NO_SHARD), all-reduce each slice
// across them (FSDP1 _runtime_utils.py _post_backward_hook / _reduce_grad; FSDP2
// _fsdp_collectives.py foreach_reduce with its all_reduce over the replicate mesh dim).
Checked check_unit(Comm& comm, const UnitLayout& u, const RealBytes* real, std::int64_t shift) {
  const int s = comm.shard_rank();
  Checked out;
  auto shard = buffer(u.shard_numel, u.dtype), gathered = buffer(u.padded_numel, u.dtype);
  fill_shard(u, s, shift, real, shard.data());
  comm.set_phase(fmt::format("unit {} all_gather", u.index));
  comm.all_gather(u.dtype, shard.data(), u.shard_numel, gathered.data());
  out.ag = verify_gathered(u, real, gathered.data());
  if (u.requires_grad && comm.can_sum(u.reduce_dtype)) {
    auto grad = buffer(u.padded_numel, u.reduce_dtype), slice = buffer(u.shard_numel, u.reduce_dtype);
    fill_grad(u, comm.dp_rank(), grad.data());
    comm.set_phase(fmt::format("unit {} reduce_scatter", u.index));
    comm.reduce_scatter_sum(u.reduce_dtype, grad.data(), u.shard_numel, slice.data());
    if (comm.replicas() > 1) {
      comm.set_phase(fmt::format("unit {} all_reduce", u.index));
      comm.all_reduce_replicas(u.reduce_dtype, slice.data(), u.shard_numel);
      out.ar_ran = true;
    }
    out.rs = verify_reduced(u, s, slice.data());
    out.rs_ran = true;
  }
  return out;
}

}  // namespace

std::int64_t RunResult::wrong_total() const {
  std::int64_t n = 0;
  for (const auto& u : units) n += u.ag_wrong_real + u.ag_wrong_pad + u.rs_wrong_real + u.rs_wrong_pad;
  for (const auto& b : bandwidth) n += b.wrong;
  return n;
}

RunResult run_rank(Comm& comm, const RunOptions& opt) {
  RunResult res;
  const int W = comm.world(), S = comm.shard_size(), R = comm.replicas();
  std::vector<double> sums;  // 5 per unit, summed over ranks at the end
  for (const auto& u : opt.units) {
    UnitResult ur;
    ur.index = u.index;
    ur.path = u.path;
    ur.dtype = u.dtype;
    ur.reduce_dtype = u.reduce_dtype;
    ur.numel = u.numel;
    ur.shard_numel = u.shard_numel;
    ur.padded_numel = u.padded_numel;
    ur.pad = u.pad_elements();
    RealBytes real;
    const std::int64_t before = opt.weights ? opt.weights->bytes_read() : 0;
    if (opt.weights) {
      std::string error;
      if (!opt.weights->bind(u, error)) throw SmokeFault(ExitCode::smoke_weights, error);
      real = opt.weights->source();
    }
    const std::int64_t shift = comm.rank() == opt.shift_rank ? 1 : 0;
    // Only the shard fill counts as "read by this rank"; verification re-reads whole tensors.
    std::int64_t shard_bytes = 0;
    Checked c;
    if (opt.weights) {
      auto probe = buffer(u.shard_numel, u.dtype);
      fill_shard(u, comm.shard_rank(), shift, &real, probe.data());
      shard_bytes = opt.weights->bytes_read() - before;
      c = check_unit(comm, u, &real, shift);
    } else {
      c = check_unit(comm, u, nullptr, shift);
    }
    ur.ag_first_wrong = c.ag.first;
    ur.ag_path = comm.path(Collective::all_gather, u.dtype);  // after the call: the path that ran
    ur.rs_ran = c.rs_ran;
    ur.ar_ran = c.ar_ran;
    if (c.rs_ran) ur.rs_path = comm.path(Collective::reduce_scatter, u.reduce_dtype);
    if (c.ar_ran) ur.ar_path = comm.path(Collective::all_reduce, u.reduce_dtype);
    if (!c.rs_ran)
      ur.rs_skipped = !u.requires_grad ? "frozen: FSDP reduces no gradient"
                                       : fmt::format("{} cannot be summed exactly on {}", dtype_name(u.reduce_dtype),
                                                     comm.backend());
    sums.insert(sums.end(),
                {static_cast<double>(c.ag.real), static_cast<double>(c.ag.pad), static_cast<double>(c.rs.real),
                 static_cast<double>(c.rs.pad), static_cast<double>(shard_bytes)});
    res.units.push_back(std::move(ur));
  }
  comm.set_phase("count");
  comm.all_reduce_sum(sums);
  for (std::size_t i = 0; i < res.units.size(); ++i) {
    auto& ur = res.units[i];
    ur.ag_wrong_real = static_cast<std::int64_t>(sums[5 * i]);
    ur.ag_wrong_pad = static_cast<std::int64_t>(sums[5 * i + 1]);
    ur.rs_wrong_real = static_cast<std::int64_t>(sums[5 * i + 2]);
    ur.rs_wrong_pad = static_cast<std::int64_t>(sums[5 * i + 3]);
    ur.weight_bytes_read = static_cast<std::int64_t>(sums[5 * i + 4]);
  }

  // Bandwidth: the sweep in float (nccl-tests' default type), then each distinct unit size in the
  // dtype its collective carries. All-gather and reduce-scatter run in the shard group (none when it
  // is a single rank: NO_SHARD); the replicas' all-reduce (HSDP, NO_SHARD) when there are replicas.
  struct Timed {
    Collective c;
    std::int64_t count;
    DType type;
    std::string source;
  };
  std::vector<Timed> timed;
  const bool gathers = S > 1 || W == 1;  // one rank alone still times its backend (busbw 0)
  for (std::int64_t bytes : opt.sweep) {
    if (gathers)
      if (const std::int64_t n = count_per_rank(bytes, S, 4); n > 0)
        for (Collective c : {Collective::all_gather, Collective::reduce_scatter})
          timed.push_back({c, n, DType::F32, "sweep"});
    if (R > 1)
      if (const std::int64_t n = bytes / 4; n > 0) timed.push_back({Collective::all_reduce, n, DType::F32, "sweep"});
  }
  if (opt.time_units) {
    std::map<std::tuple<Collective, std::int64_t, DType>, std::size_t> seen;
    auto add = [&](Collective c, const UnitLayout& u, DType type) {
      const std::string name = u.path.empty() ? "(root)" : u.path;
      auto [it, fresh] = seen.try_emplace({c, u.shard_numel, type}, timed.size());
      if (fresh)
        timed.push_back({c, u.shard_numel, type, name});
      else
        timed[it->second].source += fmt::format(", {}", name);
    };
    for (const auto& u : opt.units) {
      if (gathers) add(Collective::all_gather, u, u.dtype);
      if (gathers && u.requires_grad && comm.can_sum(u.reduce_dtype))
        add(Collective::reduce_scatter, u, u.reduce_dtype);
      if (R > 1 && u.requires_grad && comm.can_sum(u.reduce_dtype)) add(Collective::all_reduce, u, u.reduce_dtype);
    }
  }
  std::vector<double> times, wrongs;
  int sweep_index = 0;
  for (const auto& t : timed) {
    if (t.c != Collective::all_gather && !comm.can_sum(t.type)) continue;
    BandwidthRow row;
    row.collective = t.c;
    row.source = t.source;
    row.count = t.count;
    row.type = t.type;
    row.ranks = t.c == Collective::all_reduce ? R : S;
    row.size = t.count * (t.c == Collective::all_reduce ? 1 : S) * element_bytes(t.type);
    if (t.source == "sweep") {
      // Correctness once per size, as nccl-tests -c 1 does, with its own pattern.
      comm.set_phase(fmt::format("sweep {} {}", collective_name(t.c), row.size));
      if (t.c == Collective::all_reduce) {
        UnitLayout u = sweep_layout(1000000 + sweep_index++, 1, t.count, t.type);
        u.replicas = R;
        auto buf = buffer(t.count, t.type);
        fill_grad(u, comm.dp_rank() / S, buf.data());  // the replica's index: sums run over 0..R-1
        comm.all_reduce_replicas(t.type, buf.data(), t.count);
        wrongs.push_back(static_cast<double>(verify_reduced(u, 0, buf.data()).total()));
      } else {
        const UnitLayout u = sweep_layout(1000000 + sweep_index++, S, t.count, t.type);
        const bool ag = t.c == Collective::all_gather;
        auto in = buffer(ag ? u.shard_numel : u.padded_numel, t.type);
        auto out = buffer(ag ? u.padded_numel : u.shard_numel, t.type);
        if (ag) {
          fill_shard(u, comm.shard_rank(), 0, nullptr, in.data());
          comm.all_gather(t.type, in.data(), t.count, out.data());
          wrongs.push_back(static_cast<double>(verify_gathered(u, nullptr, out.data()).total()));
        } else {
          fill_grad(u, comm.shard_rank(), in.data());
          comm.reduce_scatter_sum(t.type, in.data(), t.count, out.data());
          wrongs.push_back(static_cast<double>(verify_reduced(u, comm.shard_rank(), out.data()).total()));
        }
      }
    } else {
      wrongs.push_back(0);  // unit sizes were verified above with the unit's own layout
    }
    comm.set_phase(fmt::format("time {} {}", collective_name(t.c), row.size));
    times.push_back(comm.time_collective(t.c, t.type, t.count, opt.warmup, opt.iters));
    res.bandwidth.push_back(row);
  }
  comm.set_phase("bandwidth totals");
  comm.all_reduce_sum(times);
  comm.all_reduce_sum(wrongs);
  for (std::size_t i = 0; i < res.bandwidth.size(); ++i) {
    auto& row = res.bandwidth[i];
    row.seconds = times[i] / W;
    row.algbw = algbw_gbps(row.size, row.seconds);
    row.busbw = busbw_gbps(row.collective, row.algbw, row.ranks);
    row.wrong = static_cast<std::int64_t>(wrongs[i]);
  }
  comm.set_phase("done");
  return res;
}

}  // namespace shardcheck::smoke
