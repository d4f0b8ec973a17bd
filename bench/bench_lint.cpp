// Benchmark (not a test): `shardcheck lint` cost. Prints medians of
//   (1) one typical config linted end to end in a fresh process (posix_spawn of the CLI), goal < 5 ms,
//       beside /bin/true started the same way;
//   (2) 1,000 configs linted in one process (load + all rules), goal < 1 s;
//   (3) the in-process cost of one config (parse + lint), and of loading the schema (once per process).
//   bench_lint [SHARDCHECK_BINARY] [RULES_DIR] [CONFIG] [N]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "shardcheck/accelerate_schema.hpp"
#include "shardcheck/config_doc.hpp"
#include "shardcheck/lint.hpp"

using namespace shardcheck;
using Clock = std::chrono::steady_clock;

#include "bench_util.hpp"

using shardcheck::bench::median;
using shardcheck::bench::median_ms;
using shardcheck::bench::run_process;

int main(int argc, char** argv) {
  const std::string binary = argc > 1 ? argv[1] : "./shardcheck";
  const std::string rules = argc > 2 ? argv[2] : SHARDCHECK_DEFAULT_RULES_DIR;
  const std::string config =
      argc > 3 ? argv[3]
               : std::string(SHARDCHECK_DEFAULT_RULES_DIR) + "/../fixtures/configs/good_fsdp1_accelerate_config.yaml";
  const int n = argc > 4 ? std::atoi(argv[4]) : 21;

  DiagnosticSink sink;
  auto schema = AccelerateSchema::load(rules, sink);
  if (!schema) {
    std::fprintf(stderr, "bench_lint: cannot load the schema from %s\n", rules.c_str());
    return 2;
  }
  std::ifstream in(config);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  LintOptions opts;
  opts.accelerate = schema->newest;

  // Interleaved with an empty process, so the figure comes with what merely starting one costs here.
  std::vector<double> lint_ms, true_ms;
  for (int i = 0; i < n; ++i) {
    true_ms.push_back(run_process({"/bin/true"}).wall_ms);
    lint_ms.push_back(run_process({binary, "--rules", rules, "lint", "--no-env", config}).wall_ms);
  }
  const double per_process = median(lint_ms), empty_process = median(true_ms);
  const double in_process = median_ms(n * 10, [&] {
    DiagnosticSink s;
    if (auto doc = parse_config_doc(text, config, s)) lint_document(*doc, *schema, opts, s);
  });
  const double thousand = median_ms(std::max(3, n / 4), [&] {
    for (int i = 0; i < 1000; ++i) {
      DiagnosticSink s;
      if (auto doc = parse_config_doc(text, config, s)) lint_document(*doc, *schema, opts, s);
    }
  });
  const double schema_ms = median_ms(n, [&] {
    DiagnosticSink s;
    (void)AccelerateSchema::load(rules, s);
  });
  std::printf("load rules/accelerate/schema.yaml (median of %d):  %.3f ms\n", n, schema_ms);
  std::printf("lint one config, fresh process (median of %d): %.2f ms  (goal < 5 ms; /bin/true: %.2f ms)\n", n,
              per_process, empty_process);
  std::printf("lint one config, in process   (median of %d): %.3f ms\n", n * 10, in_process);
  std::printf("lint 1,000 configs, one process (median):      %.1f ms  (goal < 1000 ms)\n", thousand);
  return 0;
}
