#!/usr/bin/python3
"""Probe: tensor parallelism over a key/value head count that tp_size does not divide, for real.

  scripts/oracle2_run.sh python3 scripts/tp_heads_probe.py 2

Loads fixtures/oracle2/models/llama (2 heads of 10, 1 key/value head) with transformers'
tp_plan="auto" on a 1-D "tp" mesh of W gloo ranks (CPU) and runs one forward and backward. With W=2,
transformers 5.12.1 + torch 2.14.1 shard k_proj to 5 rows per rank and the first forward raises
"RuntimeError: shape '[1, 5, -1, 10]' is invalid for input of size 25": the fact behind PLAN021.
Prints each rank's projection shapes and result.
"""
import os, sys, tempfile, torch, torch.distributed as dist, multiprocessing as mp, json, traceback
os.environ["USE_LIBUV"]="0"
def run(rank, W, store, out):
    os.environ.update(LOCAL_RANK=str(rank), RANK=str(rank), WORLD_SIZE=str(W))
    dist.init_process_group("gloo", init_method="file://"+store, rank=rank, world_size=W)
    from torch.distributed.device_mesh import init_device_mesh
    from transformers import AutoModelForCausalLM
    mesh = init_device_mesh("cpu", (W,), mesh_dim_names=("tp",))
    res={}
    stage="load"
    try:
        m = AutoModelForCausalLM.from_pretrained("fixtures/oracle2/models/llama", dtype=torch.float32, tp_plan="auto", device_mesh=mesh)
        res["q_shape"]=list(m.model.layers[0].self_attn.q_proj.weight.shape)
        res["k_shape"]=list(m.model.layers[0].self_attn.k_proj.weight.shape)
        stage="forward"
        ids=torch.tensor([[1,5,2,7,3]])
        m(input_ids=ids, labels=ids).loss.backward()
        res["ok"]=True
    except Exception as e:
        res["error"]=f"{stage}: {type(e).__name__}: {str(e)[:300]}"
    json.dump(res, open(out+f".{rank}","w"))
    os._exit(0)
if __name__=="__main__":
    W=int(sys.argv[1]); d=tempfile.mkdtemp(); ctx=mp.get_context("fork"); ps=[]
    for r in range(W):
        p=ctx.Process(target=run, args=(r,W,d+"/store",d+"/out")); p.start(); ps.append(p)
    for p in ps: p.join(120)
    for r in range(W):
        try: print(r, open(d+f"/out.{r}").read())
        except Exception as e: print(r, "no result")
