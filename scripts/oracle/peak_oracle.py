#!/usr/bin/python3
"""Peak oracle: the real peak of live bytes per rank in a steady-state training step.

Dev-time tool (CI never needs torch). It runs inside the Debian unstable chroot of
scripts/oracle2_setup.sh (torch 2.14.1, transformers 5.12.1, accelerate 1.14) and writes the truth
that tests/unit/test_peak_oracle.cpp holds shardcheck's step timeline to:

  scripts/oracle2_run.sh python3 scripts/oracle/peak_oracle.py            # every case
  scripts/oracle2_run.sh python3 scripts/oracle/peak_oracle.py --only 'l256*' --list

Each case builds a model with transformers from a config (float32 weights from the seed, on CPU),
wraps it as accelerate 1.14 does (FSDP1: Accelerator.prepare_model's FSDP(...) arguments and its
apply_activation_checkpointing; FSDP2: accelerate's own fsdp2_prepare_model, which applies
fsdp2_apply_ac), in W forked processes over gloo, and runs three optimizer steps of the loop the job
runs:
  * loop "accelerate": `outputs = model(input_ids=ids, labels=ids); outputs.loss.backward();
    opt.step(); opt.zero_grad()` -- `outputs` (the logits) lives on until the next forward returns;
  * loop "trainer": transformers' Trainer.training_step, where compute_loss returns the loss alone;
  * gradient accumulation as accelerate's `accumulate` does it: every micro-batch but the last under
    no_sync (FSDP1 `model.no_sync()`, FSDP2 `set_requires_gradient_sync(False)`).
The optimizer is torch.optim.AdamW (foreach, the default on CPU and GPU).

Live bytes are counted by a TorchDispatchMode that sees every tensor an op returns (weakref on its
storage, and UntypedStorage.resize_ patched, since FSDP frees and reallocates unsharded parameters
by resizing storages): what a GPU's caching allocator would be asked for, without its rounding.
Gloo's own staging copies inside the C++ collectives are not seen; NCCL makes none. The record of
the third step (steady state: AdamW's states exist) gives per rank the peak, the phase it happened
in, the live bytes at the step's start, and the live storages at the peak grouped by category.
"""
from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import os
import sys
import weakref

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
OUT = os.path.join(REPO, "fixtures", "oracle2", "peak")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode, is_traceable_wrapper_subclass  # noqa: E402
from torch.utils._pytree import tree_flatten  # noqa: E402

import torch2_oracle as t2  # noqa: E402  (accelerate's wrapping, forked ranks, merging)
from transformers import AutoConfig, AutoModelForCausalLM  # noqa: E402

# Models: Llama-family and MoE configs large enough that activations and logits weigh what they do
# in a real job, small enough for a 2-core CPU. Sizes divide by no world size (padding shows).
LLAMA = dict(model_type="llama", hidden_size=256, intermediate_size=688, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, vocab_size=8000, max_position_embeddings=8192,
             tie_word_embeddings=False)
MODELS = {
    "l256": LLAMA,
    "l256_tied": dict(LLAMA, tie_word_embeddings=True),
    "l512": dict(LLAMA, hidden_size=512, intermediate_size=1376, num_hidden_layers=4, num_attention_heads=8,
                 num_key_value_heads=4, vocab_size=32000),
    # Llama-3-8B's widths (hidden 4096, MLP 14336, 32/8 heads, vocabulary 128256) with 2 of its 32 layers:
    # full-size tensors, a CPU-sized depth.
    "l8b2": dict(LLAMA, hidden_size=4096, intermediate_size=14336, num_hidden_layers=2, num_attention_heads=32,
                 num_key_value_heads=8, vocab_size=128256, rope_theta=500000.0),
    "q3moe": dict(model_type="qwen3_moe", hidden_size=256, intermediate_size=688, moe_intermediate_size=128,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=64, num_experts=8,
                  num_experts_per_tok=2, vocab_size=8000, max_position_embeddings=8192, tie_word_embeddings=False),
}


def make_config(name: str):
    kw = dict(MODELS[name])
    return AutoConfig.for_model(kw.pop("model_type"), **kw)


# --------------------------------------------------------------------------------------------
# Live bytes
# --------------------------------------------------------------------------------------------

class LiveBytes(TorchDispatchMode):
    """Bytes of every storage an op has returned and that is still alive, with its peak."""

    def __init__(self):
        super().__init__()
        self.live = {}  # id(storage) -> [nbytes, op, phase]
        self.cur = 0
        self.peak = 0
        self.phase = "setup"
        self.peak_phase = ""
        self.peak_live = None  # copy of `live` at the peak, when recording
        self.recording = False
        self.hidden = {}  # id(storage) -> nbytes of gloo's own buffers (not counted)
        self.hidden_peak = 0
        self.phase_peaks = {}  # phase -> the most live bytes during it (recording only)

    def _grow(self, n):
        self.cur += n
        if self.recording and self.cur > self.phase_peaks.get(self.phase, 0):
            self.phase_peaks[self.phase] = self.cur
            if self.phase == DIAG_PHASE:
                self.diag_live = {k: list(v) for k, v in self.live.items()}
        if self.cur > self.peak:
            self.peak = self.cur
            self.peak_phase = self.phase
            if self.recording:
                self.peak_live = {k: list(v) for k, v in self.live.items()}

    def _free(self, key):
        v = self.live.pop(key, None)
        if v is not None:
            self.cur -= v[0]

    def track(self, st, op, view=False):
        key = id(st)
        if key in self.live:
            return
        if view:
            # A view of a storage no op has returned: it was allocated inside a C++ kernel, which is
            # gloo's staging (its reduce-scatter copies the whole input; NCCL reduces in place).
            self.live[key] = [0, "hidden " + op, self.phase]
            self.hidden[key] = st.nbytes()
            weakref.finalize(st, self.hidden.pop, key, None)
            weakref.finalize(st, self.live.pop, key, None)
            return
        self.live[key] = [0, op, self.phase]
        weakref.finalize(st, self._free, key)
        self.resized(st, op)

    def resized(self, st, op):
        key = id(st)
        if key in self.hidden:
            return
        if key not in self.live:
            self.track(st, op)
            return
        old = self.live[key][0]
        new = st.nbytes()
        self.live[key][0] = new
        if new > old:
            self.live[key][1] = op
            self.live[key][2] = self.phase
            self._grow(new - old)
        else:
            self.cur -= old - new

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                self.track_tensor(t, func.__name__, bool(getattr(func, "is_view", False)))
        return out

    def track_tensor(self, t, op, view=False):
        """A plain tensor's storage; a wrapper subclass (DTensor) holds no memory of its own (its
        storage reports the global size at a null address): its inner tensors do."""
        if is_traceable_wrapper_subclass(t):
            attrs, _ = t.__tensor_flatten__()
            for a in attrs:
                inner = getattr(t, a)
                if isinstance(inner, torch.Tensor):
                    self.track_tensor(inner, op, view)
            return
        if t.device.type != "cpu":
            return
        with contextlib.suppress(Exception):
            self.track(t.untyped_storage(), op, view)


TRACKER: LiveBytes | None = None
# ORACLE_DIAG_PHASE="reference forward": also record what is alive at that phase's own peak
# ("diag_by_op"), to see what a moment other than the step's peak holds. Not used for the records.
DIAG_PHASE = os.environ.get("ORACLE_DIAG_PHASE", "")
_resize = torch.UntypedStorage.resize_


def _tracked_resize(self, size):
    r = _resize(self, size)
    if TRACKER is not None and self.device.type == "cpu":
        TRACKER.resized(self, "resize_")
    return r


torch.UntypedStorage.resize_ = _tracked_resize


def set_phase(p: str) -> None:
    if TRACKER is not None:
        TRACKER.phase = p


def label_hooks(model) -> None:
    """Phase labels: the forward and backward of each decoder layer and of the model's other leaves."""
    for name, m in model.named_modules():
        short = name.replace("_fsdp_wrapped_module.", "").replace("_checkpoint_wrapped_module.", "")
        if not short or "." in short.split("layers.")[-1] and "layers." in short:
            continue  # the root, and modules inside a decoder layer
        if list(m.children()) and "layers." not in short:
            continue
        m.register_forward_pre_hook(lambda *_a, n=short: set_phase("forward " + n))
        with contextlib.suppress(Exception):
            m.register_full_backward_pre_hook(lambda *_a, n=short: set_phase("backward " + n))


# --------------------------------------------------------------------------------------------
# One rank
# --------------------------------------------------------------------------------------------

def build(c: dict):
    cfg = make_config(c["model"])
    torch.manual_seed(0)
    kw = {}
    if c.get("experts"):  # transformers' default otherwise: grouped_mm (integrations/moe.py, 5.12.1)
        kw["experts_implementation"] = c["experts"]
    dtype = getattr(torch, c.get("load_dtype", "float32"))
    model = AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation="sdpa", **kw)
    model.train()
    return model


def wrap(model, c: dict, W: int):
    if c["fsdp_version"] == 2:
        if c.get("activation_checkpointing"):
            # accelerate 1.14 Accelerator._prepare_fsdp2: set_auto_wrap_policy, then fsdp2_apply_ac
            # (checkpoint_wrapper on every child of a module the policy wraps), then fsdp2_prepare_model.
            import types as _types
            from accelerate.utils.fsdp_utils import fsdp2_apply_ac
            plugin = t2.make_plugin(c)
            plugin.set_auto_wrap_policy(model)
            model = fsdp2_apply_ac(_types.SimpleNamespace(state=_types.SimpleNamespace(fsdp_plugin=plugin)), model)
        return t2.wrap_fsdp2(model, c, W)
    model = t2.wrap_fsdp1(model, c)
    if c.get("activation_checkpointing"):
        # accelerate 1.14 Accelerator.prepare_model, FSDP1 branch: checkpoint_wrapper (non-reentrant)
        # on the auto-wrap policy's modules.
        import functools
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
            CheckpointImpl, apply_activation_checkpointing, checkpoint_wrapper)
        plugin = t2.make_plugin(c)
        plugin.set_auto_wrap_policy(model)
        apply_activation_checkpointing(
            model, checkpoint_wrapper_fn=functools.partial(checkpoint_wrapper, checkpoint_impl=CheckpointImpl.NO_REENTRANT),
            auto_wrap_policy=plugin.auto_wrap_policy)
    return model


def reference_model(c: dict, W: int):
    """DPO's reference model for a full fine-tune, as TRL v1.9.0 prepares it under FSDP
    (trl/models/utils.py prepare_fsdp, called by DPOTrainer.__init__): a second copy of the model;
    FSDP1 with the plugin's auto-wrap policy and settings, FSDP2 as ONE fully_shard on the root
    (reshard_after_forward and mixed precision from the plugin, no per-layer groups); eval mode."""
    ref = build(c)
    plugin = t2.make_plugin(c)
    if c["fsdp_version"] == 1:
        ref = t2.wrap_fsdp1(ref, c)
    else:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
        fully_shard(ref, reshard_after_forward=plugin.reshard_after_forward,
                    mp_policy=plugin.mixed_precision_policy or MixedPrecisionPolicy())
    ref.eval()
    for p in ref.parameters():
        p.requires_grad_(False)
    return ref


def token_logps(logits, labels):
    """log_softmax(logits)[label] per token, as TRL v1.9.0's selective_log_softmax (trl/trainer/utils.py)
    computes it: float32 logits gather the label's logit and take each sequence's logsumexp in turn;
    other dtypes take each sequence's log_softmax in turn and gather from it."""
    idx = labels.unsqueeze(-1)
    if logits.dtype in (torch.float32, torch.float64):
        picked = torch.gather(logits, dim=-1, index=idx).squeeze(-1)
        lse = torch.stack([torch.logsumexp(row, dim=-1) for row in logits])
        return picked - lse
    rows = [torch.gather(torch.log_softmax(lg, dim=-1), dim=-1, index=lb.unsqueeze(-1)).squeeze(-1)
            for lg, lb in zip(logits, labels)]
    return torch.stack(rows)


def dpo_loss(model, ref, ids, mask, beta=0.1):
    """TRL v1.9.0 DPOTrainer._compute_loss (trl/trainer/dpo_trainer.py), sigmoid loss, reference model
    run in the step: the batch is chosen and rejected concatenated; no labels reach the model."""
    out = model(input_ids=ids, use_cache=False)
    set_phase("loss forward (policy log-probs)")
    labels = ids[..., 1:]
    shift_mask = mask[..., 1:]
    logps = token_logps(out.logits[..., :-1, :], labels)
    logps[shift_mask == 0] = 0.0
    logps = logps.sum(dim=1)
    chosen, rejected = logps.chunk(2, dim=0)
    with torch.no_grad():
        set_phase("reference forward")
        ref_out = ref(input_ids=ids, use_cache=False)
        set_phase("loss forward (reference log-probs)")
        ref_logps = token_logps(ref_out.logits[..., :-1, :], labels)
        ref_logps[shift_mask == 0] = 0.0
        ref_chosen, ref_rejected = ref_logps.sum(dim=1).chunk(2, dim=0)
    logits = (chosen - ref_chosen) - (rejected - ref_rejected)
    return -torch.nn.functional.logsigmoid(beta * logits).mean()


def train(model, c: dict) -> dict:
    """Three optimizer steps; the third one is recorded."""
    global TRACKER
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3, foreach=True)
    g = torch.Generator().manual_seed(1)
    T, B, ga = c["tokens"], c.get("micro_batch", 1), c.get("grad_accum", 1)
    vocab = model.config.vocab_size
    batches = [torch.randint(0, vocab, (B, T), generator=g) for _ in range(ga)]
    # `warm_tokens` (the Trainer loop only, which keeps nothing of a step): the first two steps run on
    # that many tokens, so that a full-width model pays for one full step; what the third step starts
    # with (parameters, AdamW's states) does not depend on the tokens of the steps before it.
    warm = [torch.randint(0, vocab, (B, c["warm_tokens"]), generator=g) for _ in range(ga)] if c.get("warm_tokens") else None
    assert warm is None or c.get("loop") == "trainer", "warm_tokens needs the Trainer loop"
    outputs = None
    rec = {}

    # With activation checkpointing the step must not build a KV cache: the recomputed attention
    # appends to it again and torch.utils.checkpoint raises CheckpointError (keys of 2T tokens).
    fwd = {"use_cache": False} if c.get("activation_checkpointing") and not c.get("use_cache") else {}

    def trainer_loss(ids):
        out = model(input_ids=ids, labels=ids, **fwd)
        return out["loss"]  # compute_loss returns the loss alone: the logits go with `out`

    ref = None
    if c.get("trainer") == "dpo":
        # B pairs: a (2B, T) batch, chosen rows then rejected rows; the first half of each row is the
        # prompt (completion_mask 0).
        ref = reference_model(c, dist.get_world_size())
        batches = [torch.randint(0, vocab, (2 * B, T), generator=g) for _ in range(ga)]
        mask = torch.ones(2 * B, T, dtype=torch.long)
        mask[:, : T // 2] = 0

    for step in range(3):
        if step == 2:
            TRACKER.recording = True
            TRACKER.peak = TRACKER.cur
            TRACKER.peak_phase = "step start"
            TRACKER.peak_live = {k: list(v) for k, v in TRACKER.live.items()}
            rec["start"] = TRACKER.cur
        for micro, ids in enumerate(warm if (warm and step < 2) else batches):
            sync = micro == ga - 1
            if c["fsdp_version"] == 2:
                model.set_requires_gradient_sync(sync)
            ctx = model.no_sync() if (c["fsdp_version"] == 1 and not sync) else contextlib.nullcontext()
            with ctx:
                set_phase("forward")
                if ref is not None:
                    loss = dpo_loss(model, ref, ids, mask)
                elif c.get("loop", "accelerate") == "trainer":
                    loss = trainer_loss(ids)
                else:
                    outputs = model(input_ids=ids, labels=ids, **fwd)
                    loss = outputs.loss
                set_phase("backward loss")
                loss.backward()
                del loss
        set_phase("optimizer step")
        opt.step()
        if step == 2:
            rec["params_ids"] = set()
            rec["grad_ids"] = set()
            for p in model.parameters():
                local = p._local_tensor if hasattr(p, "_local_tensor") else p
                rec["params_ids"].add(id(local.untyped_storage()))
                if p.grad is not None:
                    gl = p.grad._local_tensor if hasattr(p.grad, "_local_tensor") else p.grad
                    rec["grad_ids"].add(id(gl.untyped_storage()))
            if c["fsdp_version"] == 1:
                from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
                for m in model.modules():
                    if isinstance(m, FSDP) and m._handle is not None:
                        fp = m._handle.flat_param
                        rec["params_ids"].add(id(fp.untyped_storage()))
                        if fp.grad is not None:
                            rec["grad_ids"].add(id(fp.grad.untyped_storage()))
            rec["opt_ids"] = {id((v._local_tensor if hasattr(v, "_local_tensor") else v).untyped_storage())
                              for s in opt.state.values() for v in s.values() if torch.is_tensor(v)}
        set_phase("zero_grad")
        opt.zero_grad(set_to_none=True)
        set_phase("between steps")
    rec["end"] = TRACKER.cur
    return summarize(rec)


def summarize(rec: dict) -> dict:
    """The peak, its phase, and the live storages at it in categories (bytes)."""
    cats = {}
    ops = {}
    for key, (n, op, phase) in TRACKER.peak_live.items():
        if key in rec["params_ids"]:
            cat = "params"
        elif key in rec["opt_ids"]:
            cat = "optimizer"
        elif key in rec["grad_ids"]:
            cat = "grads"
        elif phase == "setup" or phase == "between steps":
            cat = "persistent"
        else:
            cat = phase.split(" ")[0]
        cats[cat] = cats.get(cat, 0) + n
        k = f"{phase} | {op}"
        ops[k] = ops.get(k, 0) + n
    top = sorted(ops.items(), key=lambda kv: -kv[1])[:40]
    diag = {}
    for key, (n, op, phase) in getattr(TRACKER, "diag_live", {}).items():
        diag[f"{phase} | {op}"] = diag.get(f"{phase} | {op}", 0) + n
    return {"peak": TRACKER.peak, "peak_phase": TRACKER.peak_phase, "start": rec["start"], "end": rec["end"],
            "phase_peaks": dict(sorted(TRACKER.phase_peaks.items(), key=lambda kv: -kv[1])[:12]),
            "at_peak": dict(sorted(cats.items())), "at_peak_by_op": [[k, v] for k, v in top if v > 0],
            **({"diag_by_op": sorted(([k, v] for k, v in diag.items() if v > 0), key=lambda kv: -kv[1])[:40]}
               if diag else {})}


def init_process_group(c: dict, rank: int, W: int, store: str) -> None:
    """gloo, or torch's fake process group (`pg: fake`): its collectives return at once and write
    nothing, while FSDP allocates every all-gather output and reduce-scatter input exactly as it does
    over NCCL. That is how the bf16 and fp16 steps are measured (gloo has no bf16 collectives) and
    what torch's own FSDPMemTracker tests use (torch/testing/_internal/distributed/fake_pg.py).
    The values are garbage; the sizes and lifetimes of the tensors are the real ones."""
    if c.get("pg") == "fake":
        from torch.testing._internal.distributed.fake_pg import FakeStore
        dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=W)
    else:
        dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=W)


def rank_main(c: dict, rank: int, W: int, store: str, result: str) -> None:
    global TRACKER
    t2.rank_prologue(rank, W)
    if c.get("only_ranks") and rank not in c["only_ranks"]:
        # Over the fake process group no rank waits for another: the ranks not measured never start
        # (8 full-width models at once would not fit in this machine's memory).
        with open(result, "w") as f:
            json.dump({"skipped": True}, f)
        os._exit(0)
    rec, stage = {}, "init"
    try:
        init_process_group(c, rank, W, store)
        TRACKER = LiveBytes()
        with TRACKER:
            stage = "load"
            model = build(c)
            stage = "wrap"
            model = wrap(model, c, W)
            label_hooks(model)
            stage = "step"
            rec = train(model, c)
    except BaseException as e:  # noqa: BLE001
        import traceback
        rec = {"error": {"type": type(e).__name__, "message": str(e)[:400], "stage": stage}}
        if os.environ.get("ORACLE_TRACE"):
            traceback.print_exc()
    with open(result, "w") as f:
        json.dump(rec, f)
    os._exit(0)


def merge(c: dict, per_rank: list) -> dict:
    out = dict(c)
    import accelerate
    import transformers
    out["versions"] = {"torch": torch.__version__, "transformers": transformers.__version__,
                       "accelerate": accelerate.__version__}
    out["config"] = MODELS[c["model"]]
    errors = [r.get("error") for r in per_rank]
    if any(errors):
        out["error"] = next(e for e in errors if e)
        return out
    out["ranks"] = [r for r in per_rank if not r.get("skipped")]
    return out


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------

def case(model, fsdp, W, tokens, **kw):
    parts = [model, f"fsdp{fsdp}", f"t{tokens}"]
    if kw.get("micro_batch", 1) > 1:
        parts.append(f"b{kw['micro_batch']}")
    if kw.get("activation_checkpointing"):
        parts.append("ac")
    if kw.get("grad_accum", 1) > 1:
        parts.append(f"ga{kw['grad_accum']}")
    strat = kw.get("sharding_strategy")
    if strat and strat != "FULL_SHARD":
        parts.append({"SHARD_GRAD_OP": "sgo", "NO_SHARD": "noshard"}[strat])
    if kw.get("use_orig_params"):
        parts.append("orig")
    if kw.get("reshard_after_forward") is False:
        parts.append("noreshard")
    if kw.get("loop") == "trainer":
        parts.append("trainer")
    if kw.get("trainer"):
        parts.append(kw["trainer"])
    if kw.get("load_dtype", "float32") != "float32":
        parts.append({"bfloat16": "bf16", "float16": "fp16"}[kw["load_dtype"]])
    if kw.get("mixed_precision", "no") != "no":
        parts.append("mp" + kw["mixed_precision"])
    parts.append(f"w{W}")
    if kw.get("pg") == "fake":
        parts.append("fakepg")
    c = {"case": "-".join(parts), "model": model, "fsdp_version": fsdp, "world_size": W, "tokens": tokens,
         "policy": {"kind": "transformer"}}
    c.update(kw)
    return c


def all_cases() -> list:
    cs = []
    for fsdp in (2, 1):
        for model, tokens in (("l256", 128), ("l256", 1024), ("l256", 4096), ("l512", 512), ("l512", 2048)):
            for ac in (False, True):
                cs.append(case(model, fsdp, 2, tokens, activation_checkpointing=ac))
        cs.append(case("l256", fsdp, 2, 1024, loop="trainer"))
        cs.append(case("l256", fsdp, 2, 4096, loop="trainer"))
        cs.append(case("l256", fsdp, 2, 1024, grad_accum=2))
        cs.append(case("l512", fsdp, 2, 1024, grad_accum=2, activation_checkpointing=True))
        cs.append(case("l256_tied", fsdp, 2, 1024))
        cs.append(case("l256", fsdp, 3, 1024))
        cs.append(case("l256", fsdp, 2, 512, micro_batch=2))
        cs.append(case("q3moe", fsdp, 2, 1024))
        cs.append(case("q3moe", fsdp, 2, 1024, activation_checkpointing=True))
    # The model's default use_cache=True with activation checkpointing: the recomputed attention appends
    # to the KV cache again (the record is the error).
    for fsdp in (2, 1):
        c = case("l256", fsdp, 2, 128, activation_checkpointing=True, use_cache=True)
        c["case"] += "-cache"
        cs.append(c)
    cs.append(case("l256", 1, 2, 1024, sharding_strategy="SHARD_GRAD_OP"))
    cs.append(case("l256", 1, 2, 1024, use_orig_params=True))
    cs.append(case("l256", 2, 2, 1024, reshard_after_forward=False))
    # Low precision and larger worlds, over the fake process group: bf16 weights (pure bf16 training),
    # bf16 mixed precision over float32 weights, fp16, and 8 ranks; one float32 case that gloo also ran.
    F = dict(pg="fake")
    cs.append(case("l256", 2, 2, 1024, **F))
    for fsdp in (2, 1):
        cs.append(case("l256", fsdp, 2, 1024, load_dtype="bfloat16", **F))
        cs.append(case("l256", fsdp, 2, 4096, load_dtype="bfloat16", **F))
        cs.append(case("l256", fsdp, 2, 1024, mixed_precision="bf16", **F))
        cs.append(case("l256", fsdp, 2, 4096, mixed_precision="bf16", activation_checkpointing=True, **F))
        cs.append(case("l256", fsdp, 2, 1024, load_dtype="bfloat16", loop="trainer", **F))
        cs.append(case("l256", fsdp, 8, 1024, **F))
        cs.append(case("l256", fsdp, 8, 2048, load_dtype="bfloat16", activation_checkpointing=True, **F))
        cs.append(case("q3moe", fsdp, 4, 1024, load_dtype="bfloat16", **F))
        cs.append(case("l512", fsdp, 4, 1024, mixed_precision="bf16", grad_accum=2, **F))
    cs.append(case("l256", 2, 2, 1024, load_dtype="float16", **F))
    # TRL's DPO with a reference model (Trainer loop): B pairs per micro-batch.
    D = dict(F, loop="trainer", trainer="dpo")
    for fsdp in (2, 1):
        cs.append(case("l256", fsdp, 2, 512, **D))
        cs.append(case("l256", fsdp, 2, 1024, load_dtype="bfloat16", **D))
        cs.append(case("l256", fsdp, 2, 1024, mixed_precision="bf16", activation_checkpointing=True, **D))
    cs.append(case("l512", 2, 4, 512, micro_batch=2, load_dtype="bfloat16", **D))
    # Full widths (Llama-3-8B's), 8 ranks, bf16, one full step.
    # Rank 0 and the last rank (which holds FSDP's padding) are measured.
    W8 = dict(F, loop="trainer", warm_tokens=16, only_ranks=[0, 7])
    cs.append(case("l8b2", 2, 8, 1024, load_dtype="bfloat16", **W8))
    cs.append(case("l8b2", 2, 8, 1024, mixed_precision="bf16", activation_checkpointing=True, **W8))
    cs.append(case("l8b2", 1, 8, 1024, load_dtype="bfloat16", **W8))
    return cs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="*")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--missing", action="store_true", help="only cases without a record in --out")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--out", default=OUT)
    a = ap.parse_args()
    cases = [c for c in all_cases() if fnmatch.fnmatch(c["case"], a.only)]
    if a.missing:
        cases = [c for c in cases if not os.path.exists(os.path.join(a.out, c["case"] + ".json"))]
    if a.list:
        print("\n".join(c["case"] for c in cases))
        return 0
    os.makedirs(a.out, exist_ok=True)
    # Each model's config.json, which shardcheck plans config-only (no weights are committed).
    for name in sorted({c["model"] for c in cases}):
        d = os.path.join(a.out, "models", name)
        os.makedirs(d, exist_ok=True)
        make_config(name).to_json_file(os.path.join(d, "config.json"), use_diff=False)
    t2.rank_main = rank_main
    t2.merge = merge
    for i, c in enumerate(cases):
        t2.run_and_write(c, a.out, a.timeout, f"{i + 1}/{len(cases)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
