#include "smoke/report.hpp"

#include <fmt/format.h>

#include <set>

#include "report/json_writer.hpp"

namespace shardcheck::smoke {
namespace {

std::string unit_name(const std::string& path) { return path.empty() ? "(root)" : path; }

std::string wrong_cell(std::int64_t real, std::int64_t pad) {
  if (real == 0 && pad == 0) return "0";
  return fmt::format("{} ({} in padding)", real + pad, pad);
}

}  // namespace

Verdict judge(const RunHeader& h, const RunResult& r) {
  Verdict v;
  const std::int64_t wrong = r.wrong_total();
  int bad_units = 0;
  for (const auto& u : r.units)
    if (u.ag_wrong_real + u.ag_wrong_pad + u.rs_wrong_real + u.rs_wrong_pad > 0) ++bad_units;
  const double avg = average_busbw(r.bandwidth);
  if (wrong > 0) {
    v.exit_code = 20;
    v.summary =
        fmt::format("FAILED: {} wrong elements in {} of {} units on {} ranks{}", wrong, bad_units, r.units.size(),
                    h.world, h.weights ? " (the gathered shards differ from the checkpoint's bytes)" : "");
  } else if (h.expect_busbw && avg < 0.9 * *h.expect_busbw) {
    // nccl-tests fails when NCCL_TESTS_MIN_BW is set and the average busbw is below 0.9 x that.
    v.exit_code = 26;
    v.summary = fmt::format("FAILED: average bus bandwidth {:.3f} GB/s is below 0.9 x the expected {:.3f} GB/s", avg,
                            *h.expect_busbw);
  } else {
    const std::string bits = h.weights ? ", equal to the checkpoint's bytes bit for bit" : "";
    if (h.shard_size == 1 && h.world > 1)  // NO_SHARD
      v.summary = fmt::format("OK: {} units whole on every rank{}, gradients all-reduced exactly across {} ranks",
                              r.units.size(), bits, h.world);
    else if (h.replicas > 1)
      v.summary = fmt::format(
          "OK: {} units all-gathered and reduce-scattered in {}-rank shard groups and all-reduced "
          "across {} replicas exactly on {} ranks{}",
          r.units.size(), h.shard_size, h.replicas, h.world, bits);
    else
      v.summary = fmt::format("OK: {} units all-gathered and reduce-scattered exactly on {} ranks{}", r.units.size(),
                              h.world, bits);
  }
  return v;
}

std::string render_smoke_text(const RunHeader& h, const RunResult& r, const Verdict& v) {
  std::string out;
  out +=
      fmt::format("shardcheck smoke: {} rank{}, {} on {} (LibTorch {}), FSDP{} {} plan of {}\n", h.world,
                  h.world == 1 ? "" : "s", h.backend, h.device, h.torch_version, h.fsdp_version, h.strategy, h.model);
  if (h.replicas > 1)
    out += fmt::format(
        "  {} replicas x {}-rank shard groups: shards gathered and gradients reduce-scattered within "
        "a group, each slice all-reduced across the replicas\n",
        h.replicas, h.shard_size);
  if (h.tp > 1)
    out += fmt::format(
        "  {} tensor-parallel ranks: each verifies its own pieces in its own {}-rank shard groups (ranks t, t + {}, "
        "...), which never cross TP ranks\n",
        h.tp, h.shard_size, h.tp);
  std::set<std::string> paths;
  for (const auto& u : r.units) {
    paths.insert(fmt::format("all_gather ({}): {}", dtype_name(u.dtype), u.ag_path));
    if (u.rs_ran) paths.insert(fmt::format("reduce_scatter ({}): {}", dtype_name(u.reduce_dtype), u.rs_path));
    if (u.ar_ran) paths.insert(fmt::format("all_reduce ({}): {}", dtype_name(u.reduce_dtype), u.ar_path));
  }
  for (const auto& p : paths) out += "  " + p + "\n";
  out += fmt::format("  checked {} of {} units{}{}\n\n", r.units.size(), h.plan_units,
                     h.weights ? "; real weights from the checkpoint" : "; synthetic pattern",
                     h.shifted ? "; TEST SHIFT: one rank sends its shard one element off" : "");

  std::size_t name_w = 4;
  for (const auto& u : r.units) name_w = std::max(name_w, unit_name(u.path).size());
  out += fmt::format("{:<{}}  {:>5}  {:>10}  {:>10}  {:>6}  {:>17}  {:>16}\n", "unit", name_w, "dtype", "numel",
                     "shard", "pad", "all_gather #wrong", "red_scat #wrong");
  for (const auto& u : r.units) {
    out += fmt::format("{:<{}}  {:>5}  {:>10}  {:>10}  {:>6}  {:>17}  {:>16}\n", unit_name(u.path), name_w,
                       dtype_name(u.dtype), u.numel, u.shard_numel, u.pad, wrong_cell(u.ag_wrong_real, u.ag_wrong_pad),
                       u.rs_ran ? wrong_cell(u.rs_wrong_real, u.rs_wrong_pad) : "skipped");
  }
  for (const auto& u : r.units)
    if (!u.rs_ran) out += fmt::format("  reduce_scatter skipped for {}: {}\n", unit_name(u.path), u.rs_skipped);
  if (h.weights) {
    std::int64_t bytes = 0;
    for (const auto& u : r.units) bytes += u.weight_bytes_read;
    out += fmt::format("  shard reads from the checkpoint: {} bytes over all ranks\n", bytes);
  }

  if (!r.bandwidth.empty()) {
    // nccl-tests src/common.cu writeResultHeader/writeBenchmarkLine, one collective per row.
    out += "\n#\n";
    out += fmt::format("# {:>14} {:>12} {:>12} {:>6} {:>10} {:>8} {:>8} {:>6}  {}\n", "collective", "size", "count",
                       "type", "time", "algbw", "busbw", "#wrong", "source");
    out += fmt::format("# {:>14} {:>12} {:>12} {:>6} {:>10} {:>8} {:>8} {:>6}\n", "", "(B)", "(elements)", "", "(us)",
                       "(GB/s)", "(GB/s)", "");
    for (const auto& b : r.bandwidth)
      out += fmt::format("  {:>14} {:>12} {:>12} {:>6} {:>10.1f} {:>8.3f} {:>8.3f} {:>6}  {}\n",
                         collective_name(b.collective), b.size, b.count, dtype_name(b.type), b.seconds * 1e6, b.algbw,
                         b.busbw, b.wrong, b.source);
    std::int64_t oob = 0;
    for (const auto& b : r.bandwidth) oob += b.wrong;
    out += fmt::format("# Out of bounds values : {} {}\n", oob, oob == 0 ? "OK" : "FAILED");
    out += fmt::format("# Avg bus bandwidth    : {:.3f}{}\n", average_busbw(r.bandwidth),
                       h.expect_busbw ? fmt::format(" (expected >= 0.9 x {:.3f})", *h.expect_busbw) : "");
    if (h.world == 1) out += "# (one rank moves no bytes between ranks: busbw is 0 by definition)\n";
    out += "#\n";
  }
  out += "\n" + v.summary + "\n";
  return out;
}

std::string render_smoke_json(const RunHeader& h, const RunResult& r, const Verdict& v) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("verdict").value(v.exit_code == 0 ? "ok" : "failed");
  w.key("exit_code").value(v.exit_code);
  w.key("summary").value(v.summary);
  w.key("world_size").value(h.world);
  w.key("shard_group_size").value(h.shard_size);
  w.key("replicas").value(h.replicas);
  w.key("tp_size").value(h.tp);
  w.key("backend").value(h.backend);
  w.key("device").value(h.device);
  w.key("torch_version").value(h.torch_version);
  w.key("model").value(h.model);
  w.key("fsdp_version").value(h.fsdp_version);
  w.key("sharding_strategy").value(h.strategy);
  w.key("plan_units").value(h.plan_units);
  w.key("weights").value(h.weights);
  w.key("test_shift").value(h.shifted);
  w.key("wrong_elements").value(r.wrong_total());
  w.key("units").begin_array();
  for (const auto& u : r.units) {
    w.begin_object();
    w.key("index").value(u.index);
    w.key("path").value(u.path);
    w.key("dtype").value(dtype_name(u.dtype));
    w.key("reduce_dtype").value(dtype_name(u.reduce_dtype));
    w.key("numel").value(u.numel);
    w.key("shard_numel").value(u.shard_numel);
    w.key("padded_numel").value(u.padded_numel);
    w.key("pad_elements").value(u.pad);
    w.key("all_gather").begin_object();
    w.key("path").value(u.ag_path);
    w.key("wrong").value(u.ag_wrong_real + u.ag_wrong_pad);
    w.key("wrong_in_padding").value(u.ag_wrong_pad);
    w.end_object();
    w.key("reduce_scatter").begin_object();
    w.key("ran").value(u.rs_ran);
    if (u.rs_ran) {
      w.key("path").value(u.rs_path);
      w.key("wrong").value(u.rs_wrong_real + u.rs_wrong_pad);
      w.key("wrong_in_padding").value(u.rs_wrong_pad);
    } else {
      w.key("skipped").value(u.rs_skipped);
    }
    w.end_object();
    // The replicas' all-reduce of each reduce-scattered slice; its result is what reduce_scatter's
    // count checks (the sum over every rank of every replica).
    w.key("all_reduce").begin_object();
    w.key("ran").value(u.ar_ran);
    if (u.ar_ran) w.key("path").value(u.ar_path);
    w.end_object();
    if (h.weights) w.key("weight_bytes_read").value(u.weight_bytes_read);
    w.end_object();
  }
  w.end_array();
  w.key("bandwidth").begin_object();
  w.key("rows").begin_array();
  for (const auto& b : r.bandwidth) {
    w.begin_object();
    w.key("collective").value(collective_name(b.collective));
    w.key("source").value(b.source);
    w.key("size").value(b.size);
    w.key("count").value(b.count);
    w.key("ranks").value(b.ranks);
    w.key("type").value(dtype_name(b.type));
    w.key("time_us").value(b.seconds * 1e6);
    w.key("algbw_gbps").value(b.algbw);
    w.key("busbw_gbps").value(b.busbw);
    w.key("wrong").value(b.wrong);
    w.end_object();
  }
  w.end_array();
  w.key("average_busbw_gbps").value(average_busbw(r.bandwidth));
  if (h.expect_busbw) w.key("expect_busbw_gbps").value(*h.expect_busbw);
  w.end_object();
  w.end_object();
  out += '\n';
  return out;
}

std::string render_smoke_error_json(int exit_code, const std::string& message) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("verdict").value("error");
  w.key("exit_code").value(exit_code);
  w.key("error").value(message);
  w.end_object();
  out += '\n';
  return out;
}

}  // namespace shardcheck::smoke
