// Benchmark (not a test): `inspect` on a model directory with a warm page cache, beside the time to
// merely read the header bytes. Prints medians over N runs and the ratio.
//   bench_inspect MODEL_DIR [RULES_DIR] [N]
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <vector>

#include "shardcheck/model_source.hpp"
#include "shardcheck/module_tree.hpp"
#include "shardcheck/registry.hpp"
#include "shardcheck/report.hpp"

using namespace shardcheck;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

#include "bench_util.hpp"

using shardcheck::bench::median;
using shardcheck::bench::median_ms;

namespace {


// The floor: open every safetensors file and read its 8-byte length and header, nothing else.
std::uint64_t read_header_bytes(const fs::path& dir) {
  std::uint64_t total = 0;
  std::vector<char> buf;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".safetensors") continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::uint64_t n = 0;
    in.read(reinterpret_cast<char*>(&n), 8);
    buf.resize(n);
    in.read(buf.data(), static_cast<std::streamsize>(n));
    total += 8 + n;
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_inspect MODEL_DIR [RULES_DIR] [N]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const std::string rules = argc > 2 ? argv[2] : SHARDCHECK_DEFAULT_RULES_DIR;
  const int n = argc > 3 ? std::atoi(argv[3]) : 15;

  std::uint64_t bytes = read_header_bytes(dir);  // warms the page cache
  const double t_read = median_ms(n, [&] { bytes = read_header_bytes(dir); });

  std::size_t tensors = 0;
  const double t_load = median_ms(n, [&] {
    DiagnosticSink sink;
    auto in = load_model(dir, false, sink);
    tensors = 0;
    if (in && in->checkpoint)
      for (const auto& f : in->checkpoint->files) tensors += f.tensors.size();
  });

  std::size_t json_bytes = 0;
  std::int64_t params = 0;
  const double t_inspect = median_ms(n, [&] {
    DiagnosticSink sink;
    auto in = load_model(dir, false, sink);
    if (!in) return;
    auto reg = Registry::load_for(rules, in->config, sink);
    if (!reg) return;
    auto tree = build_module_tree(in->config, in->checkpoint ? &*in->checkpoint : nullptr, *reg, {}, sink);
    if (!tree) return;
    params = tree->num_params;
    json_bytes = render_tree_json(*tree, sink.items()).size();
  });

  const double t_config_only = median_ms(n, [&] {
    DiagnosticSink sink;
    auto in = load_model(dir, true, sink);
    if (!in) return;
    auto reg = Registry::load_for(rules, in->config, sink);
    if (!reg) return;
    auto tree = build_module_tree(in->config, nullptr, *reg, {}, sink);
    if (tree) json_bytes = std::max(json_bytes, render_tree_json(*tree, sink.items()).size());
  });

  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  fmt::print("model: {}\n", dir);
  fmt::print("tensors: {}  header bytes: {}  params: {}  json bytes: {}\n", tensors, bytes, params, json_bytes);
  fmt::print("median over {} runs (warm page cache):\n", n);
  fmt::print("  read header bytes only        {:8.2f} ms\n", t_read);
  fmt::print("  load + validate headers       {:8.2f} ms  ({:.1f}x read)\n", t_load, t_load / t_read);
  fmt::print("  inspect --format json (full)  {:8.2f} ms  ({:.1f}x read)\n", t_inspect, t_inspect / t_read);
  fmt::print("  inspect --config-only (json)  {:8.2f} ms\n", t_config_only);
  fmt::print("  peak RSS of this process      {:8.1f} MB\n", ru.ru_maxrss / 1024.0);
  return 0;
}
