// tp-heads: tensor parallelism over a head count tp_size does not divide, which fails at the first
// forward.
#include <fmt/format.h>

#include "check/plan_check.hpp"
#include "shardcheck/tensor_parallel.hpp"

namespace shardcheck::checks {
namespace tp_heads {

constexpr FindingCode kCodes[] = {
    {"PLAN021", Severity::error, ExitCode::findings, "Tensor parallelism over a head count it does not divide",
     "With tp_size above 1 transformers shards the attention projections' output rows over the TP ranks "
     "(the model's colwise tp plan) without checking that each rank gets whole heads; the attention then "
     "reshapes its rows into heads at the first forward and fails. Real transformers 5.12.1 with "
     "tp_plan=\"auto\" and torch 2.14.1 on 2 ranks, with one key/value head of 10: \"RuntimeError: shape '[1, 5, "
     "-1, 10]' is invalid for input of size 25\". Use a tp_size that divides num_attention_heads and "
     "num_key_value_heads."},
};
constexpr const FindingCode& kHeadsNotDivided = kCodes[0];

// Tensor parallelism splits the attention projections' output rows over tp_size ranks (transformers'
// colwise plan), and the attention reshapes each rank's rows into heads at the first forward, which no
// load-time check catches. Real transformers 5.12.1 + torch 2.14.1 with tp_plan="auto" on 2 ranks and
// one key/value head of 10: "RuntimeError: shape '[1, 5, -1, 10]' is invalid for input of size 25"
// (the k_proj shard holds 5 rows; scripts/tp_heads_probe.py).
// Only where the plan cuts the attention projections' rows and leaves them cut: a plan whose q/k/v are
// kept whole (none at all: GPT-2, StableLM) or gathered back (colwise_gather_output: OLMo-2, Phi-3)
// hands the attention whole heads. Unknown plans (PLAN015) keep the check.
bool splits_attention_heads(const ModuleTree& tree) {
  if (!tree.tp_plan) return true;
  for (const Module& m : tree.modules)
    for (const auto& p : m.params) {
      if (p.name != "weight" ||
          !(m.name == "q_proj" || m.name == "k_proj" || m.name == "v_proj" || m.name == "qkv_proj"))
        continue;
      const ModuleTree::TpEntry* e = tp_entry_for(tree, m.path + ".weight");
      if (e && e->style.matrix_dim && !e->style.forward_all_gather) return true;
    }
  return false;
}

void run(const PlanContext& ctx, DiagnosticSink& sink) {
  if (!ctx.tensor_parallel || !ctx.model_config) return;
  const ModelConfig& config = *ctx.model_config;
  const ModuleTree& tree = ctx.tree;
  const FsdpSettings& s = ctx.settings;
  if (!splits_attention_heads(tree)) return;
  // The model's own head counts, else (a vision-language model, whose plan is its language model's)
  // its text_config's.
  auto integer = [&](const char* a, const char* b) -> std::optional<std::int64_t> {
    for (const char* k : {a, b})
      if (auto n = k ? config.int_field(config.effective_key(k)) : std::nullopt) return n;
    for (const char* k : {a, b})
      if (auto n = k ? config.int_field(std::string("text_config.") + k) : std::nullopt) return n;
    return std::nullopt;
  };
  const auto heads = integer("num_attention_heads", "n_head");
  if (!heads) return;
  const auto kv = integer("num_key_value_heads", nullptr).value_or(*heads);
  const int tp = s.tp_size.value;
  for (auto [what, n] : {std::pair{"num_attention_heads", *heads}, std::pair{"num_key_value_heads", kv}}) {
    if (n % tp == 0) continue;
    sink.report(setting_finding(
        kHeadsNotDivided, s.tp_size.source, tree.config_path,
        fmt::format("RuntimeError: shape '[batch, seq, -1, head_dim]' is invalid for input of size N at the first "
                    "forward: {} {} is not divisible by tp_size {}, so a rank's share of the projection rows is not a "
                    "whole number of heads",
                    what, n, tp),
        fmt::format("use a tp_size that divides both num_attention_heads ({}) and num_key_value_heads ({})", *heads,
                    kv)));
    return;
  }
}

}  // namespace tp_heads

extern const PlanCheck kTpHeads;
const PlanCheck kTpHeads{
    .name = "tp-heads",
    .codes = tp_heads::kCodes,
    .run = tp_heads::run,
};

}  // namespace shardcheck::checks
