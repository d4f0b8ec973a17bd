"""`shardcheck smoke` over real gloo process groups (LibTorch 1.13, CPU), run by run_smoke_tests.py.

Expected numbers are hand arithmetic on the tiny Llama fixture (hidden 20, 3 layers, vocab 37,
bf16; tests/unit/test_plan_fsdp.cpp): root = embed 740 + norm 20 + lm_head 740 = 1500 elements,
each layer 4360. Over W ranks a unit of N elements has S = ceil(N/W) per rank and W*S - N padding
(torch.chunk, FlatParamHandle._get_shard): W=3 -> root S=500 pad 0, layer S=1454 pad 2;
W=4 -> root 375, layer 1090, no padding.
"""

LLAMA = "{src}/fixtures/models/llama"
GPT2 = "{src}/fixtures/models/gpt2"
# Generous timeouts: under ASan on a busy 2-core machine a rank can take 10 s to start.
FAST = ["-b", "1K", "-e", "4K", "-f", "4", "-n", "2", "-w", "1", "--timeout", "60"]
QUICK = ["--no-sweep", "--no-unit-timing", "--timeout", "60"]


def units_check(world, pads):
    def check(doc):
        if doc["world_size"] != world or doc["backend"] != "gloo":
            return f"world {doc['world_size']} backend {doc['backend']}"
        got = [(u["path"], u["shard_numel"], u["pad_elements"]) for u in doc["units"]]
        if got != pads:
            return f"units {got}, expected {pads}"
        if doc["wrong_elements"] != 0 or doc["exit_code"] != 0 or doc["verdict"] != "ok":
            return f"verdict {doc['verdict']} wrong {doc['wrong_elements']}"
        for u in doc["units"]:
            if not u["reduce_scatter"]["ran"] or u["reduce_scatter"]["wrong"] != 0:
                return f"reduce_scatter of {u['path']}: {u['reduce_scatter']}"
        # nccl-tests: busbw = algbw * (n-1)/n, algbw = size / time.
        for row in doc["bandwidth"]["rows"]:
            algbw = row["size"] / (row["time_us"] * 1e-6) / 1e9
            if abs(row["algbw_gbps"] - algbw) > 1e-9 * max(1, algbw) or \
               abs(row["busbw_gbps"] - algbw * (world - 1) / world) > 1e-9 * max(1, algbw):
                return f"bandwidth row {row}"
        return None
    return check


LAYERS = ["model.layers.0", "model.layers.1", "model.layers.2"]
TP_LLAMA = "{src}/fixtures/oracle2/models/llama_tp"


def exact_units(doc, units):
    """The run's units (path, shard, padding) are `units` and every element of them was exact."""
    got = [(u["path"], u["shard_numel"], u["pad_elements"]) for u in doc["units"]]
    if got != units:
        return f"units {got}, expected {units}"
    if doc["wrong_elements"] != 0 or doc["verdict"] != "ok":
        return f"verdict {doc['verdict']} wrong {doc['wrong_elements']}"
    return None


def tp_check(tp, units):
    """Tensor parallelism: rank 0's units (TP rank 0's pieces), every element exact in every group."""
    def check(doc):
        if (doc["tp_size"], doc["shard_group_size"], doc["replicas"]) != (tp, 2, 1):
            return f"topology tp {doc['tp_size']} shard {doc['shard_group_size']} replicas {doc['replicas']}"
        if error := exact_units(doc, units):
            return error
        for u in doc["units"]:
            if not u["reduce_scatter"]["ran"] or u["reduce_scatter"]["wrong"] != 0:
                return f"reduce_scatter of {u['path']}: {u['reduce_scatter']}"
        return None
    return check


def replicated_check(shard, replicas, units, weight_bytes=None):
    """HSDP / NO_SHARD: S-rank shard groups, R replicas; every gradient slice all-reduced and exact."""
    def check(doc):
        if (doc["shard_group_size"], doc["replicas"]) != (shard, replicas):
            return f"topology {doc['shard_group_size']} x {doc['replicas']}, expected {shard} x {replicas}"
        if error := exact_units(doc, units):
            return error
        for u in doc["units"]:
            if not u["all_reduce"]["ran"] or u["reduce_scatter"]["wrong"] != 0:
                return f"gradient of {u['path']}: {u['reduce_scatter']} {u['all_reduce']}"
        if weight_bytes is not None and sum(u["weight_bytes_read"] for u in doc["units"]) != weight_bytes:
            return f"weight bytes {[u['weight_bytes_read'] for u in doc['units']]}, expected {weight_bytes} in all"
        for row in doc["bandwidth"]["rows"]:
            n = row["ranks"]
            factor = 2 * (n - 1) / n if row["collective"] == "all_reduce" else (n - 1) / n
            want_n = replicas if row["collective"] == "all_reduce" else shard
            algbw = row["size"] / (row["time_us"] * 1e-6) / 1e9
            if n != want_n or abs(row["busbw_gbps"] - algbw * factor) > 1e-9 * max(1, algbw):
                return f"bandwidth row {row}"
        return None
    return check

CASES = [
    # Verification passes on 1, 2, 3 and 4 ranks (FSDP1 flat parameters).
    {"name": "smoke llama W=1", "args": ["smoke", LLAMA, "--nproc", "1"] + FAST, "exit": 0,
     "stdout": ["shardcheck smoke: 1 rank, gloo on cpu", "OK: 4 units all-gathered and reduce-scattered exactly on 1 ranks",
                "# Avg bus bandwidth"]},
    {"name": "smoke llama W=2", "args": ["smoke", LLAMA, "--nproc", "2"] + FAST, "exit": 0,
     "stdout": ["OK: 4 units all-gathered and reduce-scattered exactly on 2 ranks",
                # the path that ran on gloo 1.13, said in the output
                "allgather into 2 tensors (gloo of LibTorch 1.13",
                "BF16 carried as bytes (gloo has no BF16)", "allreduce (sum) then each rank keeps its slice", "BF16 summed as F32"]},
    {"name": "smoke llama W=3 json", "quick": True, "args": ["smoke", LLAMA, "--nproc", "3", "--format", "json"] + FAST, "exit": 0,
     "json": units_check(3, [("", 500, 0)] + [(p, 1454, 2) for p in LAYERS])},
    {"name": "smoke llama W=4 json", "args": ["smoke", LLAMA, "--nproc", "4", "--format", "json"] + FAST, "exit": 0,
     "json": units_check(4, [("", 375, 0)] + [(p, 1090, 0) for p in LAYERS])},
    # FSDP2 per-parameter padded layout: 3 ranks.
    {"name": "smoke llama fsdp2 W=3", "quick": True, "args": ["smoke", LLAMA, "--nproc", "3", "--fsdp-version", "2"] + QUICK,
     "exit": 0, "stdout": ["FSDP2", "OK: 5 units"]},
    # --units: the largest 1 (a layer; ties go to the first) plus a sample of 1 of the others.
    {"name": "smoke --units", "args": ["smoke", LLAMA, "--nproc", "2", "--units", "1", "--sample", "1"] + QUICK,
     "exit": 0, "stdout": ["checked 2 of 4 units", "model.layers.0 "], "not_stdout": ["model.layers.2 "]},
    # --weights: shards read from the safetensors files (llama: 2 shard files; gpt2: base-model
    # names and the tied head), gathered back bit for bit.
    {"name": "smoke --weights llama W=1", "args": ["smoke", LLAMA, "--nproc", "1", "--weights"] + QUICK, "exit": 0,
     "stdout": ["equal to the checkpoint's bytes bit for bit"]},
    {"name": "smoke --weights llama W=3", "quick": True, "args": ["smoke", LLAMA, "--nproc", "3", "--weights"] + QUICK, "exit": 0,
     # every real element read once, 2 bytes each: (1500 + 3*4360) * 2
     "stdout": ["equal to the checkpoint's bytes bit for bit", "shard reads from the checkpoint: 29160 bytes"]},
    {"name": "smoke --weights llama fsdp2 W=4", "args": ["smoke", LLAMA, "--nproc", "4", "--weights",
                                                          "--fsdp-version", "2"] + QUICK, "exit": 0,
     "stdout": ["equal to the checkpoint's bytes bit for bit"]},
    {"name": "smoke --weights gpt2 W=2", "args": ["smoke", GPT2, "--nproc", "2", "--weights"] + QUICK, "exit": 0,
     "stdout": ["equal to the checkpoint's bytes bit for bit"]},
    # gpt_neox: F16 (gloo 1.13 moves and sums it natively) and the registry's checkpoint rename
    # embed_out. -> lm_head. (transformers >= 5.16, the default) undone to find the head on disk.
    {"name": "smoke --weights gpt_neox W=3", "args": ["smoke", "{src}/fixtures/models/gpt_neox", "--nproc", "3",
                                                      "--weights"] + QUICK, "exit": 0,
     "stdout": ["equal to the checkpoint's bytes bit for bit", "all_gather (F16): allgather into 3 tensors",
                "reduce_scatter (F16): allreduce (sum) then each rank keeps its slice"],
     "not_stdout": ["F16 carried as bytes", "F16 summed as F32"]},
    # The test-only shift: rank 1 sends elements [r*S+1, (r+1)*S+1). Root: 500 wrong, layers 1454
    # each (all real), every one seen by 3 ranks: 3 * (500 + 3*1454) = 14586.
    {"name": "smoke shifted shard caught", "quick": True, "args": ["smoke", LLAMA, "--nproc", "3", "--test-shift-shard", "1"] + QUICK,
     "exit": 20, "stdout": ["FAILED: 14586 wrong elements in 4 of 4 units on 3 ranks"]},
    {"name": "smoke shifted shard caught with --weights",
     "args": ["smoke", LLAMA, "--nproc", "2", "--weights", "--test-shift-shard", "1"] + QUICK,
     "exit": 20, "stdout": ["FAILED:", "differ from the checkpoint's bytes"]},
    # Faults: each ends within the timeout, names the ranks and the cause, with its own exit code.
    {"name": "smoke rank never joins", "quick": True, "args": ["smoke", LLAMA, "--nproc", "3", "--test-absent-rank", "2",
                                               "--no-sweep", "--timeout", "8"],
     "exit": 21, "stderr": ["rank 2 of WORLD_SIZE=3 never joined the rendezvous", "within 8 s (joined: 0, 1)"],
     "timeout": 120},
    {"name": "smoke rank dies", "quick": True, "args": ["smoke", LLAMA, "--nproc", "3", "--test-die-rank", "1", "--no-sweep",
                                        "--timeout", "30"],
     "exit": 22, "stderr": ["rank 1 (pid", "died: killed by signal 9 (SIGKILL)", "rank 1 last at 'joined'"],
     "timeout": 120},
    {"name": "smoke rank dies json", "args": ["smoke", LLAMA, "--nproc", "2", "--test-die-rank", "0", "--no-sweep",
                                             "--timeout", "30", "--format", "json"],
     "exit": 22, "json": lambda d: None if d["verdict"] == "error" and d["exit_code"] == 22 and
     "rank 0 (pid" in d["error"] else f"{d}", "timeout": 120},
    {"name": "smoke plan for another world size", "args": ["smoke", LLAMA, "--nproc", "3", "--world-size", "2"],
     "exit": 23, "stderr": ["--world-size 2 disagrees with the job's 3 ranks"]},
    # NO_SHARD: whole units on every rank (S = N, no padding), nothing gathered, every gradient
    # all-reduced over both ranks; only all-reduce rows in the bandwidth table.
    {"name": "smoke NO_SHARD W=2 json", "args": ["smoke", LLAMA, "--nproc", "2", "--sharding-strategy", "NO_SHARD",
                                                "--format", "json"] + FAST, "exit": 0,
     "json": replicated_check(1, 2, [("", 1500, 0)] + [(p, 4360, 0) for p in LAYERS])},
    # HYBRID_SHARD on 2 "machines" of 2: shard groups {0,1} and {2,3} (root S = 1500/2 = 750, layers
    # 2180, no padding); --weights: each group reads every real element once, 2 bytes each:
    # 2 x (1500 + 3 x 4360) x 2 = 58320 bytes.
    {"name": "smoke HYBRID_SHARD 2x2 --weights json", "quick": True,
     "args": ["smoke", LLAMA, "--nproc", "4", "--sharding-strategy", "HYBRID_SHARD", "--num-machines", "2",
              "--weights", "--format", "json"] + FAST, "exit": 0,
     "json": replicated_check(2, 2, [("", 750, 0)] + [(p, 2180, 0) for p in LAYERS], weight_bytes=58320)},
    {"name": "smoke FSDP2 HSDP --dp-replicate 2", "args": ["smoke", LLAMA, "--nproc", "4", "--fsdp-version", "2",
                                                          "--dp-replicate", "2"] + QUICK, "exit": 0,
     "stdout": ["2 replicas x 2-rank shard groups", "all_reduce (BF16): allreduce (sum) across 2 replicas",
                "OK: 5 units all-gathered and reduce-scattered in 2-rank shard groups and all-reduced across 2 "
                "replicas exactly on 4 ranks"]},
    # Tensor parallelism (FSDP2, dp_shard 2 x tp 2) on the TP Llama (hidden 24, 4 heads of 6, 4 KV heads,
    # intermediate 52, vocab 37, 2 layers, untied): TP rank 0 holds q/k/v [12, 24], o [24, 12], gate/up
    # [26, 24], down [24, 26] and whole norms: 3072 elements a layer; FSDP2 cuts each on dim 0 over 2
    # ranks: 3*6*24 + 12*12 + 2*13*24 + 12*26 + 2*12 = 1536 per rank, no padding. The embedding
    # [37, 24] is whole under TP: 19 rows = 456 per rank, 24 padding; lm_head [37, 24] with the final
    # norm: 456 + 12 = 468 per rank, 24 padding. Shard groups {0, 2} and {1, 3} (tp innermost), each
    # with its own pieces and pattern: a group that mixed TP ranks would count wrong elements.
    {"name": "smoke TP dp_shard 2 x tp 2 json", "quick": True,
     "args": ["smoke", TP_LLAMA, "--nproc", "4", "--fsdp-version", "2", "--tp-size", "2", "--format", "json"] + QUICK,
     "exit": 0, "json": tp_check(2, [("model.embed_tokens", 456, 24), ("model.layers.0", 1536, 0),
                                     ("model.layers.1", 1536, 0), ("model.norm", 468, 24)])},
    # Rank 1 (TP rank 1, data-parallel rank 0) sends its shards one element off: every element of its
    # shards is wrong, seen by both ranks of its group {1, 3} and by no one else:
    # 2 * (456 + 1536 + 1536 + 468) = 7992.
    {"name": "smoke TP shifted shard caught in its own TP group",
     "args": ["smoke", TP_LLAMA, "--nproc", "4", "--fsdp-version", "2", "--tp-size", "2",
              "--test-shift-shard", "1"] + QUICK,
     "exit": 20, "stdout": ["2 tensor-parallel ranks", "FAILED: 7992 wrong elements in 4 of 4 units on 4 ranks"]},
    # --weights: each rank reads its TP rank's piece of every tensor (rows of q/k/v/gate/up, columns of
    # o/down; tests/unit/test_smoke_tp_values.cpp holds the mapping to real transformers TP tensors),
    # then its FSDP2 shard of that piece. The shards of one TP rank's group partition its real
    # elements, 888 + 3072 + 3072 + 912 = 7944 (embedding, two layers, lm_head and norm), so the ranks
    # read 2 TP ranks x 7944 x 4 bytes = 63552.
    {"name": "smoke TP --weights bit for bit", "quick": True,
     "args": ["smoke", TP_LLAMA, "--nproc", "4", "--fsdp-version", "2", "--tp-size", "2", "--weights"] + QUICK,
     "exit": 0, "stdout": ["2 tensor-parallel ranks", "equal to the checkpoint's bytes bit for bit",
                           "shard reads from the checkpoint: 63552 bytes over all ranks"]},
    # The same layout from a saved plan (`plan --format json` records every TP rank's units and the TP layout
    # under tensor_parallel): the same units, shard groups, wrong-element count and checkpoint bytes.
    {"name": "smoke --plan TP dp_shard 2 x tp 2 json", "quick": True,
     "args": ["smoke", "--plan", "{work}/llama-plan-w2.json", "--nproc", "4", "--format", "json"] + QUICK,
     "setup": ["plan", TP_LLAMA, "--world-size", "4", "--fsdp-version", "2", "--tp-size", "2", "--format", "json"],
     "exit": 0, "json": tp_check(2, [("model.embed_tokens", 456, 24), ("model.layers.0", 1536, 0),
                                     ("model.layers.1", 1536, 0), ("model.norm", 468, 24)])},
    {"name": "smoke --plan TP shifted shard caught in its own TP group",
     "args": ["smoke", "--plan", "{work}/llama-plan-w2.json", "--nproc", "4", "--test-shift-shard", "1"] + QUICK,
     "setup": ["plan", TP_LLAMA, "--world-size", "4", "--fsdp-version", "2", "--tp-size", "2", "--format", "json"],
     "exit": 20, "stdout": ["2 tensor-parallel ranks", "FAILED: 7992 wrong elements in 4 of 4 units on 4 ranks"]},
    # --plan with --weights: the checkpoint's names (here transformers 5.x's fused experts, gate_up_proj from
    # the per-expert tensors on disk) come from the model's tree, the pieces from the plan's TP layout.
    {"name": "smoke --plan TP packed MoE experts --weights bit for bit",
     "args": ["smoke", "{src}/fixtures/oracle2/models/qwen3_moe_tp", "--plan", "{work}/llama-plan-w2.json",
              "--nproc", "4", "--weights"] + QUICK,
     "setup": ["plan", "{src}/fixtures/oracle2/models/qwen3_moe_tp", "--world-size", "4", "--fsdp-version", "2",
               "--tp-size", "2", "--format", "json"],
     "exit": 0, "stdout": ["2 tensor-parallel ranks", "equal to the checkpoint's bytes bit for bit"]},
    # A TP plan written before plans recorded every TP rank's units (this file: the plan above without
    # tensor_parallel.unit_sets and ranks[].unit_set) cannot say what the other TP ranks hold.
    {"name": "smoke --plan TP written before the unit sets",
     "args": ["smoke", "--plan", "{src}/tests/smoke/tp-plan-before-unit-sets.json", "--nproc", "4"] + QUICK,
     "exit": 2, "stderr": ["tp-plan-before-unit-sets.json is a tensor-parallel plan written before plans recorded "
                           "every TP rank's units"]},
    {"name": "smoke TP packed MoE experts --weights bit for bit",
     "args": ["smoke", "{src}/fixtures/oracle2/models/qwen3_moe_tp", "--nproc", "4", "--fsdp-version", "2",
              "--tp-size", "2", "--weights"] + QUICK,
     "exit": 0, "stdout": ["equal to the checkpoint's bytes bit for bit"]},
    # Mixed precision: torchtitan's FSDP2 policy gathers bf16 and reduces in fp32 (the plan's
    # compute_dtype / reduce_dtype), and so does the run.
    {"name": "smoke torchtitan mixed precision reduces in F32",
     "args": ["smoke", LLAMA, "--nproc", "2", "--fsdp-version", "2", "--fsdp2-caller", "torchtitan",
              "--mixed-precision", "bf16"] + QUICK, "exit": 0,
     "stdout": ["all_gather (BF16):", "reduce_scatter (F32):", "OK: 5 units"]},
    # The shift on rank 1 corrupts shard group {0,1} only.
    {"name": "smoke shifted shard caught under HYBRID_SHARD",
     "args": ["smoke", LLAMA, "--nproc", "4", "--sharding-strategy", "HYBRID_SHARD", "--num-machines", "2",
              "--test-shift-shard", "1"] + QUICK, "exit": 20, "stdout": ["FAILED:", "in 4 of 4 units on 4 ranks"]},
    # transformers 5.x fuses Mixtral's per-expert w1/w3 into mlp.experts.gate_up_proj and w2 into
    # down_proj: --weights reads them in that order from the per-expert tensors on disk.
    {"name": "smoke --weights mixtral fused experts", "args": ["smoke", "{src}/fixtures/models/mixtral", "--nproc", "2",
                                                              "--weights"] + QUICK, "exit": 0,
     "stdout": ["equal to the checkpoint's bytes bit for bit"]},
    {"name": "smoke RANK malformed", "args": ["smoke", LLAMA], "env": {"RANK": "x", "WORLD_SIZE": "2"},
     "exit": 29, "stderr": ["expected an integer from 0 to 1048576 in RANK, found 'x'"]},
    {"name": "smoke not a rank", "args": ["smoke", LLAMA], "exit": 29,
     "stderr": ["not started as a rank (RANK and WORLD_SIZE are unset)"]},
    {"name": "smoke unreachable master", "args": ["smoke", LLAMA, "--no-sweep", "--timeout", "2"],
     "env": {"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "{free_port}"},
     "exit": 25, "stderr": ["rank 1 cannot reach the master at 127.0.0.1:", "within 2 s"], "timeout": 120},
    {"name": "smoke port in use", "args": ["smoke", LLAMA, "--no-sweep", "--timeout", "2"],
     "env": {"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "{busy_port}"},
     "exit": 24, "stderr": ["rank 0 cannot listen on 127.0.0.1:", "the port is in use"], "timeout": 120},
    {"name": "smoke expect-busbw", "args": ["smoke", LLAMA, "--nproc", "2", "--expect-busbw", "100000"] + FAST,
     "exit": 26, "stdout": ["FAILED: average bus bandwidth", "below 0.9 x the expected 100000.000 GB/s"]},
    {"name": "smoke --plan", "args": ["smoke", "--plan", "{work}/llama-plan-w2.json", "--nproc", "2"] + QUICK,
     "exit": 0, "stdout": ["OK: 4 units"], "setup": ["plan", LLAMA, "--world-size", "2", "--format", "json"]},
    {"name": "smoke --plan for another world size", "args": ["smoke", "--plan", "{work}/llama-plan-w2.json",
                                                            "--nproc", "3"] + QUICK,
     "exit": 23, "stderr": ["llama-plan-w2.json is a plan for world size 2, this job has WORLD_SIZE=3"],
     "setup": ["plan", LLAMA, "--world-size", "2", "--format", "json"]},
    # bad-plan.json: `shardcheck plan --world-size 2 --format json` of llama, first two units, with
    # model.layers.0's padded_numel edited to 999 (2 x ceil(4360/2) = 4360 would be right).
    {"name": "smoke --plan inconsistent", "args": ["smoke", "--plan", "{src}/tests/smoke/bad-plan.json", "--nproc", "2"],
     "exit": 2, "stderr": ["bad-plan.json: inconsistent plan: unit 'model.layers.0': padded_numel 999 is not world "
                           "size 2 x shard_numel 2180"]},
]

# --weights --adapter: a PEFT adapter saved by real peft 0.20 (fixtures/peft-oracle/adapters) on its base
# model (fixtures/oracle2/models, float32): the base parameters are read from the model's files under
# their names before peft renamed them (".base_layer", "base_model.model."), the adapter's own from
# adapter_model.safetensors, and the gather must equal both files bit for bit.
ORACLE = "{src}/fixtures/oracle2/models"
PEFT_ADAPTERS = "{src}/fixtures/peft-oracle/adapters"
CASES += [
    # llama (hidden 20, 2 layers): root 1500 + layers 2 x 4360 elements, LoRA r 3 on q_proj (A 60, B 60) and
    # v_proj (A 60, B 30) in units of their own (the Trainer's policy): every real element read once,
    # (1500 + 8720 + 2 x 210) x 4 bytes = 42560.
    {"name": "smoke --weights --adapter llama-qv W=2", "quick": True,
     "args": ["smoke", ORACLE + "/llama", "--adapter", PEFT_ADAPTERS + "/llama-qv", "--nproc", "2", "--weights",
              "--no-env"] + QUICK, "exit": 0,
     "stdout": ["checked 11 of 11 units", "shard reads from the checkpoint: 42560 bytes",
                "equal to the checkpoint's bytes bit for bit"]},
    # qwen3_moe all-linear under FSDP2: nested ParamWrapper adapters on the experts and the router; the
    # fused gate_up_proj read from the model's file, the adapters from the adapter's. peft's all params
    # (12,436) are every element once: 49744 bytes.
    {"name": "smoke --weights --adapter qwen3_moe all-linear FSDP2 W=3",
     "args": ["smoke", ORACLE + "/qwen3_moe", "--adapter", PEFT_ADAPTERS + "/qwen3_moe-alllinear", "--nproc", "3",
              "--fsdp-version", "2", "--weights", "--no-env"] + QUICK, "exit": 0,
     "stdout": ["shard reads from the checkpoint: 49744 bytes", "equal to the checkpoint's bytes bit for bit"]},
    # modules_to_save (a trainable copy of lm_head saved in the adapter) and a tied model under FSDP1.
    {"name": "smoke --weights --adapter llama-mts FSDP2 W=3",
     "args": ["smoke", ORACLE + "/llama", "--adapter", PEFT_ADAPTERS + "/llama-mts", "--nproc", "3",
              "--fsdp-version", "2", "--weights", "--no-env"] + QUICK, "exit": 0,
     "stdout": ["equal to the checkpoint's bytes bit for bit"]},
    {"name": "smoke --weights --adapter gpt2 all-linear (tied head, base-model names) W=2",
     "args": ["smoke", ORACLE + "/gpt2", "--adapter", PEFT_ADAPTERS + "/gpt2-alllinear", "--nproc", "2",
              "--use-orig-params", "true", "--weights", "--no-env"] + QUICK, "exit": 0,
     "stdout": ["equal to the checkpoint's bytes bit for bit"]},
    {"name": "smoke --weights --adapter catches a shifted shard",
     "args": ["smoke", ORACLE + "/llama", "--adapter", PEFT_ADAPTERS + "/llama-qv", "--nproc", "2", "--weights",
              "--no-env", "--test-shift-shard", "1"] + QUICK, "exit": 20,
     "stdout": ["FAILED:", "differ from the checkpoint's bytes"]},
    {"name": "smoke --weights with LoRA flags has no saved adapter to compare with",
     "args": ["smoke", ORACLE + "/llama", "--lora-r", "4", "--nproc", "2", "--weights", "--no-env"] + QUICK,
     "exit": 28, "stderr": ["no adapter weights are saved to compare with"]},
    {"name": "smoke --weights with a 4-bit load: the checkpoint does not hold the 4-bit bytes",
     "args": ["smoke", ORACLE + "/llama", "--adapter", PEFT_ADAPTERS + "/llama-qv", "--load-in-4bit",
              "--bnb-4bit-quant-storage", "float32", "--nproc", "2", "--weights", "--no-env"] + QUICK,
     "exit": 28, "stderr": ["bitsandbytes makes the 4-bit bytes when the model is loaded"]},
]
