// libFuzzer harness: the accelerate-config YAML loader, every lint rule, the renderers, and --fix.
// Invariants: no crash, no hang (the loader's limits bound work), fixes apply cleanly and a second
// round of fixing is a no-op. Seed corpus: fixtures/configs.
//   clang++ -fsanitize=fuzzer ... ; ./fuzz_accelerate_yaml fixtures/configs
#include <cstdint>
#include <cstdlib>
#include <string>

#include "shardcheck/accelerate_schema.hpp"
#include "shardcheck/config_doc.hpp"
#include "shardcheck/lint.hpp"
#include "shardcheck/report.hpp"

using namespace shardcheck;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::optional<AccelerateSchema> schema = [] {
    DiagnosticSink sink;
    return AccelerateSchema::load(SHARDCHECK_DEFAULT_RULES_DIR, sink);
  }();
  if (!schema) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  // The first byte picks the accelerate version so that version-dependent rules are reached too.
  LintOptions opts;
  static const Version kVersions[] = {{0, 23, 0}, {0, 33, 0}, {0, 34, 0}, {1, 5, 0}, {1, 9, 0}, {1, 14, 0}};
  opts.accelerate = kVersions[size ? data[0] % 6 : 0];
  opts.torch = Version{2, 5, 0};
  opts.audit_env = true;
  opts.env = {{"FSDP_TRANSFORMER_CLS_TO_WRAP", "A, B", 1}, {"FSDP_SHARDING_STRATEGY", "2", 2}};
  opts.env_source = "fuzz.env";

  DiagnosticSink sink;
  auto doc = parse_config_doc(text, "fuzz.yaml", sink);
  if (!doc) return 0;
  lint_document(*doc, *schema, opts, sink);
  (void)render_diagnostics_json(sink.items());
  (void)render_diagnostics_github(sink.items());
  SourceLookup lookup = [&](const std::string&) { return &doc->text; };
  (void)render_diagnostics_text(sink.items(), lookup, TextStyle{true});

  const std::string once = fix_to_fixpoint(text, "fuzz.yaml", *schema, opts);
  const std::string twice = fix_to_fixpoint(once, "fuzz.yaml", *schema, opts);
  if (once != twice) std::abort();  // --fix must be idempotent
  return 0;
}
