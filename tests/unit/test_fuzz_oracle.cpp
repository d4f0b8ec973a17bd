// The differential fuzzer's cases against REAL torch: every fixtures/fuzz/seed-<N>/cases/<case>.json
// was drawn at random by scripts/oracle/fuzz_oracle.py (architecture x random small config x FSDP
// version x strategy x policy x world size x mesh x use_orig_params x frozen / ignored regexes x load
// dtype x mixed precision) and run on Debian's torch 2.14.1, transformers 5.12.1 and accelerate
// 1.14.0 in the real-stack chroot; the failing cases of each run and a sample of the passing ones are
// committed with their model's config.json. shardcheck plans each config-only and must give what
// torch built, or torch's error, as the hand-written oracle cases must (oracle_case.hpp).
//
// SHARDCHECK_FUZZ_DIR=fuzz-out/seed-<N> compares a whole fresh run instead (not committed; see the
// script's docstring); each failing case is named in the failure's context.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>

#include "oracle_case.hpp"
#include "shardcheck/preflight.hpp"
#include "test_files.hpp"

using namespace shardcheck;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

PreflightResult run_fuzz_case(const json& c, const fs::path& models) {
  PreflightRequest req;
  req.rules_dir = SHARDCHECK_SOURCE_DIR "/rules";
  req.model = (models / c.at("model").get<std::string>()).string();
  req.config_only = true;  // the fuzzer keeps the config; transformers loads every weight in load_dtype
  req.resolve.load_dtype = c.value("load_dtype", "float32");
  req.defaults = test::settings_for(c);
  const json& v = c.at("versions");
  req.versions.torch = Setting<Version>{test::parse_version(v.at("torch").get<std::string>()), "oracle"};
  req.versions.transformers = Setting<Version>{test::parse_version(v.at("transformers").get<std::string>()), "oracle"};
  req.versions.accelerate = Setting<Version>{test::parse_version(v.at("accelerate").get<std::string>()), "oracle"};
  return run_preflight(req);
}

struct Tally {
  int compared = 0, errors = 0, with_memory = 0;
};

void compare_seed_dir(const fs::path& seed_dir, Tally& t) {
  for (const auto& file : test::json_files(seed_dir / "cases")) {
    const json c = test::read_json(file);
    const std::string name = c.at("case").get<std::string>();
    CAPTURE(name);
    const PreflightResult r = run_fuzz_case(c, seed_dir / "models");
    ++t.compared;
    // A REQUIRE that fails throws out of the case; the failure is recorded, and the next case must
    // still be compared (a run's tally counts every case, not those before the first fatal one).
    try {
      test::compare_case(c, r, t.errors, t.with_memory);
    } catch (...) {  // NOLINT(bugprone-empty-catch): doctest has already reported the failure
    }
  }
}

}  // namespace

TEST_CASE("fuzz oracle: committed random cases match real FSDP1/FSDP2 through accelerate") {
  const fs::path root = fs::path(SHARDCHECK_FIXTURES_DIR) / "fuzz";
  Tally t;
  for (const auto& entry : fs::directory_iterator(root))
    if (entry.is_directory() && entry.path().filename().string().starts_with("seed-"))
      compare_seed_dir(entry.path(), t);
  MESSAGE("compared " << t.compared << " fuzz cases (" << t.errors << " errors, " << t.with_memory << " with memory)");
  CHECK(t.compared >= 50);
}

TEST_CASE("fuzz oracle: a fresh run (SHARDCHECK_FUZZ_DIR)") {
  const char* dir = std::getenv("SHARDCHECK_FUZZ_DIR");
  if (dir == nullptr || *dir == '\0') return;  // a developer's run, not CI's
  Tally t;
  const std::string run_dir = dir;
  compare_seed_dir(run_dir, t);
  MESSAGE("compared " << t.compared << " fuzz cases of " << run_dir << " (" << t.errors << " errors, " << t.with_memory
                      << " with memory)");
}
