// lora-under-tp: LoRA on layers transformers split for tensor parallelism, which the releases of the
// stack handle differently.
#include <fmt/format.h>

#include <algorithm>

#include "check/plan_check.hpp"
#include "shardcheck/tensor_parallel.hpp"

namespace shardcheck::checks {
namespace lora_under_tp {

constexpr FindingCode kCodes[] = {
    {"PLAN030", Severity::error, ExitCode::findings, "LoRA on a tensor-parallel model before transformers 5.4",
     "peft (tuners/lora/model.py _create_and_replace, 0.20) gives a LoRA layer's adapters the tensor-parallel "
     "plan of the layer transformers loaded with one (lora_B of a colwise layer, lora_A of a rowwise one), using "
     "transformers' add_tensor_parallel_hooks_to_module, which transformers 5.4.0 introduced. With an older "
     "transformers get_peft_model raises `RuntimeError: The base model is tensor-parallel sharded but the "
     "installed version of Transformers does not support LoRA with Tensor Parallelism.` Upgrade transformers."},
    {"PLAN031", Severity::error, ExitCode::findings, "LoRA on a tensor-parallel model before peft 0.19",
     "peft 0.19.0 (#3079) gives the adapters of a layer transformers split for tensor parallelism the matching "
     "plan: lora_B of a colwise layer is cut by rows and hooked like it, lora_A of a rowwise layer by columns. "
     "Older releases build the adapters from the split layer's local sizes with no hooks, and nothing fails: a "
     "rowwise layer's adapter adds a partial sum no rank reduces, so the TP ranks' outputs differ, and a colwise "
     "layer's lora_A gets a different gradient on every rank (run for real with peft 0.18.1 and 0.20: "
     "fixtures/oracle2/tp/lora-ranks-*.json). The TP ranks then train different models. Upgrade peft."},
    {"PLAN033", Severity::error, ExitCode::findings, "LoRA on a tensor-parallel layer with a bias",
     "transformers 5.12.1 updates a split nn.Linear's in_features/out_features (integrations/tensor_parallel.py "
     "update_module_attributes) once for every parameter it shards, the bias included: a colwise or rowwise "
     "layer with a bias ends with the attribute cut twice (out_features 15 for a 60-row weight over 2 ranks) "
     "while its weight is cut once. peft creates a LoRA layer's adapters from those attributes, so lora_B of "
     "a colwise layer (or lora_A of a rowwise one) is half the size it must be and the first forward fails "
     "(run for real with peft 0.20: GPT-NeoX's query_key_value `The size of tensor a (30) must match the size of "
     "tensor b (15)`, its dense `mat1 and mat2 shapes cannot be multiplied`, Qwen2's q_proj; "
     "fixtures/oracle2/tp/lora-ranks-*). Layers without a bias (Llama's) are cut once and work."},
};
constexpr const FindingCode& kTransformersBefore54 = kCodes[0];
constexpr const FindingCode& kPeftBefore019 = kCodes[1];
constexpr const FindingCode& kBiasCutTwice = kCodes[2];

// LoRA on layers transformers split for tensor parallelism (peft tuners/lora/model.py
// _create_and_replace): a layer whose base_layer carries a TP plan.
void run(const PlanContext& ctx, DiagnosticSink& sink) {
  if (!ctx.tensor_parallel || !ctx.tree.peft) return;
  const ModuleTree& tree = ctx.tree;
  const FsdpSettings& s = ctx.settings;
  const StackVersions& versions = ctx.versions;
  std::string split;
  for (const Module& m : tree.modules)
    if (m.cls.starts_with("lora.") && tp_module_entry(tree, m.path + ".base_layer")) {
      split = m.path;
      break;
    }
  if (split.empty()) return;  // no adapter on a split layer: peft neither checks nor needs anything
  // transformers 5.12.1 rewrites a split layer's in_features/out_features once per parameter it cuts
  // (integrations/tensor_parallel.py update_module_attributes, called for weight and bias alike), so a
  // layer with a bias ends at a quarter of its size for tp 2 while its weight holds half; peft builds
  // the adapters from those attributes, and the first forward fails (fixtures/oracle2/tp/lora-ranks-*-*:
  // GPT-NeoX query_key_value and dense, Qwen2 q_proj).
  const Version& tf_version = s.transformers_version.value;
  if (tf_version >= Version{5, 0, 0} && tf_version <= Version{5, 12, 1})
    for (const Module& m : tree.modules) {
      if (!m.cls.starts_with("lora.") || m.children.empty()) continue;
      const Module& base = tree.modules[static_cast<std::size_t>(m.children.front())];
      const ModuleTree::TpEntry* e = tp_module_entry(tree, base.path);
      const bool biased = std::any_of(base.params.begin(), base.params.end(),
                                      [](const ParamInfo& p) { return p.name == "bias" && !p.buffer; });
      if (!e || !biased || (e->style.name != "colwise" && e->style.name != "rowwise")) continue;
      const bool colwise = e->style.name == "colwise";
      sink.report(model_setting_finding(
          kBiasCutTwice, s.tp_size.source, tree.config_path,
          fmt::format("RuntimeError at the first forward: LoRA on '{}', a {} layer with a bias: transformers {} cuts "
                      "its {} once for the weight and again for the bias, and peft builds the adapter's {} from "
                      "that attribute, so the adapter's output does not match the layer's",
                      m.path, e->style.name, tf_version.str(), colwise ? "out_features" : "in_features",
                      colwise ? "lora_B rows" : "lora_A columns"),
          "target only the split layers without a bias, or train the adapter without tp_size"));
      break;  // one finding: every such layer fails the same way
    }
  const bool old_peft = versions.peft && versions.peft->value < Version{0, 19, 0};
  if (old_peft) {
    // peft 0.19.0 (#3079 "LoRA support for Transformers TP") gave the adapters of tensor-parallel layers
    // their own plans; before it they get none, and nothing says so (fixtures/oracle2/tp/lora-ranks-*.json:
    // with peft 0.18.1 a rowwise layer's adapter adds an unreduced partial sum, so the TP ranks' logits
    // differ, and a colwise layer's lora_A gets a different gradient on every rank).
    sink.report(model_setting_finding(
        kPeftBefore019, versions.peft->source, tree.config_path,
        fmt::format("peft {} gives the LoRA adapters of tensor-parallel layers ({}, ...) no tensor-parallel plan: "
                    "their outputs and gradients are not reduced across the {} TP ranks, which then train different "
                    "models without an error",
                    versions.peft->value.str(), split, s.tp_size.value),
        "install peft 0.19.0 or later, or train the adapter without tp_size"));
    return;
  }
  const Version& tf = s.transformers_version.value;
  if (tf >= Version{5, 0, 0} && tf < Version{5, 4, 0})
    // peft 0.19+ refuses before it builds the adapter (is_transformers_ge_v5_4_0).
    sink.report(model_setting_finding(
        kTransformersBefore54, s.tp_size.source, tree.config_path,
        fmt::format("RuntimeError: The base model is tensor-parallel sharded but the installed version of "
                    "Transformers does not support LoRA with Tensor Parallelism. Please upgrade to transformers >= "
                    "5.4.0. (transformers {} from {}; LoRA on {})",
                    tf.str(), s.transformers_version.source, split),
        "install transformers 5.4.0 or later, or train the adapter without tp_size"));
}

}  // namespace lora_under_tp

extern const PlanCheck kLoraUnderTp;
const PlanCheck kLoraUnderTp{
    .name = "lora-under-tp",
    .codes = lora_under_tp::kCodes,
    .run = lora_under_tp::run,
};

}  // namespace shardcheck::checks
