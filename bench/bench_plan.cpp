// Benchmark (not a test): `plan` beside `inspect` on one model, each a whole CLI process (spawn +
// exec), as a user runs them. The goal: plan within 1.5x of inspect on the sparse
// DeepSeek-V3, both under 30 ms wall. Runs alternate (inspect, plan, inspect, ...) so that load
// from other processes on the machine falls on both alike; prints medians, the ratio and the
// largest peak RSS of the children.
//   bench_plan [SHARDCHECK_BINARY] [MODEL_DIR] [N] [PLAN FLAGS...]
// Plan flags default to `--world-size 8 --no-env`; output goes to /dev/null in JSON.
// With BENCH_BASELINE=plan in the environment the baseline is `plan --world-size 8 --no-env` instead
// of inspect, and BENCH_FORMAT=text times the text output: the LoRA goal (plan with an all-linear
// r=64 adapter within 1.3x of the plain plan) is
//   BENCH_BASELINE=plan bench_plan shardcheck llama-3.1-405b 31 --world-size 8 --no-env
//     --lora-target-modules all-linear --lora-r 64
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_util.hpp"

using shardcheck::bench::median;
using shardcheck::bench::run_process;

int main(int argc, char** argv) {
  const std::string binary = argc > 1 ? argv[1] : "./shardcheck";
  const std::string model = argc > 2 ? argv[2] : "generated/deepseek-v3";
  const int n = argc > 3 ? std::max(1, std::atoi(argv[3])) : 31;
  std::vector<std::string> plan_flags;
  for (int i = 4; i < argc; ++i) plan_flags.emplace_back(argv[i]);
  if (plan_flags.empty()) plan_flags = {"--world-size", "8", "--no-env"};

  const char* baseline_env = std::getenv("BENCH_BASELINE");
  const char* format_env = std::getenv("BENCH_FORMAT");
  const bool versus_plan = baseline_env && std::string(baseline_env) == "plan";
  const std::string format = format_env ? format_env : "json";
  std::vector<std::string> inspect_cmd = {binary, "inspect", "--format", format, model};
  if (versus_plan) inspect_cmd = {binary, "plan", "--format", format, "--world-size", "8", "--no-env", model};
  std::vector<std::string> plan_cmd = {binary, "plan", "--format", format};
  plan_cmd.insert(plan_cmd.end(), plan_flags.begin(), plan_flags.end());
  plan_cmd.push_back(model);

  // One untimed run of each warms the page cache and reports a failing command before timing it.
  for (const auto* cmd : {&inspect_cmd, &plan_cmd}) {
    const auto r = run_process(*cmd);
    if (r.exit_code != 0 && r.exit_code != 1) {
      fmt::print(stderr, "bench_plan: `{}` exited with {}\n", fmt::join(*cmd, " "), r.exit_code);
      return 2;
    }
  }

  std::vector<double> inspect_ms, plan_ms;
  long inspect_rss_kb = 0, plan_rss_kb = 0;
  for (int i = 0; i < n; ++i) {
    const auto a = run_process(inspect_cmd);
    inspect_ms.push_back(a.wall_ms);
    inspect_rss_kb = std::max(inspect_rss_kb, a.max_rss_kb);
    const auto b = run_process(plan_cmd);
    plan_ms.push_back(b.wall_ms);
    plan_rss_kb = std::max(plan_rss_kb, b.max_rss_kb);
  }
  const double t_inspect = median(inspect_ms), t_plan = median(plan_ms);
  fmt::print("model: {}\n", model);
  fmt::print("median over {} runs each, whole process, warm page cache:\n", n);
  const std::string base = versus_plan ? "plain plan" : "inspect";
  fmt::print("  {:<24}{:8.2f} ms  peak RSS {:6.1f} MB  (goal < 30 ms)\n", base + " --format " + format, t_inspect,
             inspect_rss_kb / 1024.0);
  fmt::print("  {:<24}{:8.2f} ms  peak RSS {:6.1f} MB  (goal < 30 ms)\n", "plan --format " + format, t_plan,
             plan_rss_kb / 1024.0);
  fmt::print("  plan / {:<17}{:8.2f}     (goal <= {})\n", base, t_plan / t_inspect, versus_plan ? "1.3" : "1.5");
  fmt::print("  plan flags: {}\n", fmt::join(plan_flags, " "));
  return 0;
}
