// The whole pipeline against REAL torch 2.x: every fixtures/oracle2/<case>.json was written by
// scripts/torch2_oracle.py from Debian unstable's torch, transformers and accelerate (versions in
// each file): a tiny model that transformers built and saved, loaded in W gloo processes and
// prepared exactly as accelerate prepares it (FSDP1: the plugin's policy and prepare_model's FSDP
// arguments; FSDP2: accelerate's own fsdp2_prepare_model), then lazily initialised and stepped once
// with AdamW. shardcheck reads the same saved model (config.json + safetensors headers) and must
// give, to the element, the same units/groups, flat layouts, per-rank shards and padding, the same
// bytes of parameters, gradients and optimizer states per rank, and an error-severity finding
// carrying torch's own message wherever torch raised.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "shardcheck/preflight.hpp"
#include "oracle_case.hpp"
#include "test_files.hpp"

using namespace shardcheck;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kOracle = fs::path(SHARDCHECK_FIXTURES_DIR) / "oracle2";

using test::read_json;
using namespace shardcheck::test;

PreflightResult run_case(const json& c) {
  PreflightRequest req;
  req.rules_dir = SHARDCHECK_SOURCE_DIR "/rules";
  req.model = (kOracle / "models" / c.at("model").get<std::string>()).string();
  req.defaults = settings_for(c);
  // The release set the case ran: as if the job's Python environment had been read.
  const json& v = c.at("versions");
  req.versions.torch = Setting<Version>{parse_version(v.at("torch").get<std::string>()), "oracle"};
  req.versions.transformers = Setting<Version>{parse_version(v.at("transformers").get<std::string>()), "oracle"};
  req.versions.accelerate = Setting<Version>{parse_version(v.at("accelerate").get<std::string>()), "oracle"};
  return run_preflight(req);
}

}  // namespace

TEST_CASE("torch 2.x oracle: every case matches real FSDP1/FSDP2 through accelerate") {
  int compared = 0, errors = 0, with_memory = 0;
  for (const auto& file : json_files(kOracle)) {
    const json c = read_json(file);
    const std::string name = c.at("case").get<std::string>();
    CAPTURE(name);
    const PreflightResult r = run_case(c);
    ++compared;
    compare_case(c, r, errors, with_memory);
  }
  MESSAGE("compared " << compared << " torch 2.x cases (" << errors << " errors, " << with_memory << " with memory)");
  CHECK(compared >= 150);
}
