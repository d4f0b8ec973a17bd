// Every architecture's tensor-parallel plan in rules/models/ is the one transformers 5.12.1 declares:
// fixtures/oracle2/tp/plans.json was recorded from the installed transformers by scripts/tp_plans.py
// (the config class's base_model_tp_plan and the head class's _tp_plan, per model_type).
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "shardcheck/registry.hpp"
#include "test_files.hpp"

using namespace shardcheck;
using nlohmann::json;

namespace {

using Plan = std::map<std::string, std::string>;

Plan as_map(const std::vector<std::pair<std::string, std::string>>& entries) {
  Plan out;
  for (const auto& [k, v] : entries) out[k] = v;
  return out;
}

}  // namespace

TEST_CASE("registry tp_plan: each architecture's plan is transformers 5.12.1's") {
  const json rec = test::read_json(std::filesystem::path(SHARDCHECK_FIXTURES_DIR) / "oracle2" / "tp" / "plans.json");
  CHECK(rec.at("transformers") == "5.12.1");
  DiagnosticSink sink;
  const auto reg = Registry::load(SHARDCHECK_SOURCE_DIR "/rules", sink);
  REQUIRE(reg.has_value());
  int with_plan = 0, composite = 0, with_ep = 0;
  for (const auto& [model_type, r] : rec.at("models").items()) {
    CAPTURE(model_type);
    const ArchSpec* arch = reg->find(model_type);
    REQUIRE(arch != nullptr);
    // The expert-parallel plan (base_model_ep_plan), where the config class has one.
    if (r.contains("ep_base")) {
      REQUIRE(arch->ep_plan.has_value());
      CHECK(as_map(arch->ep_plan->base) == r.at("ep_base").get<Plan>());
      ++with_ep;
    } else {
      CHECK_FALSE(arch->ep_plan.has_value());
    }
    if (r.value("head_class", json()).is_null()) {
      // A sub-model type (a VLM's text or vision model): its config's base plan, which the composite
      // gathers under the sub-model's path.
      if (r.at("base").is_null()) {
        CHECK((!arch->tp_plan.has_value() || arch->tp_plan->base.empty()));
      } else {
        REQUIRE(arch->tp_plan.has_value());
        CHECK(as_map(arch->tp_plan->base) == r.at("base").get<Plan>());
      }
      continue;
    }
    // A vision-language model (its registry root is a *ForConditionalGeneration).
    const bool composite_model =
        !arch->architectures.empty() && arch->architectures.front().ends_with("ForConditionalGeneration");
    if (composite_model) {
      // Composite models have no plan of their own: they collect their sub-models' (module_tree.cpp).
      CHECK_FALSE(arch->tp_plan.has_value());
      ++composite;
      continue;
    }
    REQUIRE(arch->tp_plan.has_value());
    const Plan want_base = r.at("base").is_null() ? Plan{} : r.at("base").get<Plan>();
    CHECK(as_map(arch->tp_plan->base) == want_base);
    CHECK(as_map(arch->tp_plan->head) == r.at("head").get<Plan>());
    for (const auto& [pattern, style] : arch->tp_plan->base) CHECK(reg->find_tp_style(style) != nullptr);
    with_plan += !want_base.empty();
  }
  CHECK(with_plan >= 29);  // the loop really compared the plans (29 model_types have one in 5.12.1)
  CHECK(composite >= 8);
  CHECK(with_ep == 2);  // gpt_oss and qwen3_moe
}
