// The step's peak against REAL training steps: every fixtures/oracle2/peak/<case>.json was written by
// scripts/oracle/peak_oracle.py, which runs three optimizer steps of torch 2.14.1 FSDP1 / FSDP2 as
// accelerate 1.14 prepares them (CPU, gloo, float32, transformers 5.12.1 models built from
// fixtures/oracle2/peak/models/<model>/config.json) and counts the live bytes of every tensor each op
// returns in the third step. shardcheck's predicted peak must never be below the real peak of any rank,
// and at most 10% above it; the moment it names must be the phase where the real peak happened.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "oracle_case.hpp"
#include "shardcheck/memory.hpp"
#include "shardcheck/preflight.hpp"

using namespace shardcheck;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kPeakRecords = fs::path(SHARDCHECK_FIXTURES_DIR) / "oracle2" / "peak";

MemoryEstimate predict(const json& c) {
  PreflightRequest req;
  req.rules_dir = SHARDCHECK_SOURCE_DIR "/rules";
  req.model = (kPeakRecords / "models" / c.at("model").get<std::string>()).string();
  req.defaults = test::settings_for(c);
  req.defaults.activation_checkpointing = {c.value("activation_checkpointing", false), "oracle"};
  req.versions.torch = Setting<Version>{test::parse_version(c.at("versions").at("torch").get<std::string>()), "oracle"};
  req.versions.transformers =
      Setting<Version>{test::parse_version(c.at("versions").at("transformers").get<std::string>()), "oracle"};
  req.versions.accelerate = Setting<Version>{Version{1, 14, 0}, "oracle"};
  req.memory.seq_len = c.at("tokens").get<std::int64_t>();
  req.memory.micro_batch = c.value("micro_batch", 1);
  req.memory.gradient_accumulation = c.value("grad_accum", 1);
  req.memory.loop = c.value("loop", "accelerate") == "trainer" ? TrainingLoop::trainer : TrainingLoop::accelerate;
  if (c.value("trainer", "") == "dpo") req.memory.reference = PreferenceReference::model;
  req.resolve.attn_implementation = "sdpa";
  req.resolve.load_dtype = c.value("load_dtype", "float32");
  PreflightResult r = run_preflight(req);
  REQUIRE_MESSAGE(r.plan.has_value(), test::errors_of(r.sink));
  return r.memory;
}

// The phase of the step a moment belongs to, in the oracle's words: its labels name the module whose
// hook ran last ("forward lm_head" is the loss computed after the head's forward).
std::string phase_of_real(const std::string& label) {
  if (label == "forward lm_head" || label.starts_with("loss forward")) return "loss forward";
  if (label == "backward loss") return "loss backward";
  if (label.starts_with("backward")) return "backward";
  if (label.starts_with("forward")) return "forward";
  return label;
}

std::string phase_of_predicted(const std::string& moment) {
  for (const char* p : {"loss forward", "loss backward", "reference forward", "optimizer step", "backward", "forward"})
    if (moment.starts_with(p)) return p;
  return moment;
}

}  // namespace

TEST_CASE("the predicted step peak is within 1.00-1.10x of real FSDP steps, at the same moment") {
  int cases = 0;
  for (const auto& entry : fs::directory_iterator(kPeakRecords)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    const json c = json::parse(in);
    if (c.contains("error")) continue;
    CAPTURE(entry.path().filename().string());
    std::uint64_t real = 0;
    std::string real_phase;
    for (const json& rank : c.at("ranks"))
      if (rank.at("peak").get<std::uint64_t>() > real) {
        real = rank.at("peak").get<std::uint64_t>();
        real_phase = rank.at("peak_phase").get<std::string>();
      }
    const MemoryEstimate m = predict(c);
    REQUIRE_MESSAGE(m.step.available, m.step.why_not);
    const double ratio = static_cast<double>(m.peak) / static_cast<double>(real);
    CAPTURE(real);
    CAPTURE(m.peak);
    CAPTURE(m.step.peak.name);
    CAPTURE(real_phase);
    if (std::getenv("SHARDCHECK_PEAK_PHASES"))  // each replayed phase's largest moment, to compare by hand
      for (const StepMoment& ph : m.step.moments)
        std::fprintf(stderr, "  %s: %s %llu\n", entry.path().stem().string().c_str(), ph.name.c_str(),
                     static_cast<unsigned long long>(ph.total()));
    if (std::getenv("SHARDCHECK_PEAK_TABLE"))  // the table docs/step-peak.md shows
      std::fprintf(stderr, "| %s | %llu | %s | %llu | %s | %.3f |\n", entry.path().stem().string().c_str(),
                   static_cast<unsigned long long>(real), real_phase.c_str(), static_cast<unsigned long long>(m.peak),
                   m.step.peak.name.c_str(), ratio);
    CHECK(ratio >= 1.0);
    CHECK(ratio <= 1.10);
    CHECK(phase_of_predicted(m.step.peak.name) == phase_of_real(real_phase));
    ++cases;
  }
  CHECK(cases >= 10);
}

TEST_CASE("activation checkpointing with the KV cache on is reported where real steps raise CheckpointError") {
  int cases = 0;
  for (const auto& entry : fs::directory_iterator(kPeakRecords)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    const json c = json::parse(in);
    if (!c.value("use_cache", false) || !c.value("activation_checkpointing", false)) continue;
    CAPTURE(entry.path().filename().string());
    REQUIRE(c.contains("error"));
    CHECK(c.at("error").at("type") == "CheckpointError");
    for (const bool trainer : {false, true}) {
      json variant = c;
      variant.erase("error");
      variant["loop"] = trainer ? "trainer" : "accelerate";
      PreflightRequest req;
      req.rules_dir = SHARDCHECK_SOURCE_DIR "/rules";
      req.model = (kPeakRecords / "models" / c.at("model").get<std::string>()).string();
      req.defaults = test::settings_for(variant);
      req.defaults.activation_checkpointing = {true, "oracle"};
      req.memory.loop = trainer ? TrainingLoop::trainer : TrainingLoop::accelerate;
      const PreflightResult r = run_preflight(req);
      bool reported = false;
      for (const auto& d : r.sink.items()) reported = reported || d.code == "PLAN034";
      // The Trainer sets config.use_cache = TrainingArguments.use_cache (false): no error there.
      CHECK(reported == !trainer);
    }
    ++cases;
  }
  CHECK(cases == 2);
}
