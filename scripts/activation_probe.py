#!/usr/bin/python3
"""Probe: what autograd really keeps for backward in one decoder layer, per rank, with and without
tensor parallelism.

  scripts/oracle2_run.sh python3 scripts/activation_probe.py MODEL TP TOKENS DTYPE [OUT.json] [ATTN]

Loads fixtures/oracle2/models/MODEL in DTYPE (float32 or bfloat16: the compute dtype of a run with
mixed precision bf16) on CPU (TP > 1: transformers' tp_plan="auto" on a
1-D "tp" mesh of TP gloo ranks, as scripts/tp_traffic_probe.py does), and records every tensor
autograd saves during one forward of input_ids 1 x TOKENS (torch.autograd.graph.saved_tensors_hooks),
attributed to the decoder layer whose forward is running. Each storage is counted once, parameters
and buffers not at all (they are parameter memory, not activations). Rank 0's elements per token of
layer 1 (a middle layer: its input is the previous layer's output) are printed and written to
OUT.json: what a model's `activations.layer` (and, under TP, `layer_tp_split`) in rules/models/ must
give (tests/unit/test_activation_oracle.cpp reads fixtures/oracle2/activations/*.json), and the bytes of
every layer's seq x seq attention masks (`masks_bytes`: the masks-*.json records). MODEL is a folder of
fixtures/oracle2/models, or a path with a slash. ATTN is the attention implementation (default sdpa);
with eager, the seq x seq tensors each layer keeps (scores, probabilities) are `square_bytes`.
"""
import json, os, sys, weakref
os.environ["USE_LIBUV"] = "0"
import torch, torch.distributed as dist
from tp_probe_ranks import run_ranks


class KernelSdpa(torch.autograd.Function):
    """SDPA as CUDA's fused kernels keep it for backward. With SDPA=kernel the probe routes every
    torch.nn.functional.scaled_dot_product_attention call here: DeepSeek's query and key are wider than its
    value, which CPU's fused kernel refuses, so CPU falls back to the math path and saves the scaled query
    and key, the seq x seq probabilities and a value copy, which CUDA's efficient-attention kernel
    (_scaled_dot_product_efficient_attention: q and k may be wider than v) never makes. That kernel's
    autograd node saves query, key, value (as passed), its output and a float32 logsumexp [B, H, L]
    (torch tools/autograd/derivatives.yaml, _efficient_attention_backward's arguments), and allocates the
    output [B, L, H, Dv] and returns it transposed, as CPU's flash kernel does. This saves exactly those;
    everything else in the layer stays real. The logsumexp's values are never read: backward recomputes."""

    @staticmethod
    def forward(ctx, q, k, v, kwargs, dropout_p):
        with torch.no_grad():
            o = MATH_SDPA(q, k, v, **kwargs)
        out = torch.empty(o.shape[0], o.shape[2], o.shape[1], o.shape[3], dtype=o.dtype).transpose(1, 2)
        out.copy_(o)
        lse = torch.empty(q.shape[0], q.shape[1], q.shape[2], dtype=torch.float32)
        ctx.kwargs = kwargs
        saved = [q, k, v, out, lse]
        if dropout_p > 0:
            # With dropout the kernels keep no mask, only the generator state to replay it: philox seed and
            # offset, two int64 scalars (_flash_attention_forward / _efficient_attention_forward's outputs).
            saved += [torch.zeros((), dtype=torch.int64), torch.zeros((), dtype=torch.int64)]
        ctx.save_for_backward(*saved)
        return out

    @staticmethod
    def backward(ctx, grad):
        q, k, v = ctx.saved_tensors[:3]
        with torch.enable_grad():
            qkv = [t.detach().requires_grad_() for t in (q, k, v)]
            o = MATH_SDPA(*qkv, **ctx.kwargs)
            gq, gk, gv = torch.autograd.grad(o, qkv, grad)
        return gq, gk, gv, None, None


class CudaDropout(torch.autograd.Function):
    """nn.Dropout as CUDA runs it. With DROPOUT=cuda the probe routes torch.nn.functional.dropout here: on
    CUDA at::dropout takes the fused at::native_dropout, whose autograd node keeps a bool mask of the input's
    shape (tools/autograd/derivatives.yaml native_dropout: `mask`), while CPU multiplies by a noise tensor it
    keeps at the compute dtype. This keeps what CUDA keeps."""

    @staticmethod
    def forward(ctx, x, p):
        mask = torch.rand(x.shape) >= p
        ctx.p = p
        ctx.save_for_backward(mask)
        return x * mask / (1 - p)

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return grad * mask / (1 - ctx.p), None


MATH_DROPOUT = torch.nn.functional.dropout


def cuda_dropout(input, p=0.5, training=True, inplace=False):
    if not training or p == 0.0:
        return input
    assert 0.0 < p < 1.0 and not inplace
    return CudaDropout.apply(input, p)


MATH_SDPA = torch.nn.functional.scaled_dot_product_attention


def kernel_sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    return KernelSdpa.apply(query, key, value, dict(attn_mask=attn_mask, is_causal=is_causal, scale=scale,
                                                    enable_gqa=enable_gqa), dropout_p)


def write_error(out, stage, e, model, tp, tokens, dtype, attn):
    """The record of a run that raised instead of running: the stage and the exception as Python prints it."""
    import transformers
    res = {"model": model, "tp": tp, "tokens": tokens, "dtype": dtype, "attn_implementation": attn,
           "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
           "error": {"stage": stage, "type": type(e).__name__, "message": str(e)}}
    print(json.dumps(res), flush=True)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")


def run(rank, W, store, model, tokens, dtype, out, attn):
    os.environ.update(LOCAL_RANK=str(rank), RANK=str(rank), WORLD_SIZE=str(W))
    try:
        _run(rank, W, store, model, tokens, dtype, out, attn)
    except BaseException:
        import traceback; traceback.print_exc()
    os._exit(0)


def _run(rank, W, store, model, tokens, dtype, out, attn):
    from transformers import AutoModelForCausalLM
    import transformers
    # Mixture-of-experts: the experts implementation in EXPERTS (transformers' default is grouped_mm,
    # which CPU runs in float32 only), else eager as the other oracle scripts load them.
    # EXPERTS=default passes none: Granite-MoE's own experts refuse the argument ("does not support setting
    # experts implementation").
    experts = os.environ.get("EXPERTS", "eager")
    moe = any(t in model for t in ("moe", "gpt_oss", "mixtral", "deepseek"))
    kwargs = {"experts_implementation": experts} if moe and experts != "default" else {}
    if W > 1:
        dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=W)
        from torch.distributed.device_mesh import init_device_mesh
        mesh = init_device_mesh("cpu", (W,), mesh_dim_names=("tp",))
        kwargs.update(tp_plan="auto", device_mesh=mesh["tp"])
    try:
        m = AutoModelForCausalLM.from_pretrained(model if "/" in model else "fixtures/oracle2/models/" + model,
                                                 dtype=getattr(torch, dtype), attn_implementation=attn, **kwargs)
    except Exception as e:  # noqa: BLE001  a load transformers refuses (an attention the model lacks): recorded
        if rank == 0 and out:
            write_error(out, "from_pretrained", e, model=model, tp=W, tokens=tokens, dtype=dtype, attn=attn)
        raise
    m.train()
    sdpa = os.environ.get("SDPA", "")
    if sdpa == "kernel":
        torch.nn.functional.scaled_dot_product_attention = kernel_sdpa
    dropout = os.environ.get("DROPOUT", "")
    if dropout == "cuda":
        torch.nn.functional.dropout = cuda_dropout
    held = {t.untyped_storage().data_ptr() for t in list(m.parameters()) + list(m.buffers())}
    # The decoder layers: the ModuleList of the model's _no_split_modules class (model.layers, GPT-2's and
    # Falcon's transformer.h, GPT-NeoX's gpt_neox.layers).
    blocks = set(m._no_split_modules or [])
    layers = next(mod for mod in m.modules()
                  if isinstance(mod, torch.nn.ModuleList) and len(mod) and type(mod[0]).__name__ in blocks)
    current = [None]
    for i, layer in enumerate(layers):
        layer.register_forward_pre_hook(lambda mod, args, i=i: current.__setitem__(0, i))
        layer.register_forward_hook(lambda mod, args, res: current.__setitem__(0, None))
    # Each save is boxed, and only the boxes the graph still holds after the forward are counted: a save
    # in a branch the forward dropped (a temporary the loss never reaches) is freed with that branch, and its
    # storage's address may be reused by a later tensor, which a count by address at save time would
    # then skip (Granite-MoE's and DeepSeek's grouped path lost their one-byte mask that way in some runs).
    class Box:
        __slots__ = ("t", "layer", "__weakref__")

    boxes = []

    def pack(t):
        b = Box()
        b.t, b.layer = t, current[0]
        boxes.append(weakref.ref(b))
        return b

    # A fixed seed: PhiMoE's sparsemixer samples its routing in training; the records are of one draw.
    torch.manual_seed(0)
    ids = torch.arange(tokens).remainder(m.config.vocab_size - 3).add(3).unsqueeze(0)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda b: b.t):
        try:
            loss = m(input_ids=ids, labels=ids).loss
        except Exception as e:  # noqa: BLE001  transformers' model code failing for this config: recorded
            if rank == 0 and out:  # (fixtures/oracle2/errors, registry `model_errors`)
                write_error(out, "forward", e, model=model, tp=W, tokens=tokens, dtype=dtype, attn=attn)
            raise
    seen = {}  # storage -> (layer, bytes, shape), the layer that first saved it
    for ref in boxes:
        b = ref()
        if b is None or b.layer is None:
            continue
        t = b.t
        s = t.untyped_storage()
        key = s.data_ptr()
        if key in held or key in seen or s.nbytes() == 0:
            continue
        shape = list(t.shape)
        # A row slice of a 2-D tensor (Granite-MoE's experts split their gathered rows per expert and save
        # the pieces): the storage's rows, so that its token dimension shows (the first slice seen may hold
        # any number of rows, none included).
        if t.dim() == 2 and t.is_contiguous() and shape[1] > 0 and t.numel() * t.element_size() != s.nbytes() \
                and s.nbytes() % (t.element_size() * shape[1]) == 0:
            shape = [s.nbytes() // (t.element_size() * shape[1]), shape[1]]
        seen[key] = (b.layer, s.nbytes(), shape, str(t.dtype))
    del boxes
    loss.backward()
    per_layer = {}
    for layer, nbytes, shape, kind in seen.values():
        per_layer.setdefault(layer, []).append({"bytes": nbytes, "shape": shape, "dtype": kind})
    mid = per_layer.get(1, [])
    # Attention masks: the seq x seq tensors every layer keeps (sliding-window layers' explicit masks).
    masks = [x for layer in per_layer.values() for x in layer if x["shape"].count(tokens) >= 2]
    # Tensors without a token dimension (Gemma's 1 + weight) do not grow with the sequence: kept
    # apart, as the estimate is per token.
    # A mixture of experts' grouped tensors have a row per token and routed expert (tokens x top-k).
    k = getattr(m.config, "num_experts_per_tok", None) or 0
    per_token = lambda x: tokens in x["shape"] or (k and tokens * k in x["shape"])  # noqa: E731
    fixed = sum(x["bytes"] for x in mid if not per_token(x))
    # (Pick TOKENS unlike every width of the model: a width equal to it makes a tensor look per token, or
    # square; the mixture-of-experts records use 13.)
    # A seq x seq mask (or eager attention's probabilities) grows with the square of the tokens: counted
    # apart (square_bytes), not per token. GPT-OSS's probabilities are seq x (seq + 1) (a sink column):
    # their seq x seq part is square, the extra column per token.
    def square_part(x):
        if x["shape"].count(tokens) >= 2:
            return x["bytes"]
        # (Only [batch, heads, seq, seq + 1]: a 2-D or 3-D tensor whose width happens to be seq + 1, like
        # deepseek_v3_w_lite's shared experts' halves on two TP ranks at 11 tokens, is per token.)
        if len(x["shape"]) == 4 and x["shape"][-2:] == [tokens, tokens + 1]:
            return x["bytes"] * tokens // (tokens + 1)
        return 0
    square = sum(square_part(x) for x in mid)
    total = sum(x["bytes"] for x in mid) - fixed - square
    if rank == 0:
        res = {"model": model, "tp": W, "tokens": tokens, "dtype": dtype, "attn_implementation": attn,
               **({"experts_implementation": experts} if "experts_implementation" in kwargs else {}),
               **({"sdpa": "kernel: CUDA's efficient-attention saved tensors (scripts/activation_probe.py KernelSdpa)"}
                  if sdpa == "kernel" else {}),
               **({"dropout": "cuda: native_dropout's bool mask (scripts/activation_probe.py CudaDropout)"}
                  if dropout == "cuda" else {}),
               "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
               "layer1_bytes": total, "layer1_bytes_per_token": total / tokens, "layer1_fixed_bytes": fixed,
               "masks_bytes": sum(x["bytes"] for x in masks), "masks": len(masks), "square_bytes": square,
               "layer1_tensors": sorted(mid, key=lambda x: -x["bytes"])}
        print(json.dumps({k: v for k, v in res.items() if k != "layer1_tensors"}), flush=True)
        if out:
            with open(out, "w") as f:
                json.dump(res, f, indent=1)
                f.write("\n")
    if W > 1:
        dist.barrier()


def main():
    model, W, tokens, dtype = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    out = sys.argv[5] if len(sys.argv) > 5 else ""
    attn = sys.argv[6] if len(sys.argv) > 6 else "sdpa"
    run_ranks(W, run, model, tokens, dtype, out, attn)


if __name__ == "__main__":
    main()
