// rules/accelerate/schema.yaml against accelerate's source: each case is a fact read from the tagged
// release named beside it (huggingface/accelerate, src/accelerate/...), not from shardcheck's output.
// The audit behind them diffed every schema key and enum value over the tags v0.20.0..v1.14.0 and main
// @16cb6eb8 (see the commit that added this file).
#include <doctest/doctest.h>

#include "lint_test_support.hpp"

using namespace shardcheck;

namespace {

bool has(const std::vector<Diagnostic>& ds, const std::string& rule, Severity s) {
  for (const auto& d : ds)
    if (d.code == rule && d.severity == s) return true;
  return false;
}

std::vector<Diagnostic> lint(const std::string& body, const char* version) {
  return lint_test::lint_text("compute_environment: LOCAL_MACHINE\n" + body, lint_test::options(version));
}

}  // namespace

TEST_CASE("schema audit: fsdp_activation_checkpointing_offload exists in no release") {
  // v1.14.0 and main: no FSDP_ACTIVATION_CHECKPOINTING_OFFLOAD in utils/launch.py, no --fsdp_* option for
  // it in commands/launch.py, no read in utils/dataclasses.py: launch.py copies it onto args and nothing
  // exports it, so it is silently ignored.
  const auto ds =
      lint("distributed_type: FSDP\nfsdp_config:\n  fsdp_activation_checkpointing_offload: true\n", "1.14.0");
  CHECK(has(ds, "unknown-nested-key", Severity::warning));
  CHECK(lint_test::schema().fsdp_key("fsdp_activation_checkpointing_offload") == nullptr);
}

TEST_CASE("schema audit: debug is a BaseConfig field from v0.22.0") {
  // v0.21.0 commands/config/config_args.py: BaseConfig has no `debug`, and from_yaml_file ends in
  // cls(**config_dict), so the key is a TypeError; v0.22.0 adds `debug: bool`.
  CHECK(has(lint("distributed_type: 'NO'\ndebug: false\n", "0.21.0"), "key-not-in-version", Severity::error));
  CHECK_FALSE(lint_test::has_rule(lint("distributed_type: 'NO'\ndebug: false\n", "0.22.0"), "key-not-in-version"));
}

TEST_CASE("schema audit: DistributedType members per release") {
  // utils/dataclasses.py DistributedType: MULTI_NPU from v0.21.0, MULTI_MLU from v0.29.0, MULTI_MUSA from
  // v0.33.0; TPU renamed XLA in v0.28.0; TP from v1.4.0 to v1.9.x (gone in v1.10.0).
  CHECK(lint_test::has_rule(lint("distributed_type: MULTI_MLU\n", "0.28.0"), "invalid-enum-value"));
  CHECK_FALSE(lint_test::has_rule(lint("distributed_type: MULTI_MLU\n", "0.29.0"), "invalid-enum-value"));
  CHECK(lint_test::has_rule(lint("distributed_type: MULTI_MUSA\n", "0.32.0"), "invalid-enum-value"));
  CHECK(lint_test::has_rule(lint("distributed_type: XLA\n", "0.27.0"), "invalid-enum-value"));
  CHECK_FALSE(lint_test::has_rule(lint("distributed_type: TPU\n", "0.27.0"), "invalid-enum-value"));
  CHECK(lint_test::has_rule(lint("distributed_type: TPU\n", "0.28.0"), "invalid-enum-value"));
  CHECK_FALSE(lint_test::has_rule(lint("distributed_type: TP\n", "1.5.0"), "invalid-enum-value"));
  CHECK(lint_test::has_rule(lint("distributed_type: TP\n", "1.10.0"), "invalid-enum-value"));
}

TEST_CASE("schema audit: dynamo backends and sharding strategies per release") {
  // DynamoBackend: NVFUSER/AOT_NVFUSER/AOT_CUDAGRAPHS until v0.23.x, TVM and TENSORRT from v0.24.0,
  // the TORCHXLA backends from v0.32.0. utils/constants.py: HYBRID_SHARD(_ZERO2) from v0.21.0.
  const std::string fsdp = "distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: HYBRID_SHARD\n";
  CHECK(lint_test::has_rule(lint("distributed_type: 'NO'\ndynamo_config:\n  dynamo_backend: TVM\n", "0.23.0"),
                            "invalid-enum-value"));
  CHECK_FALSE(lint_test::has_rule(lint("distributed_type: 'NO'\ndynamo_config:\n  dynamo_backend: TVM\n", "0.24.0"),
                                  "invalid-enum-value"));
  CHECK_FALSE(lint_test::has_rule(lint("distributed_type: 'NO'\ndynamo_config:\n  dynamo_backend: NVFUSER\n", "0.23.0"),
                                  "invalid-enum-value"));
  CHECK(lint_test::has_rule(lint("distributed_type: 'NO'\ndynamo_config:\n  dynamo_backend: NVFUSER\n", "0.24.0"),
                            "invalid-enum-value"));
  CHECK(lint_test::has_rule(lint(fsdp, "0.20.0"), "invalid-enum-value"));
}

TEST_CASE("schema audit: keys that arrived after v0.20.0") {
  // dynamo_use_regional_compilation: --dynamo_use_regional_compilation from v1.7.0; deepspeed_moe_layer_cls_names
  // from v0.30.0; fp8 pad_inner_dim / enable_fsdp_float8_all_gather (AORecipeKwargs) from v1.13.0.
  CHECK(has(lint("distributed_type: 'NO'\ndynamo_config:\n  dynamo_use_regional_compilation: true\n", "1.6.0"),
            "key-not-in-version", Severity::warning));
  CHECK(has(lint("distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_moe_layer_cls_names: X\n", "0.29.0"),
            "key-not-in-version", Severity::warning));
  CHECK(has(lint("distributed_type: 'NO'\nmixed_precision: fp8\nfp8_config:\n  pad_inner_dim: true\n", "1.12.0"),
            "key-not-in-version", Severity::warning));
}

TEST_CASE("schema audit: fp8 keys under the names the plugins read") {
  // launch.py --fp8_amax_history_len / --fp8_amax_compute_algo / --fp8_opt_level, exported by setup_fp8_env
  // as ACCELERATE_FP8_<NAME> and read by TERecipeKwargs / MSAMPRecipeKwargs (utils/dataclasses.py,
  // v0.34.0..v1.14.0). `accelerate config` writes amax_history_length (commands/config/cluster.py), which is
  // exported as ACCELERATE_FP8_AMAX_HISTORY_LENGTH and read by nothing.
  const std::string good =
      "distributed_type: 'NO'\nmixed_precision: fp8\nfp8_config:\n  backend: TE\n  amax_history_len: 16\n"
      "  amax_compute_algo: max\n  opt_level: O2\n";
  CHECK_FALSE(lint_test::has_rule(lint(good, "1.14.0"), "unknown-nested-key"));
  const auto ds =
      lint("distributed_type: 'NO'\nmixed_precision: fp8\nfp8_config:\n  amax_history_length: 16\n", "1.14.0");
  CHECK(has(ds, "unknown-nested-key", Severity::warning));
}
