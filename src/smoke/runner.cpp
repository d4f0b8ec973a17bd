#include "smoke/runner.hpp"

#include <fmt/format.h>

#include <map>
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
  u.dtype = d;
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
  bool rs_ran = false;
};

Checked check_unit(Comm& comm, const UnitLayout& u, const RealBytes* real, std::int64_t shift) {
  const int r = comm.rank();
  Checked out;
  auto shard = buffer(u.shard_numel, u.dtype), gathered = buffer(u.padded_numel, u.dtype);
  fill_shard(u, r, shift, real, shard.data());
  comm.set_phase(fmt::format("unit {} all_gather", u.index));
  comm.all_gather(u.dtype, shard.data(), u.shard_numel, gathered.data());
  out.ag = verify_gathered(u, real, gathered.data());
  if (u.requires_grad && comm.can_sum(u.dtype)) {
    auto grad = buffer(u.padded_numel, u.dtype), slice = buffer(u.shard_numel, u.dtype);
    fill_grad(u, r, grad.data());
    comm.set_phase(fmt::format("unit {} reduce_scatter", u.index));
    comm.reduce_scatter_sum(u.dtype, grad.data(), u.shard_numel, slice.data());
    out.rs = verify_reduced(u, r, slice.data());
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
  const int W = comm.world();
  std::vector<double> sums;  // 5 per unit, summed over ranks at the end
  for (const auto& u : opt.units) {
    UnitResult ur;
    ur.index = u.index;
    ur.path = u.path;
    ur.dtype = u.dtype;
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
      fill_shard(u, comm.rank(), shift, &real, probe.data());
      shard_bytes = opt.weights->bytes_read() - before;
      c = check_unit(comm, u, &real, shift);
    } else {
      c = check_unit(comm, u, nullptr, shift);
    }
    ur.ag_first_wrong = c.ag.first;
    ur.ag_path = comm.path(Collective::all_gather, u.dtype);  // after the call: the path that ran
    ur.rs_ran = c.rs_ran;
    if (c.rs_ran) ur.rs_path = comm.path(Collective::reduce_scatter, u.dtype);
    else ur.rs_skipped = !u.requires_grad ? "frozen: FSDP reduce-scatters no gradient"
                                           : fmt::format("{} cannot be summed exactly on {}", dtype_name(u.dtype),
                                                         comm.backend());
    sums.insert(sums.end(), {static_cast<double>(c.ag.real), static_cast<double>(c.ag.pad),
                             static_cast<double>(c.rs.real), static_cast<double>(c.rs.pad),
                             static_cast<double>(shard_bytes)});
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

  // Bandwidth: the sweep in float (nccl-tests' default type), then each distinct unit size in its dtype.
  struct Size {
    std::int64_t count;
    DType type;
    std::string source;
  };
  std::vector<Size> sizes;
  for (std::int64_t s : opt.sweep)
    if (std::int64_t n = count_per_rank(s, W, 4); n > 0) sizes.push_back({n, DType::F32, "sweep"});
  if (opt.time_units) {
    std::map<std::pair<std::int64_t, DType>, std::size_t> seen;
    for (const auto& u : opt.units) {
      auto [it, fresh] = seen.try_emplace({u.shard_numel, u.dtype}, sizes.size());
      if (fresh) sizes.push_back({u.shard_numel, u.dtype, u.path.empty() ? "(root)" : u.path});
      else sizes[it->second].source += fmt::format(", {}", u.path.empty() ? "(root)" : u.path);
    }
  }
  std::vector<double> times, wrongs;
  int sweep_index = 0;
  for (const auto& s : sizes) {
    for (Collective c : {Collective::all_gather, Collective::reduce_scatter}) {
      if (c == Collective::reduce_scatter && !comm.can_sum(s.type)) continue;
      BandwidthRow row;
      row.collective = c;
      row.source = s.source;
      row.count = s.count;
      row.type = s.type;
      row.size = s.count * W * element_bytes(s.type);
      if (s.source == "sweep") {
        // Correctness once per size, as nccl-tests -c 1 does, with its own pattern.
        const UnitLayout u = sweep_layout(1000000 + sweep_index++, W, s.count, s.type);
        auto in = buffer(c == Collective::all_gather ? u.shard_numel : u.padded_numel, s.type);
        auto out = buffer(c == Collective::all_gather ? u.padded_numel : u.shard_numel, s.type);
        comm.set_phase(fmt::format("sweep {} {}", collective_name(c), row.size));
        if (c == Collective::all_gather) {
          fill_shard(u, comm.rank(), 0, nullptr, in.data());
          comm.all_gather(s.type, in.data(), s.count, out.data());
          wrongs.push_back(static_cast<double>(verify_gathered(u, nullptr, out.data()).total()));
        } else {
          fill_grad(u, comm.rank(), in.data());
          comm.reduce_scatter_sum(s.type, in.data(), s.count, out.data());
          wrongs.push_back(static_cast<double>(verify_reduced(u, comm.rank(), out.data()).total()));
        }
      } else {
        wrongs.push_back(0);  // unit sizes were verified above with the unit's own layout
      }
      comm.set_phase(fmt::format("time {} {}", collective_name(c), row.size));
      times.push_back(comm.time_collective(c, s.type, s.count, opt.warmup, opt.iters));
      res.bandwidth.push_back(row);
    }
  }
  comm.set_phase("bandwidth totals");
  comm.all_reduce_sum(times);
  comm.all_reduce_sum(wrongs);
  for (std::size_t i = 0; i < res.bandwidth.size(); ++i) {
    auto& row = res.bandwidth[i];
    row.seconds = times[i] / W;
    row.algbw = algbw_gbps(row.size, row.seconds);
    row.busbw = busbw_gbps(row.algbw, W);
    row.wrong = static_cast<std::int64_t>(wrongs[i]);
  }
  comm.set_phase("done");
  return res;
}

}  // namespace shardcheck::smoke
