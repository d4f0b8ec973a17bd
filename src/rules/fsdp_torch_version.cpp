// fsdp-torch-version: FSDP/FSDP2 features newer than the installed torch.
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {
namespace fsdp_torch_version {
void check(LintContext& ctx);
}

extern const Rule kFsdpTorchVersion;
const Rule kFsdpTorchVersion{
    .id = "fsdp-torch-version",
    .severity = Severity::error,
    .summary = "The installed torch is too old for the FSDP settings",
    .explanation =
        "utils/constants.py (v1.14.0): FSDP_PYTORCH_VERSION = \"2.1.0.a0+32f93b1\" and FSDP2_PYTORCH_VERSION = "
        "\"2.6.0\". "
        "The Accelerator raises `ValueError: FSDP requires PyTorch >= 2.1.0.a0+32f93b1` and the plugin `ImportError: "
        "FSDP2 requires PyTorch >= 2.6.0`; fsdp_ignored_modules with FSDP2 needs torch 2.7 and is otherwise dropped "
        "with a warning. Checked only when the torch version is known (--torch-version, or --python-env).",
    .fix = "",
    .check = fsdp_torch_version::check,
};

namespace fsdp_torch_version {
void check(LintContext& ctx) {
  if (!ctx.is_fsdp() || !ctx.opts.torch) return;
  const Version& torch = *ctx.opts.torch;
  if (torch < Version{2, 1, 0}) {
    ctx.report(kFsdpTorchVersion, ctx.file_location(),
               fmt::format("torch {} is too old for FSDP: accelerate fails with `ValueError: FSDP requires PyTorch >= "
                           "2.1.0.a0+32f93b1`",
                           torch.str()),
               "upgrade torch to 2.1 or later");
    return;
  }
  if (ctx.fsdp_version() != 2) return;
  const YamlEntry* v = ctx.fsdp("fsdp_version");
  if (torch < Version{2, 6, 0})
    ctx.report(kFsdpTorchVersion, ctx.doc.value_location(*v),
               fmt::format("`fsdp_version: 2` needs torch 2.6.0, found {}: accelerate fails with `ImportError: FSDP2 "
                           "requires PyTorch >= 2.6.0`",
                           torch.str()),
               "upgrade torch, or use fsdp_version 1");
  else if (const YamlEntry* ign = ctx.fsdp("fsdp_ignored_modules"); ign && torch < Version{2, 7, 0})
    ctx.report(kFsdpTorchVersion, Severity::warning, ctx.doc.key_location(*ign),
               fmt::format("`{}` needs torch 2.7 with FSDP2, found {}: accelerate drops it with a warning", ign->key,
                           torch.str()),
               "upgrade torch to 2.7");
}
}  // namespace fsdp_torch_version

}  // namespace shardcheck::rules
