// accelerate's own ParallelismConfig checks, run for real: fixtures/oracle2/accelerate/parallelism-config.json
// was written by scripts/parallelism_config_probe.py, which sets the environment as `accelerate launch`
// does for each case's parallelism_config keys and builds ParallelismConfig() as Accelerator does
// (accelerate 1.14.0). Linting an accelerate file with the same keys (FSDP2, num_processes the product
// of the sizes) must give an error exactly where accelerate raised, and none where it did not.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "lint_test_support.hpp"
#include "test_files.hpp"

using namespace shardcheck;
using nlohmann::json;

TEST_CASE("parallelism_config oracle: lint errors exactly where accelerate's ParallelismConfig raises") {
  const json rec = test::read_json(std::filesystem::path(SHARDCHECK_FIXTURES_DIR) / "oracle2" / "accelerate" /
                                   "parallelism-config.json");
  int raised = 0, accepted = 0;
  for (const json& c : rec.at("cases")) {
    const std::string name = c.at("case").get<std::string>();
    CAPTURE(name);
    std::string keys;
    long long processes = 1;
    for (const auto& [k, v] : c.at("parallelism_config").items()) {
      keys += "  parallelism_config_" + k + ": " +
              (v.is_string() ? v.get<std::string>() : std::to_string(v.get<int>())) + "\n";
      if (v.is_number() && v.get<int>() > 0) processes *= v.get<int>();
    }
    const std::string text =
        "compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nfsdp_config:\n  fsdp_version: 2\n"
        "machine_rank: 0\nnum_machines: 1\nnum_processes: " +
        std::to_string(processes) + "\nparallelism_config:\n" + keys;
    CAPTURE(text);
    const auto ds =
        lint_test::lint_text(text, lint_test::options(rec.at("versions").at("accelerate").get<std::string>().c_str()));
    const bool lint_error = lint_test::count_severity(ds, Severity::error) > 0;
    std::string codes;
    for (const auto& d : ds) codes += d.code + " ";
    CAPTURE(codes);
    if (c.at("error").is_null()) {
      CHECK_FALSE(lint_error);
      ++accepted;
    } else {
      const std::string message = c.at("error").at("message").get<std::string>();
      CAPTURE(message);
      CHECK(lint_error);
      // The rule that says what accelerate says.
      const std::pair<const char*, const char*> rule_for[] = {{"mutually exclusive", "parallelism-cp-sp-exclusive"},
                                                              {"pure data parallelism", "parallelism-tp-with-pure-dp"},
                                                              {"must be at least 1", "value-out-of-range"},
                                                              {"must be one of", "invalid-enum-value"}};
      bool named = false;
      for (const auto& [words, rule] : rule_for)
        if (message.find(words) != std::string::npos) {
          CHECK(lint_test::has_rule(ds, rule));
          named = true;
        }
      CHECK(named);
      ++raised;
    }
  }
  CHECK(raised >= 5);
  CHECK(accepted >= 4);
}
