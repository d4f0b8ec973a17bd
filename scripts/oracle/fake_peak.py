#!/usr/bin/python3
"""Peak oracle at full model size: one rank of W under torch's fake process group and FakeTensorMode.

Dev-time tool, run in the chroot of scripts/oracle2_setup.sh:

  scripts/oracle2_run.sh python3 scripts/oracle/fake_peak.py --only 'llama3-8b*'

The same count as scripts/oracle/peak_oracle.py (its LiveBytes dispatch mode: every storage an op
returns, while it lives), but no tensor holds data and no collective moves any: FakeTensorMode gives
each op's outputs their real shapes and dtypes, and the "fake" backend
(torch.testing._internal.distributed.fake_pg) completes every collective at once. So full-size models
(Llama-3-8B on 8 ranks, at 8k and 32k tokens) and bf16 mixed precision, which gloo cannot all-gather,
are counted as a GPU job would allocate them. The DeviceMesh is built outside the fake mode.
Writes fixtures/oracle2/peak/<case>.json in peak_oracle.py's format, with "fake": true.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import peak_oracle as po  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch2_oracle as t2  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402
from torch.testing._internal.distributed.fake_pg import FakeStore  # noqa: E402

# Published configs (config.json of each model's repository), trimmed to what the model reads.
LLAMA3_8B = dict(model_type="llama", hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                 num_attention_heads=32, num_key_value_heads=8, vocab_size=128256, max_position_embeddings=131072,
                 rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=False)
po.MODELS["llama3_8b"] = LLAMA3_8B


def cases() -> list:
    cs = []
    for tokens, ac in ((8192, True), (8192, False), (32768, True)):
        c = po.case("llama3_8b", 2, 8, tokens, activation_checkpointing=ac, mixed_precision="bf16", load_dtype="bfloat16")
        c["case"] += "-bf16-fake"
        cs.append(c)
    c = po.case("llama3_8b", 2, 8, 8192, grad_accum=2, mixed_precision="bf16", load_dtype="bfloat16")
    c["case"] += "-bf16-fake"
    cs.append(c)
    return cs


def run(c: dict) -> dict:
    W = c["world_size"]
    os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE=str(W))
    if not dist.is_initialized():
        dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=W)
    torch.manual_seed(0)
    # The mesh outside the fake mode (accelerate's ParallelismConfig builds it in wrap_fsdp2).
    from accelerate.parallelism_config import ParallelismConfig
    pc = ParallelismConfig(dp_shard_size=W)
    mesh = pc.build_device_mesh("cpu")
    orig_build = pc.build_device_mesh
    import accelerate.parallelism_config as apc
    apc.ParallelismConfig.build_device_mesh = lambda self, device: mesh
    po.TRACKER = po.LiveBytes()
    try:
        with FakeTensorMode(allow_non_fake_inputs=True):
            with po.TRACKER:
                model = po.build(c)
                model = po.wrap(model, c, W)
                po.label_hooks(model)
                rec = po.train(model, c)
    finally:
        apc.ParallelismConfig.build_device_mesh = orig_build
    out = dict(c)
    import accelerate
    import transformers
    out["versions"] = {"torch": torch.__version__, "transformers": transformers.__version__,
                       "accelerate": accelerate.__version__}
    out["config"] = po.MODELS[c["model"]]
    out["fake"] = True
    out["ranks"] = [rec]
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="*")
    ap.add_argument("--out", default=po.OUT)
    a = ap.parse_args()
    for c in cases():
        if not fnmatch.fnmatch(c["case"], a.only):
            continue
        res = run(c)
        d = os.path.join(a.out, "models", c["model"])
        os.makedirs(d, exist_ok=True)
        po.make_config(c["model"]).to_json_file(os.path.join(d, "config.json"), use_diff=False)
        with open(os.path.join(a.out, c["case"] + ".json"), "w") as f:
            f.write(t2.dump(res))
        r = res["ranks"][0]
        print(f"{c['case']}: peak {r['peak']} at {r['peak_phase']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
