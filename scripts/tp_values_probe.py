#!/usr/bin/python3
"""Probe: the values TP rank R really holds for a few split parameters, for smoke --weights.

  scripts/oracle2_run.sh python3 scripts/tp_values_probe.py MODEL TP RANK OUT.json PARAM...

Loads fixtures/oracle2/models/MODEL with transformers' tp_plan="auto" on a 1-D "tp" mesh of TP gloo
ranks (float32, CPU) and writes TP rank RANK's local tensor of each PARAM (name, shape, values in
row-major order) to OUT.json. tests/unit/test_smoke_tp_values.cpp reads the same elements from the
checkpoint through smoke's TP piece mapping and requires them bit for bit.
"""
import json, os, sys
os.environ["USE_LIBUV"] = "0"
import torch, torch.distributed as dist
from tp_probe_ranks import run_ranks


def run(rank, W, store, model, want_rank, out, params):
    os.environ.update(LOCAL_RANK=str(rank), RANK=str(rank), WORLD_SIZE=str(W))
    try:
        dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=W)
        from torch.distributed.device_mesh import init_device_mesh
        from transformers import AutoModelForCausalLM
        import transformers
        mesh = init_device_mesh("cpu", (W,), mesh_dim_names=("tp",))
        kwargs = {"experts_implementation": "eager"} if "moe" in model else {}
        m = AutoModelForCausalLM.from_pretrained("fixtures/oracle2/models/" + model, dtype=torch.float32,
                                                 tp_plan="auto", device_mesh=mesh["tp"], **kwargs)
        if rank == want_rank:
            named = dict(m.named_parameters())
            rec = {"model": model, "tp": W, "rank": rank,
                   "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
                   "params": [{"name": p, "shape": list(named[p].shape),
                               "values": [float(x) for x in named[p].detach().reshape(-1).tolist()]}
                              for p in params]}
            with open(out, "w") as f:
                json.dump(rec, f)
                f.write("\n")
        dist.barrier()
    except BaseException:
        import traceback; traceback.print_exc()
    os._exit(0)


def main():
    model, W, want, out, params = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5:]
    run_ranks(W, run, model, want, out, params)


if __name__ == "__main__":
    main()
