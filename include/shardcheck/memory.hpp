#pragma once
// Stage "simulate": per-rank memory and per-step communication of a shard plan. Byte counts follow
// the buffers FSDP allocates; the transient
// peak is a logical lower bound (CPU issue order and the all-gather rate limiter, not the CUDA
// caching allocator), and is labelled an estimate wherever it is shown.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shardcheck/module_tree.hpp"
#include "shardcheck/optimizers.hpp"
#include "shardcheck/settings.hpp"
#include "shardcheck/shard_plan.hpp"

namespace shardcheck {

// The training loop around the step, which decides how long the logits live (docs/step-peak.md).
enum class TrainingLoop {
  accelerate,  // `outputs = model(**batch)`: the logits live on until the next forward returns
  trainer,     // transformers' Trainer / TRL: compute_loss returns the loss alone
};

// Bytes of optimizer state for `numel` trainable elements of dtype `d`.
std::uint64_t optimizer_state_bytes(const OptimizerModel& o, std::int64_t numel, DType d);

struct MemoryOptions;
// The loop the job runs: the Trainer's when the options say so or the settings say the Trainer
// prepares the model (--caller trainer, the default with an adapter), else a plain accelerate loop.
TrainingLoop training_loop(const MemoryOptions& opts, const FsdpSettings& s);
// Whether activation checkpointing is transformers' gradient_checkpointing (the recipe set it), not
// accelerate's fsdp_activation_checkpointing.
bool checkpointing_by_transformers(const FsdpSettings& s, const MemoryOptions& opts);

// Where a preference trainer's reference log-probs come from (TRL v1.9.0 DPOTrainer.__init__ and
// _compute_loss, trl/trainer/dpo_trainer.py). `none`: not a preference trainer.
enum class PreferenceReference {
  none,
  model,             // a second copy of the model, sharded by trl/models/utils.py prepare_fsdp, run each step
  adapter_disabled,  // a PEFT model: the policy itself with its adapter turned off, run each step
  precomputed,       // precompute_ref_log_probs: read from the dataset, no reference forward in the step
};
const char* reference_name(PreferenceReference r);  // "model", "adapter_disabled", ...

struct MemoryOptions {
  std::uint64_t gpu_memory = 80ull << 30;  // --gpu-memory, bytes
  // What `gpu_memory` is: a preset's name ("h100-80gb"), or empty for a size given as such. `gpu_assumed`:
  // neither --gpu nor --gpu-memory was given, so every verdict says which GPU it assumed.
  std::string gpu_name;
  bool gpu_assumed = false;
  OptimizerModel optimizer;
  TrainingLoop loop = TrainingLoop::accelerate;
  int gradient_accumulation = 1;  // micro-batches per optimizer step
  // The loss never builds the logits (Liger's fused linear cross-entropy): none of the T x V tensors.
  bool fused_loss = false;
  // TRL's DPO (`--trainer dpo`): each sample is a chosen and a rejected sequence, run as one batch of
  // 2 x micro_batch rows (DataCollatorForPreference concatenates them); log-probs instead of a
  // cross-entropy; the reference's log-probs from `reference`.
  PreferenceReference reference = PreferenceReference::none;
  bool preference() const { return reference != PreferenceReference::none; }
  // Rows of one forward: the micro-batch, doubled for a preference trainer's chosen and rejected.
  std::int64_t rows() const { return micro_batch.value_or(1) * (preference() ? 2 : 1); }
  // The source of the recipe's gradient_checkpointing ("FILE:LINE"), when a training-arguments file set
  // it: where the activation_checkpointing setting has this source, transformers checkpoints whole
  // decoder layers (GradientCheckpointingLayer) and turns the KV cache off, not accelerate.
  std::string recipe_checkpointing_source;
  // Activations are estimated only when both are given (--seq-len, --micro-batch).
  std::optional<std::int64_t> seq_len;
  std::optional<std::int64_t> micro_batch;
  // seq_len is a cap (TRL's max_length from --training-args), not every batch's length: batches padded
  // to their longest sequence are shorter.
  bool seq_len_is_cap = false;
};

// What autograd keeps for backward on one rank for one micro-batch: an estimate from the
// registry's per-architecture activation model (rules/models/*.yaml `activations`).
struct ActivationEstimate {
  bool available = false;
  std::string why_not;      // when not available: what is missing
  std::int64_t tokens = 0;  // this rank's tokens: seq_len * micro_batch, or its context-parallel piece
  // Context parallelism: the ranks that split each sequence; tokens is the largest rank's piece,
  // ceil(seq_len / cp) x micro_batch (torch.chunk of the sequence).
  int cp_size = 1;
  DType dtype = DType::BF16;    // compute dtype of the saved tensors
  bool checkpointing = false;   // activation checkpointing of every block
  std::uint64_t blocks = 0;     // the decoder blocks (all of them, or their checkpointed inputs)
  std::uint64_t recompute = 0;  // one block's full activations while it is recomputed
  std::uint64_t logits = 0;     // LM head output, its fp32 copy and the saved log-softmax
  std::uint64_t masks = 0;      // sliding-window layers' attention masks (batch x seq x seq each)
  // Of `blocks` (or `recompute`): what each block keeps whatever the tokens (DeepSeek's router upcasts its
  // weight to float32 at a narrower compute dtype; the grouped experts' int32 offsets), bytes per block.
  std::uint64_t fixed_per_block = 0;
  // The attention implementation the estimate is for (the tree's: --attn-implementation, else
  // transformers' default for the model class).
  std::string attn_implementation;
  // Eager attention: the seq x seq probabilities (and softcapped scores) each layer keeps, per head.
  bool eager = false;
  std::uint64_t scores = 0;
  // Tensor parallelism: the block's saved tensors as this TP rank holds them (the registry's
  // `tp_split` widths cut into torch.chunk pieces), or, without a `tp_split` model, the unsplit
  // model's (an upper bound).
  int tp_size = 1;
  bool tp_upper_bound = false;
  std::uint64_t total() const { return blocks + recompute + logits + masks + scores; }
};

// One moment of the step and what is alive at it on one rank, part by part (docs/step-peak.md).
struct StepPart {
  std::string what;
  std::uint64_t bytes = 0;
};
struct StepMoment {
  std::string name;  // "loss backward (first op)", "backward of model.layers.31 (reduce-scatter)", ...
  std::vector<StepPart> parts;
  std::uint64_t total() const;
};
// The largest live bytes of a steady-state training step (its optimizer states exist, its gradients
// were set to None by zero_grad), replayed unit by unit: forward with its all-gathers, the loss,
// backward with recomputation, gradient and reduce-scatter buffers, the optimizer step.
struct StepPeak {
  bool available = false;
  std::string why_not;
  int rank = 0;  // of the shard group
  StepMoment peak;
  std::vector<StepMoment> moments;  // every moment replayed on that rank, in step order
};

struct RankMemory {
  int rank = 0;
  std::uint64_t params = 0;       // sharded master parameters (GPU; 0 when offloaded)
  std::uint64_t grads = 0;        // sharded gradients
  std::uint64_t optimizer = 0;    // optimizer states
  std::uint64_t buffers = 0;      // persistent buffers, unsharded on every rank
  std::uint64_t transient = 0;    // peak of unsharded all-gather and reduce-scatter buffers
  std::uint64_t cpu = 0;          // pinned host memory with CPU offload
  std::uint64_t activations = 0;  // ActivationEstimate::total() when estimated, else 0
  std::uint64_t ignored = 0;      // ignored modules: whole parameters, grads and optimizer states
  std::uint64_t quant_state = 0;  // bitsandbytes 4-bit quantization state, whole on every rank
  std::uint64_t total() const {
    return params + grads + optimizer + buffers + transient + activations + ignored + quant_state;
  }
};

// What may be said about the fit (decided once, in the pipeline; renderers only print it).
enum class FitVerdict {
  fits,                      // everything counted fits, activations included
  fits_without_activations,  // parameters, gradients, optimizer states and buffers fit; activations not estimated
  does_not_fit,              // FIT001
  withheld,                  // the job fails before training (an error finding): no verdict for it
  may_not_fit,               // the replayed peak fits, but not with the margin for what torch does not count (FIT004)
  not_estimated,             // the recipe names what the estimate cannot count (an unknown optim: FIT002)
};
const char* verdict_name(FitVerdict v);  // "fits", "fits_without_activations", "does_not_fit", "withheld", ...

// With tensor parallelism: the largest per-rank memory of one TP rank's data-parallel group.
struct TpRankMemory {
  int tp_rank = 0;
  int global_rank = 0;  // the rank of the mesh holding it (dims dp_replicate, dp_shard, tp)
  RankMemory memory;
};

// One global rank of the job and whose memory it holds: its index in its shard group (into
// MemoryEstimate::ranks, whose `rank` is that index), its replica (HSDP's dp_replicate or FSDP1's
// node), and its context- and tensor-parallel ranks.
struct GlobalRank {
  int rank = 0;
  int shard_rank = 0;
  int replica = 0;
  int cp_rank = 0;
  int tp_rank = 0;
};
// Every global rank of the job, from the settings' mesh (accelerate's row-major dp_replicate, dp_shard,
// cp, sp, tp; FSDP2 shards over dp_shard x cp) or FSDP1's nodes under a hybrid strategy.
std::vector<GlobalRank> mesh_ranks(const FsdpSettings& s);

struct MemoryEstimate;
// The GPU a verdict is about, as its messages name it: "79.11 GiB (h100-80gb)", and, when nobody chose
// it, "79.11 GiB (h100-80gb, assumed: set --gpu or --gpu-memory)".
std::string gpu_label(const MemoryEstimate& m);

struct MemoryEstimate {
  std::vector<RankMemory> ranks;         // one per rank of the shard group
  std::vector<TpRankMemory> tp_ranks;    // with tensor parallelism, one per TP rank
  std::vector<GlobalRank> global_ranks;  // every rank of the job (mesh_ranks)
  std::optional<int> peak_mesh_rank;     // with tensor parallelism: the global rank that holds `peak`
  std::uint64_t peak = 0;                // max over ranks of total()
  int peak_rank = 0;
  std::uint64_t gpu_memory = 0;
  std::string gpu_name;      // MemoryOptions::gpu_name
  bool gpu_assumed = false;  // MemoryOptions::gpu_assumed
  bool fits = true;
  std::int64_t headroom = 0;  // gpu_memory - peak (negative: bytes short)
  FitVerdict verdict = FitVerdict::fits;
  std::string verdict_reason;  // withheld: which finding stops the job
  std::string transient_note;  // which units make the transient peak
  ActivationEstimate activations;
  // With activations estimated: the step replayed; `peak` is then its largest moment, not the sum of
  // the categories above (which are each category's own largest size).
  StepPeak step;
  std::string optimizer;  // the optim name whose states are counted
  // With a replayed step: what a GPU holds beyond torch's tensors (CUDA context, NCCL, allocator), and
  // the least a real step holds (the replay is at most 10% above it).
  std::uint64_t margin = 0, certain = 0;
  std::uint64_t with_margin = 0;  // peak + margin: what "fits" compares with the GPU
};
// The CUDA context, NCCL's and cuBLAS's buffers: docs/step-peak.md "The margin".
inline constexpr std::uint64_t kFixedOverhead = 1ull << 30;
// The verdict from the peak, the GPU and the recipe (estimate_memory calls it; the pipeline withholds it).
void decide_fit(MemoryEstimate& est, const MemoryOptions& opts);

struct CollectiveBytes {
  std::string unit;              // unit path ("" root)
  std::uint64_t all_gather = 0;  // nccl-tests "size": the whole gathered buffer, summed per step
  std::uint64_t reduce_scatter = 0;
  std::uint64_t all_reduce = 0;  // HSDP replicate all-reduce or NO_SHARD all-reduce
  int all_gathers = 0, reduce_scatters = 0, all_reduces = 0;
  // Time at the given bus bandwidth (nccl-tests busbw): t = size (n-1)/n / busbw for all-gather
  // and reduce-scatter, t = size 2(n-1)/n / busbw for all-reduce; n the ranks of the collective.
  double seconds = 0;
};

// Tensor parallelism's own collectives per step on one rank, over its TP group: the activation
// all-reduces of the plan's module hooks and the gradient all-reduces of replicated parameters.
struct TpTraffic {
  int tp_size = 1;
  bool estimated = false;
  std::string why_not;              // when not estimated
  std::int64_t tokens = 0;          // seq_len x micro_batch
  CollectiveBytes collectives;      // all_reduce bytes and calls, seconds at `bandwidth`
  std::optional<double> bandwidth;  // bytes/s the group's collectives were timed at (inter-node when it crosses)
};

// Context parallelism's ring attention per step on one rank, over its CP group (torch 2.14.1
// _context_parallel/_attention.py): each SDPA call exchanges this rank's keys and values (never the
// queries): forward, one all-gather of them ("allgather", accelerate's default cp_comm_strategy) or
// cp - 1 ring sends ("alltoall"); backward, the same again and cp ring sends of their gradients in
// float32.
struct CpTraffic {
  int cp_size = 1;
  bool estimated = false;
  std::string why_not;          // when not estimated
  std::string strategy;         // "allgather" or "alltoall"
  std::int64_t tokens = 0;      // this rank's tokens (its piece of seq_len x micro_batch)
  int attention_calls = 0;      // SDPA calls per step: attention layers, twice when recomputed
  std::uint64_t kv_bytes = 0;   // one layer's K and V of this rank, in the compute dtype
  std::uint64_t ring_send = 0;  // bytes this rank sends in ring (permute) steps per step
  int ring_sends = 0;
  CollectiveBytes collectives;      // all_gather bytes and calls; seconds of everything at `bandwidth`
  std::optional<double> bandwidth;  // bytes/s the group's exchanges were timed at (inter-node when it crosses)
};

struct CommVolume {
  std::vector<CollectiveBytes> units;   // one per unit of the plan (of a folded plan: per unit it holds)
  CollectiveBytes total;                // FSDP's collectives (tensor parallelism's are in `tensor_parallel`)
  std::optional<double> bus_bandwidth;  // bytes per second, when --bus-bandwidth was given
  // bytes per second across machines (--inter-node-bandwidth): the bandwidth of every group that crosses
  // them (ShardPlan::*_spans_nodes); absent, those groups are timed at bus_bandwidth too.
  std::optional<double> inter_node_bandwidth;
  std::optional<TpTraffic> tensor_parallel;
  std::optional<CpTraffic> context_parallel;
};

MemoryEstimate estimate_memory(const ShardPlan& plan, const ModuleTree& tree, const FsdpSettings& s,
                               const MemoryOptions& opts);
// Everything it needs is in the plan: each unit carries its resolved compute and reduce dtypes.
CommVolume communication(const ShardPlan& plan, std::optional<double> bus_bandwidth = std::nullopt,
                         std::optional<double> inter_node_bandwidth = std::nullopt);
// Tensor parallelism's collectives per step (transformers 5.12.1's style hooks, described by each
// style's forward_all_reduce / backward_all_reduce / grad_all_reduce in rules/models/_tensor_parallel.yaml),
// for a plan with a tensor-parallel layout; activations need --seq-len and --micro-batch.
TpTraffic tensor_parallel_traffic(const ShardPlan& plan, const ModuleTree& tree, const FsdpSettings& s,
                                  const MemoryOptions& opts, std::optional<double> bus_bandwidth,
                                  std::optional<double> inter_node_bandwidth = std::nullopt);
// Context parallelism's K/V exchanges per step (FSDP2 with cp_size > 1); needs --seq-len and
// --micro-batch, and the registry's `cp_kv` widths for the architecture.
CpTraffic context_parallel_traffic(const ShardPlan& plan, const ModuleTree& tree, const FsdpSettings& s,
                                   const MemoryOptions& opts, std::optional<double> bus_bandwidth,
                                   std::optional<double> inter_node_bandwidth = std::nullopt);
// The step replayed on rank `rank` of the shard group, given that rank's persistent memory.
StepPeak replay_step(const ShardPlan& plan, const ModuleTree& tree, const FsdpSettings& s, const MemoryOptions& opts,
                     const ActivationEstimate& act, const RankMemory& state);
ActivationEstimate estimate_activations(const ShardPlan& plan, const ModuleTree& tree, const FsdpSettings& s,
                                        const MemoryOptions& opts);

}  // namespace shardcheck
