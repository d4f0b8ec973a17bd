"""Shared by the oracle probes that load a model on W tensor-parallel ranks (activation_probe.py,
tp_values_probe.py): fork W processes, each `target(rank, W, store, *args)`, on a fresh file store."""
import multiprocessing as mp
import tempfile


def run_ranks(W: int, target, *args, timeout: float = 300) -> None:
    store = tempfile.mktemp(prefix="tpprobe-")
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=target, args=(r, W, store, *args)) for r in range(W)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout)
