// Benchmark (not a test): `inspect` on a model directory with a warm page cache, beside the time to
// merely read the header bytes. Prints medians over N runs and the ratio.
//   bench_inspect MODEL_DIR [RULES_DIR] [N]
//   bench_inspect --phases MODEL_DIR [RULES_DIR] [N]
// The second form runs the pipeline once in each of N fresh forked processes and prints the median
// of every stage, teardown included: in a fresh process every page the stages touch is a page
// fault, which repeated runs in one process hide (their heap is already mapped).
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <vector>

#include "shardcheck/load_tree.hpp"
#include "shardcheck/model_source.hpp"
#include "shardcheck/module_tree.hpp"
#include "shardcheck/registry.hpp"
#include "shardcheck/report.hpp"
#include "platform/huge_pages.hpp"

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

// One inspect, stage by stage, in this process; the stage times in ms into `out`. The stages run
// one after another here; `inspect` itself overlaps the registry and the tree's expansion with
// the checkpoint load (load_module_tree), timed as the last entry.
void run_phases(const std::string& dir, const std::string& rules, std::array<double, 7>& out) {
  auto t = Clock::now();
  auto lap = [&t] {
    const auto now = Clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - t).count();
    t = now;
    return ms;
  };
  {
    DiagnosticSink sink;
    auto in = load_model(dir, false, sink);
    out[0] = lap();
    if (!in) return;
    auto reg = Registry::load_for(rules, in->config, sink);
    out[1] = lap();
    if (!reg) return;
    auto tree = build_module_tree(in->config, in->checkpoint ? &*in->checkpoint : nullptr, *reg, {}, sink);
    out[2] = lap();
    if (!tree) return;
    const std::string json = render_tree_json(*tree, sink.items());
    out[3] = lap();
    std::fwrite(json.data(), 1, 0, stdout);
    t = Clock::now();
  }
  out[4] = lap();  // destructors
  {
    DiagnosticSink sink;
    auto loaded = load_module_tree(dir, false, rules, {}, sink);
    out[6] = lap();
  }
}

int phases_main(const std::string& dir, const std::string& rules, int n) {
  const char* names[] = {"load_model",
                         "registry",
                         "build_module_tree",
                         "render_tree_json",
                         "teardown",
                         "total of the above",
                         "load_module_tree (overlapped: what inspect runs)"};
  std::array<std::vector<double>, 7> samples;
  for (int i = 0; i < n; ++i) {
    int fds[2];
    if (pipe(fds) != 0) return 2;
    const pid_t pid = fork();
    if (pid == 0) {
      std::array<double, 7> t{};
      run_phases(dir, rules, t);
      t[5] = t[0] + t[1] + t[2] + t[3] + t[4];
      if (write(fds[1], t.data(), sizeof t) != sizeof t) _exit(3);
      _exit(0);
    }
    close(fds[1]);
    std::array<double, 7> t{};
    const bool ok = read(fds[0], t.data(), sizeof t) == sizeof t;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!ok) return 2;
    for (int k = 0; k < 7; ++k) samples[k].push_back(t[k]);
  }
  fmt::print("model: {}\nmedian over {} fresh processes (warm page cache):\n", dir, n);
  for (int k = 0; k < 7; ++k) fmt::print("  {:<20} {:8.2f} ms\n", names[k], median(samples[k]));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  platform::use_huge_page_heap();  // as the CLI's inspect/plan/check do
  if (argc > 2 && std::string(argv[1]) == "--phases")
    return phases_main(argv[2], argc > 3 ? argv[3] : SHARDCHECK_DEFAULT_RULES_DIR, argc > 4 ? std::atoi(argv[4]) : 15);
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
