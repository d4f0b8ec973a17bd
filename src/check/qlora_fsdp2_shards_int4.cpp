// qlora-fsdp2-shards-int4: FSDP2 shards bitsandbytes' integer-stored 4-bit weights before accelerate
// 1.14. Reproduced by fixtures/peft-oracle.
#include <fmt/format.h>

#include "check/plan_check.hpp"
#include "shardcheck/quantization.hpp"

namespace shardcheck::checks {
namespace qlora_fsdp2_shards_int4 {

constexpr FindingCode kCodes[] = {
    {"PEFT015", Severity::warning, ExitCode::ok, "FSDP2 shards integer-stored 4-bit weights before accelerate 1.14",
     "accelerate before 1.14 passes bitsandbytes' Params4bit of an integer bnb_4bit_quant_storage (uint8, the "
     "default) to fully_shard like any parameter; 1.14 (PR #3987) leaves them out, whole on every rank, "
     "because sharding them crashed QLoRA runs. shardcheck plans what the release builds (checked with "
     "accelerate 1.13.0 on CPU, fixtures/peft-oracle/*-acc113-*, where a step ran) and warns: upgrade "
     "accelerate, or use a floating bnb_4bit_quant_storage equal to the load dtype."},
};
constexpr const FindingCode& kShardsInt4 = kCodes[0];

// Before accelerate 1.14, fsdp2_prepare_model hands integer-stored Params4bit to fully_shard like any
// parameter (PR #3987 "Auto-exclude non-floating frozen Params4bit from fully_shard to prevent QLoRA
// crash" excluded them in 1.14). The oracle ran accelerate 1.13.0 so on CPU with bitsandbytes' CPU
// backend (fixtures/peft-oracle/*-acc113-*): the layout below is what it builds and a step ran; the
// crash the PR fixes was reported on GPUs, so this is a warning.
void run(const PlanContext& ctx, DiagnosticSink& sink) {
  const ModuleTree& tree = ctx.tree;
  const FsdpSettings& s = ctx.settings;
  if (!tree.peft || ctx.wrap_failed) return;
  if (ctx.plan.fsdp_version != 2 || !tree.bnb_4bit || dtype_is_floating(tree.bnb_4bit->quant_storage) ||
      s.accelerate_version.value >= Version{1, 14, 0})
    return;
  sink.report(finding(
      kShardsInt4, in_file(tree.config_path),
      fmt::format(
          "accelerate {} shards bitsandbytes' {}-stored 4-bit weights with FSDP2 (fully_shard turns each Params4bit "
          "into a plain DTensor); accelerate 1.14 leaves them whole on every rank because that crashed QLoRA runs",
          s.accelerate_version.value.str(), dtype_name(tree.bnb_4bit->quant_storage)),
      "upgrade accelerate to 1.14, or set bnb_4bit_quant_storage to the dtype the model is loaded in (e.g. "
      "bfloat16), as peft's FSDP+QLoRA guide does"));
}

}  // namespace qlora_fsdp2_shards_int4

extern const PlanCheck kQloraFsdp2ShardsInt4;
const PlanCheck kQloraFsdp2ShardsInt4{
    .name = "qlora-fsdp2-shards-int4",
    .codes = qlora_fsdp2_shards_int4::kCodes,
    .run = qlora_fsdp2_shards_int4::run,
};

}  // namespace shardcheck::checks
