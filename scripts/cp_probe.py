#!/usr/bin/python3
"""Probe: what torch's context parallelism does on each rank, run for real (CPU, gloo).

  scripts/oracle2_run.sh python3 scripts/cp_probe.py            # writes fixtures/oracle2/cp/*.json

Two records, both from the real torch 2.14.1 code in
torch/distributed/tensor/experimental/_context_parallel/:

1. shard-*.json: `context_parallel(mesh["cp"], buffers=[input_ids, labels, position_ids],
   buffer_seq_dims=[1, 1, 1])` (what accelerate's maybe_context_parallel enters for the Trainer)
   on CP ranks: each rank's piece of the sequence (its length and token positions) and whether
   torch turned load balancing on.
2. ring-*.json: one ring-attention forward and backward of one layer, `_templated_ring_attention`
   and `_templated_ring_attention_backward` with accelerate's rotate method (set_rotate_method),
   the collectives they issue wrapped to record every call's bytes (an all-gather: its whole
   output; a permute: the buffer each rank sends). CPU has no flash/efficient SDPA kernel for the
   ring to call (the ops it dispatches are CUDA's), so a stand-in op of the same signature returns
   zero tensors of the kernel's shapes: the collectives, their sizes and their dtypes are torch's own.
   gloo has no 2-byte float collectives ("Invalid scalar type"): the wrappers move a float16
   buffer's bytes as uint8, the same bytes in the same calls (the ring's buffers are flat).
   Keys and values enter with num_key_value_heads heads, as transformers 5.12.1 passes them to SDPA
   with enable_gqa when the mask is None (accelerate's CP hook drops it).
tests/unit/test_context_parallel.cpp holds shardcheck to both.
"""
import json
import os
import sys
import tempfile
import multiprocessing as mp

os.environ["USE_LIBUV"] = "0"
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "oracle2", "cp")

# The llama fixture's attention (fixtures/models/llama: 4 heads, 2 key/value heads, head_dim 5), so
# that the test can compare per layer with shardcheck's plan of that model.
HEADS, KV_HEADS, HEAD_DIM = 4, 2, 5


def rank_main(rank, W, store, case, out):
    try:
        from datetime import timedelta
        dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=W,
                                timeout=timedelta(seconds=20))
        from torch.distributed.device_mesh import init_device_mesh
        mesh = init_device_mesh("cpu", (W,), mesh_dim_names=("cp",))
        if case.get("uneven"):  # each rank's outcome on its own: a failing rank leaves the others waiting
            res = uneven_ring(mesh, rank, W, case)
            with open(f"{out}.rank{rank}", "w") as f:
                json.dump(res, f)
            os._exit(0)
        result = shard(mesh, case) if case["kind"] == "shard" else ring(mesh, rank, W, case)
        if rank == 0:
            with open(out, "w") as f:
                json.dump(result, f)
        dist.barrier()
    except BaseException:
        import traceback
        traceback.print_exc()
    os._exit(0)


def shard(mesh, case):
    from torch.distributed.tensor.experimental import context_parallel
    from torch.distributed.tensor.experimental._context_parallel import _attention as A
    S = case["seq_len"]
    ids = torch.arange(S).unsqueeze(0)
    labels = ids.clone()
    pos = ids.clone()
    with context_parallel(mesh["cp"], buffers=[ids, labels, pos], buffer_seq_dims=[1, 1, 1],
                          no_restore_buffers={ids, labels, pos}):
        mine = ids[0].tolist()
        balanced = A._cp_options.enable_load_balance
    pieces = [None] * dist.get_world_size()
    dist.all_gather_object(pieces, mine)
    return {"case": case["name"], "kind": "shard", "seq_len": S, "cp": dist.get_world_size(),
            "load_balanced": balanced, "pieces": pieces, "torch": torch.__version__}


def ring(mesh, rank, W, case):
    from torch.distributed.tensor.experimental._context_parallel import _attention as A
    import torch.distributed._functional_collectives as ft_c
    A.set_rotate_method(case["strategy"])
    dtype = getattr(torch, case["dtype"])
    S_local = case["seq_len"] // W
    calls = []
    phase = ["forward"]

    def size(t):
        return t.numel() * t.element_size()

    real_gather, real_permute = ft_c.all_gather_single, ft_c.permute_tensor

    def carried(real, t, *a, **k):
        # gloo has no 2-byte float collectives: move the same bytes as uint8 (the buffers are flat).
        if t.element_size() != 2:
            return real(t, *a, **k)
        out = real(t.view(torch.uint8), *a, **k)
        if isinstance(out, ft_c.AsyncCollectiveTensor):
            out = out.wait()
        return out.view(t.dtype)

    def gather(t, *a, **k):
        calls.append({"phase": phase[0], "op": "all_gather", "bytes": size(t) * W, "dtype": str(t.dtype)})
        return carried(real_gather, t, *a, **k)

    def permute(t, *a, **k):
        calls.append({"phase": phase[0], "op": "permute", "bytes": size(t), "dtype": str(t.dtype)})
        return carried(real_permute, t, *a, **k)

    ft_c.all_gather_single, ft_c.permute_tensor = gather, permute

    def fwd_op(q, k, v, is_causal=False, **kw):  # aten._scaled_dot_product_flash_attention's outputs
        return torch.zeros_like(q), torch.zeros(q.shape[:3], dtype=torch.float32)

    def bwd_op(query, key, value, out, logsumexp, is_causal=False, **kw):
        return torch.zeros_like(query), torch.zeros_like(key), torch.zeros_like(value)

    B = case["batch"]
    q = torch.zeros(B, HEADS, S_local, HEAD_DIM, dtype=dtype)
    k = torch.zeros(B, KV_HEADS, S_local, HEAD_DIM, dtype=dtype)
    v = torch.zeros(B, KV_HEADS, S_local, HEAD_DIM, dtype=dtype)
    group = mesh["cp"].get_group()
    out, lse, *_ = A._templated_ring_attention(group, 2, fwd_op, q, k, v, is_causal=True)
    phase[0] = "backward"
    A._templated_ring_attention_backward(group, 2, bwd_op, torch.zeros_like(out), "grad_out", q, k, v,
                                         out.to(dtype), lse, is_causal=True)
    mine = calls
    every = [None] * W
    dist.all_gather_object(every, mine)
    return {"case": case["name"], "kind": "ring", "seq_len": case["seq_len"], "batch": B, "cp": W,
            "strategy": case["strategy"], "dtype": case["dtype"], "heads": HEADS, "kv_heads": KV_HEADS,
            "head_dim": HEAD_DIM, "calls": every, "torch": torch.__version__}


def uneven_ring(mesh, rank, W, case):
    """One ring-attention forward and backward where cp does not divide the sequence: each rank holds its
    torch.chunk piece (context_parallel's sharding, shard-s7-cp2.json), and the ring runs on those
    unequal pieces with the stand-in kernel. Records this rank's outcome: done, or the exception."""
    from torch.distributed.tensor.experimental._context_parallel import _attention as A
    A.set_rotate_method(case["strategy"])
    S_local = len(torch.arange(case["seq_len"]).chunk(W)[rank])

    def fwd_op(q, k, v, is_causal=False, **kw):
        return torch.zeros_like(q), torch.zeros(q.shape[:3], dtype=torch.float32)

    def bwd_op(query, key, value, out, logsumexp, is_causal=False, **kw):
        return torch.zeros_like(query), torch.zeros_like(key), torch.zeros_like(value)

    q = torch.zeros(1, HEADS, S_local, HEAD_DIM)
    k = torch.zeros(1, KV_HEADS, S_local, HEAD_DIM)
    v = torch.zeros(1, KV_HEADS, S_local, HEAD_DIM)
    res = {"case": case["name"], "kind": "ring-uneven", "seq_len": case["seq_len"], "cp": W, "rank": rank,
           "tokens": S_local, "strategy": case["strategy"], "torch": torch.__version__, "error": None}
    try:
        group = mesh["cp"].get_group()
        out, lse, *_ = A._templated_ring_attention(group, 2, fwd_op, q, k, v, is_causal=True)
        A._templated_ring_attention_backward(group, 2, bwd_op, torch.zeros_like(out), "grad_out", q, k, v, out,
                                             lse, is_causal=True)
    except Exception as e:  # noqa: BLE001
        res["error"] = {"type": type(e).__name__, "message": str(e).splitlines()[0][:300] if str(e) else ""}
    return res


CASES = [
    {"name": "shard-s48-cp2", "kind": "shard", "seq_len": 48, "cp": 2},
    {"name": "shard-s48-cp4", "kind": "shard", "seq_len": 48, "cp": 4},
    {"name": "shard-s18-cp4", "kind": "shard", "seq_len": 18, "cp": 4},   # 4 divides? no: 18 % 4 = 2
    {"name": "shard-s12-cp4", "kind": "shard", "seq_len": 12, "cp": 4},   # divisible by 4, not by 8
    {"name": "shard-s7-cp2", "kind": "shard", "seq_len": 7, "cp": 2},
    {"name": "ring-s48-cp2-allgather-f16", "kind": "ring", "seq_len": 48, "cp": 2, "batch": 1,
     "strategy": "allgather", "dtype": "float16"},
    {"name": "ring-s48-cp4-allgather-f16", "kind": "ring", "seq_len": 48, "cp": 4, "batch": 2,
     "strategy": "allgather", "dtype": "float16"},
    {"name": "ring-s48-cp4-alltoall-f16", "kind": "ring", "seq_len": 48, "cp": 4, "batch": 1,
     "strategy": "alltoall", "dtype": "float16"},
    {"name": "ring-s48-cp2-alltoall-f32", "kind": "ring", "seq_len": 48, "cp": 2, "batch": 1,
     "strategy": "alltoall", "dtype": "float32"},
    # cp does not divide the sequence (PLAN027): what the ring does with torch.chunk's unequal pieces.
    {"name": "ring-s7-cp2-allgather-uneven", "kind": "ring", "seq_len": 7, "cp": 2, "strategy": "allgather",
     "uneven": True},
    {"name": "ring-s7-cp2-alltoall-uneven", "kind": "ring", "seq_len": 7, "cp": 2, "strategy": "alltoall",
     "uneven": True},
]


def main():
    os.makedirs(OUT, exist_ok=True)
    only = sys.argv[1] if len(sys.argv) > 1 else ""
    for case in CASES:
        if only and only not in case["name"]:
            continue
        out = os.path.join(OUT, case["name"] + ".json")
        store = tempfile.mktemp(prefix="cpprobe-")
        ctx = mp.get_context("fork")
        procs = [ctx.Process(target=rank_main, args=(r, case["cp"], store, case, out)) for r in range(case["cp"])]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
        if case.get("uneven"):
            # A rank that gloo aborts (gloo::EnforceNotMet: terminate, SIGABRT) writes nothing: its exit
            # status stands for it.
            parts = [f"{out}.rank{r}" for r in range(case["cp"])]
            ranks = [json.load(open(x)) if os.path.exists(x) else
                     {"rank": r, "tokens": len(torch.arange(case["seq_len"]).chunk(case["cp"])[r]),
                      "error": {"type": "process died", "message": f"exit status {procs[r].exitcode}"}}
                     for r, x in enumerate(parts)]
            if True:
                with open(out, "w") as f:
                    json.dump({"case": case["name"], "kind": "ring-uneven", "seq_len": case["seq_len"],
                               "cp": case["cp"], "strategy": case["strategy"], "ranks": ranks,
                               "torch": torch.__version__}, f)
            for x in parts:
                if os.path.exists(x):
                    os.remove(x)
        print(case["name"], "ok" if os.path.exists(out) else "FAILED")


if __name__ == "__main__":
    main()
