// qlora-releases: FSDP + QLoRA with a release below what peft's FSDP+QLoRA guide requires
// (rules/peft.yaml fsdp_qlora_requires).
#include <fmt/format.h>

#include <utility>
#include <vector>

#include "check/plan_check.hpp"

namespace shardcheck::checks {
namespace qlora_releases {

constexpr FindingCode kCodes[] = {
    {"PEFT011", Severity::warning, ExitCode::ok, "FSDP + QLoRA with a release below peft's guide",
     "peft's FSDP+QLoRA guide (docs/source/accelerate/fsdp.md) lists the first releases that shard 4-bit "
     "weights under FSDP: bitsandbytes >= 0.43.3 (the floating bnb_4bit_quant_storage), accelerate >= 1.0.1, "
     "transformers > 4.44.2, trl > 0.11.4 and peft > 0.13.0 (rules/peft.yaml). A version known from a flag "
     "or the job's Python environment below one of them gets this warning; shardcheck did not run those "
     "releases, so it says what the guide says rather than predict the failure."},
};
constexpr const FindingCode& kBelowGuide = kCodes[0];

void run(const ReleaseContext& ctx, DiagnosticSink& sink) {
  if (!ctx.peft_rules || !ctx.tree.quantized_4bit()) return;
  const StackVersions& v = ctx.versions;
  const std::string& fallback_file = ctx.accelerate_config.value_or(ctx.tree.config_path);
  const std::vector<std::pair<std::string, std::optional<Setting<Version>>>> known = {{"bitsandbytes", v.bitsandbytes},
                                                                                      {"accelerate", v.accelerate},
                                                                                      {"transformers", v.transformers},
                                                                                      {"trl", v.trl},
                                                                                      {"peft", v.peft}};
  for (const auto& [package, version] : known) {
    const auto req = ctx.peft_rules->fsdp_qlora_requires.find(package);
    if (!version || req == ctx.peft_rules->fsdp_qlora_requires.end() || version->source == "default") continue;
    const auto& [op, min] = req->second;
    const bool ok = op == ">=" ? !(version->value < min) : min < version->value;
    if (ok) continue;
    sink.report(setting_finding(kBelowGuide, version->source, fallback_file,
                                fmt::format("{} {} is below what peft's FSDP+QLoRA guide requires ({} {}{})", package,
                                            version->value.str(), package, op, min.str()),
                                "upgrade it; the guide's releases are the first with FSDP support for 4-bit weights"));
  }
}

}  // namespace qlora_releases

extern const ReleaseCheck kQloraReleases;
const ReleaseCheck kQloraReleases{
    .name = "qlora-releases",
    .codes = qlora_releases::kCodes,
    .run = qlora_releases::run,
};

}  // namespace shardcheck::checks
