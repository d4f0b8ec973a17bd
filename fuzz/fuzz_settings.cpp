// libFuzzer harness: the meaning of settings rather than their syntax. Each input is read as a
// sequence of choices over the settings space a user can give plan/check (model x world size x
// machines x FSDP version x strategy x policy x thresholds x mixed precision x mesh x ignored
// modules x classes x versions x workload; tests/support/settings_space.hpp, shared with the
// property test). Invariants: no crash, no exception, no sanitizer finding, and
// settings_space::plan_invariants (every finding catalogued, an error never exits 0, no plan without
// an error, FSDP's shard arithmetic, every parameter in exactly one unit, no fit verdict for a job
// that fails). Seed corpus: fuzz/corpus/settings.
#include <cstdint>

#include "settings_space.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  settings_space::Chooser ch(data, size);
  settings_space::Draw d = settings_space::draw(ch, SHARDCHECK_SOURCE_DIR);
  shardcheck::PreflightResult r;
  try {
    r = shardcheck::run_preflight(d.req);
  } catch (...) {
    __builtin_trap();
  }
  if (!settings_space::plan_invariants(r).empty()) __builtin_trap();
  return 0;
}
