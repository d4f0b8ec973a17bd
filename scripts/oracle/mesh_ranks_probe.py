#!/usr/bin/python3
"""Where every global rank sits on accelerate's device mesh: the truth for shardcheck's mesh_ranks
(tests/unit/test_mesh_ranks.cpp). Dev-time, in the real-stack chroot (scripts/oracle2_setup.sh):

  scripts/oracle2_run.sh python3 scripts/oracle/mesh_ranks_probe.py

For each case and each global rank it builds accelerate 1.14's ParallelismConfig(...).build_device_mesh
("cpu") as that rank, over torch's fake process group (no other rank needs to exist), and records the
rank's coordinate on the mesh (DeviceMesh.get_coordinate) and its index in the group FSDP2 shards over
(the dp_shard_cp or dp_shard dim of ParallelismConfig.fsdp_dim_names).
"""
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.testing._internal.distributed.fake_pg import FakeStore

CASES = [
    dict(dp_replicate_size=2, dp_shard_size=4),
    dict(dp_replicate_size=3, dp_shard_size=2),
    dict(dp_shard_size=2, cp_size=2),
    dict(dp_replicate_size=2, dp_shard_size=2, tp_size=2),
    dict(dp_shard_size=2, cp_size=2, tp_size=2),
    dict(dp_replicate_size=2, dp_shard_size=2, cp_size=2, tp_size=2),
]


def main() -> int:
    import accelerate
    from accelerate.parallelism_config import ParallelismConfig
    out = {"versions": {"torch": torch.__version__, "accelerate": accelerate.__version__}, "cases": []}
    for kw in CASES:
        world = 1
        for v in kw.values():
            world *= v
        ranks, names, shard_dim = [], None, None
        for g in range(world):
            # Each rank's own view, as that rank builds it: its coordinate on the mesh, and the ranks of
            # the group FSDP2 shards over (accelerate's fsdp_dim_names without dp_replicate).
            os.environ.update(RANK=str(g), LOCAL_RANK=str(g), WORLD_SIZE=str(world))
            dist.init_process_group("fake", store=FakeStore(), rank=g, world_size=world)
            pc = ParallelismConfig(**kw)
            mesh = pc.build_device_mesh("cpu")
            names = list(mesh.mesh_dim_names)
            shard_dim = [n for n in pc.fsdp_dim_names if n != "dp_replicate"][0]
            group = mesh[shard_dim].mesh.flatten().tolist()
            ranks.append({"rank": g, **dict(zip(names, mesh.get_coordinate())), "fsdp_group": group,
                          "fsdp_index": group.index(g)})
            dist.destroy_process_group()
        out["cases"].append({"sizes": kw, "world_size": world, "dims": names, "fsdp_dim": shard_dim,
                             "ranks": ranks})
    path = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "oracle2", "accelerate", "mesh-ranks.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"{len(out['cases'])} cases -> {os.path.normpath(path)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
