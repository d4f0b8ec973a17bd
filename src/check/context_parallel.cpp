// context-parallel: context parallelism's failures that depend on the model and the sequence (FSDP2,
// cp_size > 1).
#include <fmt/format.h>

#include "check/plan_check.hpp"

namespace shardcheck::checks {
namespace context_parallel {

constexpr FindingCode kCodes[] = {
    {"PLAN026", Severity::error, ExitCode::findings, "Context parallelism with an attention other than SDPA",
     "torch's context parallelism (torch/distributed/tensor/experimental/_context_parallel/_attention.py, 2.14.1) "
     "replaces torch.nn.functional.scaled_dot_product_attention while the context is active and handles only the "
     "flash, memory-efficient and cuDNN SDPA kernels. transformers' Trainer (trainer.py, 5.12.1) refuses any "
     "other attn_implementation with `ValueError: Context parallelism is supported only with SDPA attention, you "
     "are using ...`; a script without the Trainer runs eager or flash_attention_2 attention on each rank's piece "
     "of the sequence alone, with no error and wrong results. Load the model with attn_implementation=\"sdpa\"."},
    {"PLAN027", Severity::error, ExitCode::findings, "A sequence length context parallelism cannot split evenly",
     "torch 2.14.1 context_parallel shards input_ids, labels and position_ids along the sequence with "
     "torch.chunk semantics (_context_parallel/_attention.py _context_parallel_buffers). When cp_size does not "
     "divide the sequence length the ranks hold pieces of different lengths and nothing checks it, but ring "
     "attention assumes equal pieces: every rank cuts the K/V buffers it receives to its own piece's size "
     "(`next_kv[: key.numel()].reshape(key.shape)`) and splits the all-gathered buffer into cp equal chunks, so "
     "the step fails or attends to the wrong tokens. Run for real on gloo with both rotate methods (seq 7 over "
     "2 ranks: fixtures/oracle2/cp/ring-s7-cp2-*-uneven.json) the first exchange aborts the rank holding the "
     "shorter piece. Pad or pack sequences to a multiple of 2 x cp_size."},
    {"PLAN028", Severity::warning, ExitCode::ok, "Context parallelism without load balancing",
     "torch 2.14.1 balances causal attention across context-parallel ranks only when the sequence length is a "
     "multiple of 2 x cp_size (_load_balancer.py _create_default_load_balancer: each rank then holds one chunk "
     "from the head and one from the tail of the sequence). Otherwise it silently turns load balancing off and "
     "splits the sequence into contiguous pieces: rank r attends its own piece under the causal mask (half a "
     "block) and the r pieces before it in full (_is_causal_behavior skips the later ones), so the last rank does "
     "2 x cp - 1 times the attention work of the first and every step waits for it. Pad or pack "
     "sequences to a multiple of 2 x cp_size."},
    {"PLAN029", Severity::error, ExitCode::findings, "Context parallelism on a torch before 2.6",
     "accelerate's TorchContextParallelConfig (utils/dataclasses.py, 1.14.0) refuses context parallelism on torch "
     "before 2.6.0 (`ValueError: FSDP2-based Context parallelism is only available in PyTorch 2.6.0 and later "
     "versions.`) when the ParallelismConfig is built, before anything is loaded. Upgrade torch or drop cp_size."},
    {"PLAN032", Severity::warning, ExitCode::ok, "Context parallelism on a model with sliding-window attention",
     "accelerate 1.14.0 prepares context parallelism by hooking every module whose name ends in `self_attn` "
     "(big_modeling.py _attach_context_parallel_hooks): the hook replaces attention_mask by None and sets "
     "is_causal=True, because torch's ring attention takes no mask. Its docstring promises an error for masks "
     "that are not causal; the code raises none. Sliding-window layers (Mistral with a sliding_window, Gemma-2/3, "
     "Cohere-2, Qwen2/3 with use_sliding_window) then attend to the whole causal context: the job trains another "
     "model than the one it loads, without a word."},
};
constexpr const FindingCode& kNotSdpa = kCodes[0];
constexpr const FindingCode& kUneven = kCodes[1];
constexpr const FindingCode& kUnbalanced = kCodes[2];
constexpr const FindingCode& kOldTorch = kCodes[3];
constexpr const FindingCode& kSlidingWindow = kCodes[4];

void run(const PlanContext& ctx, DiagnosticSink& sink) {
  const ModuleTree& tree = ctx.tree;
  const FsdpSettings& s = ctx.settings;
  const MemoryOptions& opts = ctx.memory;
  const int cp = s.context_parallel();
  if (cp <= 1) return;
  if (!tree.attn_implementation.empty() && tree.attn_implementation != "sdpa")
    sink.report(model_setting_finding(
        kNotSdpa, s.cp_size.source, tree.config_path,
        fmt::format("ValueError: Context parallelism is supported only with SDPA attention, you are using {}. "
                    "(transformers Trainer; without it each of the {} CP ranks attends within its own piece of "
                    "the sequence)",
                    tree.attn_implementation, cp),
        "load the model with attn_implementation=\"sdpa\" (--attn-implementation sdpa)"));
  // accelerate 1.14.0 utils/dataclasses.py TorchContextParallelConfig.__post_init__
  // (BETA_CP_AVAILABLE_PYTORCH_VERSION).
  if (s.torch_version.value < Version{2, 6, 0})
    sink.report(model_setting_finding(
        kOldTorch, s.cp_size.source, tree.config_path,
        fmt::format("ValueError: FSDP2-based Context parallelism is only available in PyTorch 2.6.0 and later "
                    "versions. Please upgrade your PyTorch version. (torch {} from {})",
                    s.torch_version.value.str(), s.torch_version.source),
        "install torch 2.6.0 or later, or drop cp_size"));
  // accelerate 1.14.0 big_modeling.py _attach_context_parallel_hooks: every `*self_attn` module gets
  // attention_mask=None, is_causal=True, so sliding-window layers attend to the whole context.
  const auto masked = tree.activations.find("mask_layers");
  const auto from = tree.activations.find("mask_from_tokens");
  if (masked != tree.activations.end() && masked->second > 0 &&
      // (a sequence no longer than the window: the sliding mask is the causal one, nothing changes)
      (!opts.seq_len || from == tree.activations.end() || *opts.seq_len > from->second))
    sink.report(model_setting_finding(
        kSlidingWindow, s.cp_size.source, tree.config_path,
        fmt::format("context parallelism drops the attention mask of every layer: {} sliding-window layer(s) of {} "
                    "attend to the whole causal context instead of their window{}",
                    masked->second, tree.architecture,
                    from != tree.activations.end() ? fmt::format(" of {} tokens", from->second) : std::string()),
        "train without cp_size, or accept full attention in those layers (it changes the model)"));
  if (!opts.seq_len) return;
  const std::int64_t n = *opts.seq_len;
  if (n % cp != 0) {
    const std::int64_t piece = chunk_size(n, cp);
    Diagnostic d = model_setting_finding(
        kUneven, s.cp_size.source, tree.config_path,
        fmt::format("a sequence of {} tokens over cp_size {} splits into pieces of {} and {} tokens, and ring "
                    "attention exchanges keys and values as if every piece were the same size{}",
                    fmt::group_digits(n), cp, fmt::group_digits(piece), fmt::group_digits(chunk_real(n, piece, cp - 1)),
                    opts.seq_len_is_cap ? " (the training arguments' max_length: batches padded to their own longest "
                                          "sequence have other lengths)"
                                        : ""),
        fmt::format("pad or pack sequences to a multiple of {} (2 x cp_size)", 2 * cp));
    // A cap says nothing certain about the batches' lengths: a warning then.
    sink.report(opts.seq_len_is_cap ? milder(std::move(d), Severity::warning) : std::move(d));
  } else if (n % (std::int64_t{2} * cp) != 0) {
    sink.report(model_setting_finding(
        kUnbalanced, s.cp_size.source, tree.config_path,
        fmt::format("a sequence of {} tokens is not a multiple of 2 x cp_size ({}): torch turns context parallelism's "
                    "load balancing off, and the last of the {} CP ranks does {} times the causal attention work of "
                    "the first",
                    fmt::group_digits(n), 2 * cp, cp, 2 * cp - 1),
        fmt::format("pad or pack sequences to a multiple of {}", 2 * cp)));
  }
}

}  // namespace context_parallel

extern const PlanCheck kContextParallel;
const PlanCheck kContextParallel{
    .name = "context-parallel",
    .codes = context_parallel::kCodes,
    .run = context_parallel::run,
};

}  // namespace shardcheck::checks
