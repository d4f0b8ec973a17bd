"""CLI cases for `shardcheck plan` and `shardcheck check`. Numbers are hand arithmetic from the torch
sources (see tests/unit/test_plan_fsdp.cpp for the derivations) or accelerate's exact messages."""
import json

LLAMA = "{src}/fixtures/models/llama"
DEEPSEEK = "{src}/fixtures/models/deepseek_v3"


def units_by_path(doc):
    return {u["path"]: u for u in doc["units"]}


def fsdp1_w3(doc):
    u = units_by_path(doc)
    if u[""]["shard_numel"] != 500 or u[""]["numel"] != 1500:
        return f"root: {u['']['numel']} / {u['']['shard_numel']}, expected 1500 / 500"
    l1 = u["model.layers.1"]
    if (l1["numel"], l1["shard_numel"], l1["rank_pad"]) != (4360, 1454, [0, 0, 2]):
        return f"layer 1: {l1['numel']} {l1['shard_numel']} {l1['rank_pad']}"
    if doc["settings"]["world_size"]["source"] != "--world-size":
        return "world_size should come from --world-size"
    return None


def fsdp1_w3_memory(doc):
    # bf16 (2 B), no mixed precision, use_orig_params=False (optimizer over padded FlatParameters):
    # params = grads = (500 + 3*1454) * 2 = 9724; AdamW = 2 * 9724 = 19448.
    m = doc["memory"]["per_rank_bytes"]
    got = (m["params"], m["grads"], m["optimizer"])
    return None if got == (9724, 9724, 19448) else f"persistent bytes {got}, expected (9724, 9724, 19448)"


def fsdp2_w3(doc):
    l0 = units_by_path(doc)["model.layers.0"]
    if (l0["shard_numel"], l0["rank_pad"]) != (1538, [0, 0, 254]):
        return f"layer 0: {l0['shard_numel']} {l0['rank_pad']}, expected 1538 [0, 0, 254]"
    tail = units_by_path(doc)["model.norm"]
    if tail.get("modules") != ["model.norm", "lm_head"] or tail["reshard_after_forward"] is not False:
        return f"tail group {tail}"
    return None


def comm_w3(doc):
    # FSDP1 FULL_SHARD: root all-gathers once (kept through backward), each layer twice; every unit
    # reduce-scatters once. bf16: root 1500*2 = 3000 B; layer padded 4362*2 = 8724 B.
    c = doc["comm"]["per_step"]
    want_ag = 3000 + 3 * 2 * 8724
    want_rs = 3000 + 3 * 8724
    got = (c["all_gather_bytes"], c["reduce_scatter_bytes"], c["all_gathers"], c["reduce_scatters"])
    return None if got == (want_ag, want_rs, 7, 4) else f"comm {got}, expected {(want_ag, want_rs, 7, 4)}"


def deepseek_dequantized(doc):
    # Layer 0 of the dequantised fixture: 15172 bf16 elements (tests/unit/test_plan_dtypes.cpp); W=2.
    l0 = units_by_path(doc)["model.layers.0"]
    if (l0["numel"], l0["shard_numel"], l0["dtype"]) != (15172, 7586, "BF16"):
        return f"layer 0: {l0['numel']} {l0['shard_numel']} {l0['dtype']}, expected 15172 7586 BF16"
    return None if not doc["diagnostics"] else f"diagnostics {doc['diagnostics']}"


def collective_dtypes(want):
    # (master, all-gather, reduce-scatter) per unit: accelerate upcasts the bf16 fixture to fp32
    # masters under mixed precision and gathers/reduces in bf16; torchtitan reduces in fp32.
    def check(doc):
        got = {(u["dtype"], u["compute_dtype"], u["reduce_dtype"]) for u in doc["units"] if u["params"]}
        return None if got == {want} else f"unit dtypes {got}, expected {want}"
    return check


def sarif_ok(doc):
    if doc.get("version") != "2.1.0" or not doc.get("runs"):
        return "not SARIF 2.1.0"
    results = doc["runs"][0]["results"]
    rules = {r["id"] for r in doc["runs"][0]["tool"]["driver"]["rules"]}
    if not results or any(r["ruleId"] not in rules for r in results):
        return "every result needs a rule in tool.driver.rules"
    return None


CASES = [
    # A file with no end is refused after a bound, not read until memory runs out (util/bounded_read.hpp).
    {"name": "--adapter /dev/zero is refused after 64 MiB", "timeout": 30,
     "args": ["plan", LLAMA, "--no-env", "--adapter", "/dev/zero"], "exit": 3,
     "stderr": ["/dev/zero", "more than 67108864 bytes", "[IO005]"]},
    {"name": "--training-args /dev/zero is refused after 1 MiB", "timeout": 30,
     "args": ["plan", LLAMA, "--no-env", "--training-args", "/dev/zero"], "exit": 2,
     "stderr": ["at most 1048576 bytes", "/dev/zero"]},
    {"name": "--env-file /dev/zero is refused after 1 MiB", "timeout": 30,
     "args": ["plan", LLAMA, "--env-file", "/dev/zero"], "exit": 2,
     "stderr": ["at most 1048576 bytes", "/dev/zero"]},
    {"name": "plan FSDP1 W=3 units", "args": ["plan", LLAMA, "--world-size", "3", "--format", "json"], "json": fsdp1_w3},
    {"name": "plan FSDP1 W=3 memory", "args": ["plan", LLAMA, "--world-size", "3", "--format", "json"],
     "json": fsdp1_w3_memory},
    {"name": "plan FSDP1 W=3 communication", "args": ["plan", LLAMA, "--world-size", "3", "--format", "json"],
     "json": comm_w3},
    {"name": "plan FSDP2 W=3 groups", "args": ["plan", LLAMA, "--world-size", "3", "--fsdp-version", "2",
                                               "--format", "json"], "json": fsdp2_w3},
    {"name": "plan text collapses layers", "args": ["plan", LLAMA, "--world-size", "3"],
     "stdout": ["model.layers.{{0-2}}", "3 x LlamaDecoderLayer", "r2:2", "optimizer states fit in 79.11 GiB (h100-80gb, assumed: set --gpu or --gpu-memory)"]},
    {"name": "plan reads the official accelerate template",
     "args": ["plan", LLAMA, "--no-env", "--config",
              "{src}/fixtures/configs/good_docs_fsdp_template.yaml", "--format", "json"],
     "json": lambda d: None if d["settings"]["auto_wrap_policy"]["value"] == "TRANSFORMER_BASED_WRAP" else "policy"},
    {"name": "plan: an FP8 checkpoint kept quantised cannot be flattened, said once for all layers",
     "args": ["plan", DEEPSEEK, "--world-size", "2", "--transformers-version", "4.57.6"], "exit": 1,
     "stderr": ["Must flatten tensors with uniform dtype but got torch.float8_e4m3fn and torch.float32",
                "(the same in 2 more units: model.layers.1, model.layers.2) [PLAN002]", "--dequantize"]},
    {"name": "plan --dequantize: the FP8 checkpoint plans in bf16",
     "args": ["plan", DEEPSEEK, "--world-size", "2", "--use-orig-params", "false", "--dequantize",
              "--format", "json"], "json": deepseek_dequantized},
    {"name": "inspect --dequantize says so",
     "args": ["inspect", DEEPSEEK, "--dequantize"],
     "stdout": ["42,856 parameters", "BF16 42,856", "quantised weights loaded dequantised"]},
    {"name": "plan: mixed precision gathers and reduces in bf16 (accelerate)",
     "args": ["plan", LLAMA, "--world-size", "2", "--mixed-precision", "bf16", "--format", "json"],
     "json": collective_dtypes(("F32", "BF16", "BF16"))},
    {"name": "plan: torchtitan's FSDP2 policy reduces in fp32",
     "args": ["plan", LLAMA, "--world-size", "2", "--fsdp-version", "2", "--fsdp2-caller", "torchtitan",
              "--mixed-precision", "bf16", "--format", "json"],
     "json": collective_dtypes(("F32", "BF16", "F32"))},
    {"name": "plan: bad --gpu-memory is a usage error", "args": ["plan", LLAMA, "--gpu-memory", "lots"], "exit": 2},
    {"name": "check: the seed's flattened config is an error, and the plan of the fixed file is shown",
     "args": ["check", "--no-env", "--config", "{src}/fixtures/configs/seed_000_flattened_fsdp_config.yaml",
              "--model", LLAMA], "exit": 1,
     "stdout": ["seed_000_flattened_fsdp_config.yaml:6:1: error", "[flattened-fsdp-config]", "with shardcheck's fixes applied",
                "3 x LlamaDecoderLayer"]},
    {"name": "check: accelerate 0.34.0 per-character _no_split_modules gives class L",
     "args": ["check", "--no-env", "--config", "{src}/fixtures/check/tf_no_cls.yaml", "--model", LLAMA,
              "--accelerate-version", "0.34.0"], "exit": 1,
     "stdout": ["Could not find the transformer layer class L in the model."],
     "not_stdout": ["class l in the model"]},
    {"name": "check: the same file is clean on accelerate 0.34.1",
     "args": ["check", "--no-env", "--config", "{src}/fixtures/check/tf_no_cls.yaml", "--model", LLAMA,
              "--accelerate-version", "0.34.1"], "exit": 0, "stdout": ["0 error(s)"]},
    {"name": "check: a misspelled class gets accelerate's error and a did-you-mean",
     "args": ["check", "--no-env", "--config", "{src}/fixtures/check/wrong_cls.yaml", "--model", LLAMA], "exit": 1,
     "stdout": ["wrong_cls.yaml:7:1: error: ValueError: Could not find the transformer layer class LlamaDecoderLayr",
                "did you mean 'LlamaDecoderLayer'"]},
    {"name": "check: NO_WRAP warns that the root keeps everything; --strict fails on it",
     "args": ["check", "--no-env", "--strict", "--config", "{src}/fixtures/check/no_policy.yaml", "--model", LLAMA],
     "exit": 1, "stdout": ["root unit keeps 14580 of 14580"]},
    {"name": "check: a stale FSDP_AUTO_WRAP_POLICY leaks in when the file has no policy",
     "args": ["check", "--config", "{src}/fixtures/check/no_policy.yaml", "--model", LLAMA, "--format", "json"],
     "env": {"FSDP_AUTO_WRAP_POLICY": "transformer_based_wrap"},
     "json": lambda d: None if d["settings"]["auto_wrap_policy"]["source"] == "env FSDP_AUTO_WRAP_POLICY"
     else f"policy source {d['settings']['auto_wrap_policy']}"},
    {"name": "check: does not fit in a tiny GPU (exit 1, FIT001)",
     "args": ["check", "--no-env", "--model", LLAMA, "--world-size", "2", "--gpu-memory", "10KiB"], "exit": 1,
     "stdout": ["FIT001", "DOES NOT FIT", "but a GPU has 10.00 KiB (params"]},
    {"name": "check: SARIF output", "args": ["check", "--no-env", "--config", "{src}/fixtures/check/wrong_cls.yaml",
                                              "--model", LLAMA, "--format", "sarif"], "exit": 1, "json": sarif_ok},
    {"name": "check: GitHub annotations", "args": ["check", "--no-env", "--config", "{src}/fixtures/check/wrong_cls.yaml",
                                                    "--model", LLAMA, "--format", "github"], "exit": 1,
     "stdout": ["::error file="]},
    {"name": "check: missing model is an I/O error (exit 3)",
     "args": ["check", "--no-env", "--model", "{work}/nope"], "exit": 3},
]
CASES += [
    {"name": "plan: an unreadable --config stops before planning (exit 3)",
     "args": ["plan", LLAMA, "--config", "{work}/missing.yaml"], "exit": 3, "not_stdout": ["FSDP1"]},
]


def activations_ckpt(doc):
    # Tiny llama, 16 tokens, bf16: checkpointed inputs 3*20*16*2 = 1920, one recomputed block
    # (348*2 + 46*4)*16 = 14080 (bf16 block and its float32 part), logits 37*16*10 = 5920 (tests/unit/test_memory_activations.cpp).
    a = doc["memory"]["activations"]
    got = (a["blocks_bytes"], a["recompute_bytes"], a["logits_bytes"], doc["memory"]["per_rank_bytes"]["activations"])
    if got != (1920, 14080, 5920, 21920):
        return f"activations {got}, expected (1920, 14080, 5920, 21920)"
    if doc["settings"]["activation_checkpointing"]["source"] != "--activation-checkpointing":
        return "activation_checkpointing should come from the flag"
    return None


def comm_seconds(doc):
    # (55344 + 29172) bytes * 2/3 / 1e9 B/s (see test_memory_activations.cpp).
    got = doc["comm"]["per_step"]["seconds"]
    return None if abs(got - 84516 * 2 / 3 / 1e9) < 1e-15 else f"seconds {got}"


CASES += [
    {"name": "plan: activations with checkpointing, as JSON",
     "args": ["plan", LLAMA, "--world-size", "3", "--seq-len", "8", "--micro-batch", "2",
              "--activation-checkpointing", "true", "--format", "json"], "json": activations_ckpt},
    {"name": "plan: activations from fsdp_activation_checkpointing in the accelerate file",
     "args": ["plan", LLAMA, "--no-env", "--world-size", "3", "--seq-len", "8", "--micro-batch", "2",
              "--config", "{src}/fixtures/check/activation_checkpointing.yaml"],
     "stdout": ["checkpointed block inputs 1.88 KiB + one recomputed block 13.75 KiB"]},
    {"name": "plan: text says activations are not counted without --seq-len",
     "args": ["plan", LLAMA, "--world-size", "3"], "stdout": ["activations not included: give --seq-len"]},
    {"name": "plan: --seq-len without --micro-batch is a usage error",
     "args": ["plan", LLAMA, "--seq-len", "8"], "exit": 2, "stderr": ["--seq-len and --micro-batch go together"]},
    {"name": "plan: communication time at --bus-bandwidth",
     "args": ["plan", LLAMA, "--world-size", "3", "--bus-bandwidth", "1 GB/s", "--format", "json"],
     "json": comm_seconds},
    {"name": "plan: a bad --bus-bandwidth is a usage error",
     "args": ["plan", LLAMA, "--bus-bandwidth", "fast"], "exit": 2,
     "stderr": ["expected a bandwidth like 350GB/s for --bus-bandwidth, found 'fast'"]},
]


def hsdp_groups(doc):
    # 6 ranks, dp_replicate 2: shard over 3 (layer shard 1538 as W=3), replicate over 2.
    got = (doc["shard_group_size"], doc["replicate_group_size"], units_by_path(doc)["model.layers.0"]["shard_numel"],
           doc["settings"]["dp_replicate"]["source"])
    return None if got == (3, 2, 1538, "--dp-replicate") else f"HSDP {got}"


CASES += [
    {"name": "plan: FSDP2 HSDP with --dp-replicate", "json": hsdp_groups,
     "args": ["plan", LLAMA, "--fsdp-version", "2", "--world-size", "6", "--dp-replicate", "2", "--format", "json"]},
    {"name": "plan: FSDP2 groups of transformers' native plan (main 5.16), named in the header",
     "args": ["plan", "{src}/fixtures/models/gpt2", "--fsdp-version", "2", "--world-size", "3",
              "--fsdp2-caller", "transformers", "--transformers-version", "5.16.0"],
     "stdout": ["fully_shard calls as transformers makes them"],
     "stderr": ["the root unit keeps 4428 of 4428 parameters"]},
    {"name": "plan: an unknown --fsdp2-caller is a usage error",
     "args": ["plan", LLAMA, "--fsdp2-caller", "megatron"], "exit": 2, "stderr": ["megatron"]},
]


def prefetch_from_file(doc):
    # good_docs_fsdp_template.yaml sets fsdp_backward_prefetch: BACKWARD_PRE (line 11).
    bp = doc["settings"]["backward_prefetch"]
    return None if (bp["value"], bp["source"].endswith(":11")) == ("BACKWARD_PRE", True) else f"backward_prefetch {bp}"


def prefetch_default_none(doc):
    bp = doc["settings"]["backward_prefetch"]
    return None if bp["value"] == "NO_PREFETCH" else f"backward_prefetch {bp}, expected accelerate's None"


CASES += [
    {"name": "plan: backward prefetch read from the accelerate file", "json": prefetch_from_file,
     "args": ["plan", LLAMA, "--no-env", "--config", "{src}/fixtures/configs/good_docs_fsdp_template.yaml",
              "--format", "json"]},
    {"name": "plan: accelerate passes no backward prefetch unless the file sets it", "json": prefetch_default_none,
     "args": ["plan", LLAMA, "--no-env", "--config", "{src}/fixtures/check/no_policy.yaml", "--format", "json"]},
]

CASES += [
    {"name": "plan: print(model)-style tree with the units marked",
     "args": ["plan", LLAMA, "--world-size", "3"],
     "stdout": ["LlamaForCausalLM  14.6K params  <FSDP unit 1,500 -> 500/rank, pad none, BF16>",
                "(0-2): 3 x LlamaDecoderLayer  4.4K params  <FSDP unit 4,360 -> 1,454/rank, pad r2:2, BF16>"]},
    {"name": "plan: a fully_shard group is marked on each of its modules (torch 2.11: the tie is silently split)",
     "args": ["plan", "{src}/fixtures/models/gemma", "--world-size", "3", "--fsdp-version", "2",
              "--torch-version", "2.11.0"],
     "stdout": ["(norm): GemmaRMSNorm  20 params  <fully_shard 760 -> 267/rank, pad r2:41, BF16, kept after forward>",
                "<in the fully_shard group of model.norm>"]},
    {"name": "plan --no-tree prints only the table",
     "args": ["plan", LLAMA, "--world-size", "3", "--no-tree"], "stdout": ["model.layers.{{0-2}}"],
     "not_stdout": ["<FSDP unit"]},
]

CASES += [
    {"name": "plan: --ignored-modules leaves the embedding whole on every rank",
     "args": ["plan", LLAMA, "--world-size", "3", "--ignored-modules", "model\\.embed_tokens", "--no-tree"],
     "stdout": ["<root>                             LlamaForCausalLM                           760             254",
                "ignored modules (not sharded)            5.78 KiB"]},
    {"name": "plan: an invalid regex is a usage error, not a crash",
     "args": ["plan", LLAMA, "--ignored-modules", "("], "exit": 2,
     "stderr": ["--ignored-modules: error: expected a regular expression, found '('", "PLAN016"]},
]

# Settings validated once after merging (src/resolve/validate_settings.cpp): no crash, no plan on a
# value no job runs with, and a usage error for a bad flag.
CASES += [
    {"name": "check: num_processes 0 launches one process per machine (SET002), planned on 1 rank",
     "args": ["check", "--no-env", "--config", "{src}/fixtures/check/num_processes_0.yaml", "--model", LLAMA,
              "--format", "json"],
     "json": lambda d: None if d["settings"]["world_size"]["value"] == 1 and any(
         x["rule"] == "SET002" for x in d["diagnostics"]) else f"world size {d['settings']['world_size']}"},
    {"name": "check: num_processes -3 is refused with its line (SET001, exit 1)",
     "args": ["check", "--no-env", "--config", "{src}/fixtures/check/num_processes_minus3.yaml", "--model", LLAMA],
     "exit": 1, "stdout": ["num_processes_minus3.yaml:4:1: error: expected num_processes", "found -3", "[SET001]"],
     "not_stdout": ["fits"]},
    {"name": "plan: --world-size -8 is a usage error (exit 2), no plan",
     "args": ["plan", LLAMA, "--world-size", "-8"], "exit": 2,
     "stderr": ["--world-size: error:", "found -8"], "not_stdout": ["rank(s)"]},
    {"name": "plan: --world-size 0 is a usage error (exit 2)",
     "args": ["plan", LLAMA, "--world-size", "0"], "exit": 2, "stderr": ["found 0"]},
    {"name": "plan: --min-num-params -1 with the size policy is a usage error (exit 2)",
     "args": ["plan", LLAMA, "--policy", "size", "--min-num-params", "-1"], "exit": 2,
     "stderr": ["expected a positive --min-num-params, found -1"]},
    {"name": "check: HYBRID_SHARD over 3 ranks on 2 machines is refused as plan is (SET003), not NO_SHARD",
     "args": ["check", "--no-env", "--model", LLAMA, "--world-size", "3", "--num-machines", "2",
              "--sharding-strategy", "HYBRID_SHARD"], "exit": 2,
     "stdout": ["num_processes 3 is not divisible by num_machines 2", "[SET003]"], "not_stdout": ["NO_SHARD"]},
]

# A fit verdict only for a job that can run, and only with activations (src/pipeline/stage_fit.cpp).
CASES += [
    {"name": "check: a wrong layer class withholds the fit verdict (the job dies in prepare)",
     "args": ["check", "--no-env", "--config", "{src}/fixtures/check/wrong_cls.yaml", "--model", LLAMA], "exit": 1,
     "stdout": ["no fit verdict: the job fails before training (PLAN012"], "not_stdout": ["fits in", "headroom"]},
    {"name": "plan JSON: a withheld verdict has fits null",
     "args": ["plan", LLAMA, "--world-size", "2", "--wrap-cls", "LlamaDecoderLayr", "--format", "json"], "exit": 1,
     "json": lambda d: None if d["memory"]["fits"] is None and d["memory"]["verdict"] == "withheld"
     else f"memory {d['memory']['fits']} {d['memory']['verdict']}"},
    {"name": "plan: with activations the verdict is a full one",
     "args": ["plan", LLAMA, "--world-size", "3", "--seq-len", "8", "--micro-batch", "2"],
     "stdout": ["fits in 79.11 GiB (h100-80gb, assumed: set --gpu or --gpu-memory) with"], "not_stdout": ["not estimated"]},
    {"name": "check: FIT001's help lists only remedies not already on",
     "args": ["check", "--no-env", "--model", LLAMA, "--world-size", "2", "--gpu-memory", "10KiB",
              "--mixed-precision", "bf16", "--offload-params", "true"], "exit": 1,
     "stdout": ["help: use more GPUs (num_processes)"], "not_stdout": ["offload_params: true", "mixed_precision: bf16"]},
]

# The release set (src/resolve/stack_versions.cpp, rules/versions.yaml).
CASES += [
    {"name": "plan: FSDP2 with a tied embedding fails at the first forward on torch 2.14 (PLAN019)",
     "args": ["plan", "{src}/fixtures/models/gemma", "--world-size", "3", "--fsdp-version", "2"], "exit": 1,
     "stderr": ["Parameter 'model.embed_tokens.weight' is shared with a parameter already managed by another FSDP",
                "[PLAN019]", "fsdp_version: 1"], "stdout": ["no fit verdict"]},
    {"name": "plan: versions default to the checked release set, each with its source",
     "args": ["plan", LLAMA, "--world-size", "2", "--no-env", "--format", "json"], "env": {"VIRTUAL_ENV": ""},
     "json": lambda d: None if (d["settings"]["torch_version"], d["settings"]["transformers_version"],
                                d["settings"]["accelerate_version"]) == (
         {"value": "2.14.1", "source": "default"}, {"value": "5.12.1", "source": "default"},
         {"value": "1.14.0", "source": "default"}) else f"versions {d['settings']}"},
    {"name": "plan: --torch-version 1.13 alone assumes the transformers of its time, not 5.x",
     "args": ["plan", LLAMA, "--world-size", "2", "--torch-version", "1.13.1", "--format", "json"],
     "json": lambda d: None if d["settings"]["transformers_version"] == {"value": "4.55.0",
                                                                      "source": "default for torch 1.13.1"}
     else f"transformers {d['settings']['transformers_version']}"},
    {"name": "plan: transformers 5.12 on torch 1.13 cannot run (SET005, usage error for the flags)",
     "args": ["plan", LLAMA, "--torch-version", "1.13.1", "--transformers-version", "5.12.1"], "exit": 2,
     "stderr": ["transformers 5.12.1 cannot run on torch 1.13.1: it needs torch 2.4.0 or later", "[SET005]"]},
    {"name": "plan: a transformers release before the model existed (SET005)",
     "args": ["plan", LLAMA, "--transformers-version", "4.3.0"], "exit": 2,
     "stderr": ["model_type llama does not exist in transformers 4.3.0: it was added in 4.28.0"]},
    {"name": "plan: a torch release from the future is a warning, not silence",
     "args": ["plan", LLAMA, "--torch-version", "3.7"],
     "stderr": ["torch 3.7.0 is newer than the newest release shardcheck was checked against (2.14.1)"]},
    {"name": "plan: versions from the job's Python environment (Debian egg-info and wheel dist-info)",
     "args": ["plan", LLAMA, "--world-size", "2", "--python-env", "{src}/fixtures/python-env", "--format", "json"],
     "json": lambda d: None if (d["settings"]["torch_version"]["value"], d["settings"]["transformers_version"]["value"],
                                d["settings"]["accelerate_version"]["value"]) == ("2.7.1", "4.57.6", "1.10.1")
     and d["settings"]["torch_version"]["source"].startswith("--python-env ")
     else f"versions {d['settings']}"},
]

# FSDP1 flattens the dtypes as loaded: accelerate upcasts each FlatParameter to fp32 only after
# FSDP(model) (accelerator.py prepare_model, 1.14.0), so mixed precision does not hide a mixed unit.
CASES += [
    {"name": "plan: FSDP1 with bf16 mixed precision still fails on the FP8 checkpoint's mixed dtypes (PLAN002)",
     "args": ["plan", DEEPSEEK, "--world-size", "2", "--transformers-version", "4.57.6", "--mixed-precision", "bf16"],
     "exit": 1, "stderr": ["Must flatten tensors with uniform dtype but got", "[PLAN002]"]},
]

# A mistyped local path is said first, with the closest name (src/load/model_source.cpp).
CASES += [
    {"name": "plan: a mistyped directory gets a did-you-mean (IO002, exit 3)",
     "args": ["plan", "{src}/fixtures/models/lama"], "exit": 3,
     "stderr": ["did you mean '", "fixtures/models/llama'?"]},
    {"name": "plan: a mistyped config.json gets a did-you-mean",
     "args": ["plan", "{src}/fixtures/models/llama/config.jsn"], "exit": 3,
     "stderr": ["fixtures/models/llama/config.json'?"]},
    {"name": "plan: a name that is neither a local path nor a cached model says the local path first, offline",
     "args": ["plan", "llama3-8bb"], "env": {"HF_HUB_OFFLINE": "1", "HF_HOME": "{work}/no-hf-home"}, "exit": 30,
     "stderr": ["note: no local file or directory 'llama3-8bb'", "[IO004]", "HF_HUB_OFFLINE"]},
]

# check's command line (src/cli/cmd_check.cpp): the model as a positional or --model, --no-tree accepted.
CASES += [
    {"name": "check: the same model as positional and --model is accepted, with --no-tree",
     "args": ["check", "--no-env", LLAMA, "--model", LLAMA, "--no-tree"], "stdout": ["0 error(s)"]},
    {"name": "check: two different models are a usage error",
     "args": ["check", "--no-env", LLAMA, "--model", DEEPSEEK], "exit": 2, "stderr": ["two models given"]},
    {"name": "check: no model is a usage error that says how to give one",
     "args": ["check", "--no-env"], "exit": 2, "stderr": ["`check MODEL` or `check --model MODEL`"]},
    {"name": "plan --help does not repeat the exit-code table",
     "args": ["plan", "--help"], "stdout": ["all of them: shardcheck --help"], "not_stdout": ["cache unwritable"]},
]

CASES += [
    {"name": "plan: --gpu-memory without a unit is refused (it meant 80 bytes)",
     "args": ["plan", LLAMA, "--gpu-memory", "80"], "exit": 2, "stderr": ["with its unit, like 80GiB"]},
]

# from_pretrained's dtype per transformers release (src/resolve/build_tree.cpp apply_load_dtype).
CASES += [
    {"name": "plan: transformers 4.x loads a bf16 checkpoint in float32 by default",
     "args": ["plan", LLAMA, "--world-size", "2", "--transformers-version", "4.57.6", "--format", "json"],
     "json": lambda d: None if {u["dtype"] for u in d["units"]} == {"F32"} else f"dtypes {[u['dtype'] for u in d['units']]}"},
    {"name": "plan: transformers 5.x loads it as the config says (dtype auto)",
     "args": ["plan", LLAMA, "--world-size", "2", "--format", "json"],
     "json": lambda d: None if {u["dtype"] for u in d["units"]} == {"BF16"} else f"dtypes {[u['dtype'] for u in d['units']]}"},
    {"name": "plan: --load-dtype bfloat16 on transformers 4.x",
     "args": ["plan", LLAMA, "--world-size", "2", "--transformers-version", "4.57.6", "--load-dtype", "bfloat16",
              "--format", "json"],
     "json": lambda d: None if {u["dtype"] for u in d["units"]} == {"BF16"} else f"dtypes {[u['dtype'] for u in d['units']]}"},
]

# GPU presets (rules/gpus.yaml): the memory PyTorch reports, not the marketed size.
CASES += [
    {"name": "plan --gpu h100-80gb: 79.11 GiB as PyTorch reports an H100",
     "args": ["plan", LLAMA, "--world-size", "2", "--gpu", "h100-80gb", "--format", "json"],
     "json": lambda d: None if d["memory"]["gpu_memory_bytes"] == int(79.11 * 2**30) else f"{d['memory']['gpu_memory_bytes']}"},
    {"name": "plan --gpu h200: 139.80 GiB as PyTorch reports an H200",
     "args": ["plan", LLAMA, "--world-size", "2", "--gpu", "h200", "--format", "json"],
     "json": lambda d: None if d["memory"]["gpu_memory_bytes"] == int(139.80 * 2**30) else f"{d['memory']['gpu_memory_bytes']}"},
    {"name": "plan --gpu mi300x: 191.69 GiB as ROCm's PyTorch reports an MI300X VF",
     "args": ["plan", LLAMA, "--world-size", "2", "--gpu", "mi300x", "--format", "json"],
     "json": lambda d: None if d["memory"]["gpu_memory_bytes"] == int(191.69 * 2**30) else f"{d['memory']['gpu_memory_bytes']}"},
    {"name": "plan --gpu with an unknown name lists the presets",
     "args": ["plan", LLAMA, "--gpu", "b200"], "exit": 2, "stderr": ["expected one of a100-40gb, a100-80gb, h100-80gb, h100-nvl, h200, mi300x"]},
    {"name": "plan --gpu and --gpu-memory together is a usage error",
     "args": ["plan", LLAMA, "--gpu", "a100-40gb", "--gpu-memory", "40GB"], "exit": 2, "stderr": ["use one"]},
]

CASES += [
    {"name": "plan: transformers' native FSDP2 plan does not exist in 5.12.1 (SET005)",
     "args": ["plan", "{src}/fixtures/models/gpt2", "--fsdp-version", "2", "--world-size", "3",
              "--fsdp2-caller", "transformers"], "exit": 1,
     "stderr": ["transformers 5.12.1 has no native FSDP2 plan", "[SET005]"]},
]

# A composite model planned as its text part alone is not the job's plan (ARCH002, exit 11): aya_vision,
# which the registry does not describe (fixtures/check/aya_vision, a tiny hand-written config: a SigLIP
# tower and a llama text_config).
CASES += [
    {"name": "plan: aya_vision (llama text_config) is refused as a whole-model plan (ARCH002, exit 11, no verdict)",
     "args": ["plan", "{src}/fixtures/check/aya_vision", "--world-size", "2"], "exit": 11,
     "stderr": ["composite model the registry does not describe", "[ARCH002]"],
     "stdout": ["no fit verdict: shardcheck cannot lay out this model"], "not_stdout": ["fits in"]},
    # mistral3 is described whole (rules/models/mistral3.yaml, issue #39): the Pixtral tower and a llama
    # text model; Mistral3PreTrainedModel declares no _no_split_modules, so the class list is the
    # sub-models' union and accelerate finds every class it names.
    {"name": "plan: mistral3 (llama text_config) is planned whole: Pixtral tower and language model",
     "args": ["plan", "{src}/fixtures/check/mistral3", "--world-size", "2"], "exit": 0,
     "stdout": ["Mistral3ForConditionalGeneration", "PixtralAttentionLayer", "LlamaDecoderLayer", "fit in"]},
    # llava is described whole: its vision tower and language model, and accelerate's default class list
    # (the union _no_split_modules) names CLIPTextEmbeddings, which the model lacks (real accelerate
    # raises the same: fixtures/oracle2/llava-fsdp1-tf-w3.json).
    {"name": "plan: llava is planned whole; with no class list accelerate cannot find CLIPTextEmbeddings (PLAN012)",
     "args": ["plan", "{src}/fixtures/check/llava", "--world-size", "2"], "exit": 1,
     "stderr": ["Could not find the transformer layer class CLIPTextEmbeddings in the model.", "[PLAN012]",
                "CLIPEncoderLayer, LlamaDecoderLayer"],
     "stdout": ["model.vision_tower.encoder.layers", "no fit verdict: the job fails before training"]},
]

# A trust_remote_code model (auto_map in config.json; fixtures/check/internlm2, InternLM2-7B's shape):
# its classes are the repository's own, so it is named as such, not only as an unknown model_type.
CASES += [
    {"name": "plan: a trust_remote_code model is named as such (auto_map), no plan without a checkpoint",
     "args": ["plan", "{src}/fixtures/check/internlm2", "--world-size", "2", "--no-env"], "exit": 11,
     "stderr": ["model_type 'internlm2' is not in the registry", "trust_remote_code model",
                "AutoModelForCausalLM = modeling_internlm2.InternLM2ForCausalLM", "[ARCH001]"]},
]

# An unknown model_type with a checkpoint is laid out from its tensor names (ARCH001): the wrap class is
# the guessed repeated block standing in for the model's own _no_split_modules, said so (ARCH004);
# naming the class silences it.
CASES += [
    {"name": "plan: an inferred model wraps its guessed block and says that the real class list is unknown (ARCH004)",
     "args": ["plan", "{src}/fixtures/models/toyformer", "--world-size", "2", "--no-env"], "exit": 0,
     "stderr": ["[ARCH001]", "_no_split_modules is unknown", "[ARCH004]", "--wrap-cls"]},
    {"name": "plan: an inferred model with --wrap-cls has no ARCH004",
     "args": ["plan", "{src}/fixtures/models/toyformer", "--world-size", "2", "--no-env", "--wrap-cls",
              "GuessedBlocksBlock"], "not_stderr": ["ARCH004"]},
]

# Tensor parallelism over heads it does not divide fails at the first forward (PLAN021).
CASES += [
    {"name": "check: tp_size 4 with 2 key/value heads fails at the first forward (PLAN021)",
     "args": ["check", "--no-env", "--config", "{src}/fixtures/check/tp4.yaml", LLAMA], "exit": 1,
     "stdout": ["tp4.yaml:11:1: error: RuntimeError: shape '[batch, seq, -1, head_dim]' is invalid",
                "num_key_value_heads 2 is not divisible by tp_size 4", "[PLAN021]"]},
    {"name": "check: tp_size 2 divides 4 heads and 2 key/value heads (no PLAN021)",
     "args": ["check", "--no-env", "--config", "{src}/fixtures/check/tp2.yaml", LLAMA],
     "not_stdout": ["PLAN021"]},
]

# FSDP2 over tensor-parallel pieces (transformers 5.12.1 layout; the oracle model llama_tp: hidden 24,
# 4 heads of 6, intermediate 52). A decoder layer on one TP rank of 2: q, k, v [12, 24] and o [24, 12]
# (4 x 288), gate and up [26, 24] and down [24, 26] (3 x 624), two norms of 24: 3,072 elements, 1,536
# per rank of dp_shard 2.
TP_MODEL = "{src}/fixtures/oracle2/models/llama_tp"
CASES += [
    {"name": "plan: FSDP2 with tp_size 2 shows the mesh and plans TP rank 0's pieces",
     "args": ["plan", TP_MODEL, "--world-size", "4", "--fsdp-version", "2", "--tp-size", "2", "--no-env",
              "--no-tree"], "exit": 0,
     "stdout": ["mesh dp_shard 2 x tp 2: tensor parallelism splits 14 of 21 parameters",
                "2 x LlamaDecoderLayer                    3,072           1,536",
                "TP rank 0 (rank 0)", "TP rank 1 (rank 1)"],
     "not_stderr": ["PLAN015"]},
    {"name": "plan: FSDP2 with tp_size taking every process has no dp_shard_cp dim (PLAN023, accelerate's KeyError)",
     "args": ["plan", TP_MODEL, "--world-size", "2", "--fsdp-version", "2", "--tp-size", "2", "--no-env",
              "--no-tree"], "exit": 2,
     "stderr": ["Invalid mesh_dim_names ('dp_shard_cp',) specified. Valid mesh_dim_names are ['tp'].", "[PLAN023]"]},
    # ParallelismConfig.__post_init__ refuses TP over plain replicas (accelerate parallelism_config.py):
    # dp_replicate 2 x tp 2 on 4 processes leaves dp_shard 1.
    {"name": "plan: TP over replicas with a dp_shard of 1 is accelerate's ValueError (PLAN023)",
     "args": ["plan", TP_MODEL, "--world-size", "4", "--fsdp-version", "2", "--tp-size", "2", "--dp-replicate", "2",
              "--no-env", "--no-tree"], "exit": 2,
     "stderr": ["ValueError: Tensor/Context parallelism (tp/cp_size > 1) cannot be used with pure data parallelism",
                "[PLAN023]"]},
    {"name": "plan --format json: the mesh and each parameter's TP placement",
     "args": ["plan", TP_MODEL, "--world-size", "4", "--fsdp-version", "2", "--tp-size", "2", "--no-env",
              "--format", "json"], "exit": 0,
     "stdout": ['"mesh":{{"dims":[{{"name":"dp_shard","size":2}},{{"name":"tp","size":2}}],"rank0_shard_group":[0,2],"rank0_tp_group":[0,1]}}',
                '{{"name":"model.layers.0.mlp.down_proj.weight","style":"rowwise","dim":1,'
                '"local_shapes":[[24,26],[24,26]]}}',
                '{{"name":"lm_head.weight","style":null,"dim":null,"local_shapes":[[37,24],[37,24]]}}']},
    {"name": "plan: tensor parallelism on an architecture without a TP plan splits nothing (PLAN024)",
     "args": ["plan", "{src}/fixtures/oracle2/models/falcon", "--world-size", "4", "--fsdp-version", "2",
              "--tp-size", "2", "--no-env", "--no-tree"], "exit": 0,
     "stderr": ["splits no parameter of FalconForCausalLM", "[PLAN024]"],
     "stdout": ["tensor parallelism splits 0 of"]},
    # OLMo-2 gathers q/k/v back (colwise_gather_output): one key/value head over 2 TP ranks runs for real
    # (fixtures/oracle2/tp/traffic-olmo2-t2.json is a real step), so no PLAN021.
    {"name": "plan: heads need not divide tp_size when the plan gathers q/k/v back (OLMo-2, no PLAN021)",
     "args": ["plan", "{src}/fixtures/oracle2/models/olmo2", "--world-size", "4", "--fsdp-version", "2",
              "--tp-size", "2", "--no-env", "--no-tree"], "exit": 0, "not_stderr": ["PLAN021"]},
    # accelerate flattens dp_shard with cp into dp_shard_cp, FSDP2's dim (parallelism_config.py
    # dp_shard_cp_dim_names): 8 processes = dp_shard 2 x cp 2 x tp 2, FSDP over 4.
    {"name": "plan: the mesh with context parallelism from PARALLELISM_CONFIG_* (FSDP2 over dp_shard x cp)",
     "args": ["plan", TP_MODEL, "--config", "{src}/fixtures/check/fsdp2_8proc.yaml", "--no-tree"], "exit": 0,
     "env": {"PARALLELISM_CONFIG_TP_SIZE": "2", "PARALLELISM_CONFIG_CP_SIZE": "2"},
     "stdout": ["groups over 4 rank(s) per shard group", "mesh dp_shard 2 x cp 2 x tp 2"]},
    {"name": "plan --inter-node-bandwidth: the groups that cross machines are timed at it",
     "args": ["plan", TP_MODEL, "--world-size", "8", "--num-machines", "2", "--fsdp-version", "2", "--tp-size", "2",
              "--bus-bandwidth", "100GB/s", "--inter-node-bandwidth", "10 GB/s", "--no-env", "--no-tree"],
     "exit": 0, "stdout": ["at a bus bandwidth of 100.0 GB/s (10.0 GB/s across machines, for the shard group)",
                           "rank 0 shards parameters with ranks 0, 2, 4, 6 and splits tensors with ranks 0, 1"]},
    {"name": "plan --inter-node-bandwidth: a value that is no bandwidth is a usage error",
     "args": ["plan", TP_MODEL, "--inter-node-bandwidth", "fast", "--no-env"], "exit": 2,
     "stderr": ["expected a bandwidth like 350GB/s for --inter-node-bandwidth, found 'fast'"]},
    # Expert parallelism: the EP plan (experts only) replaces the TP plan: 2 layers x (gate_up_proj,
    # down_proj) = 4 parameters split, whole experts per rank; fixtures/oracle2/tp/*-ep.json run it for real.
    {"name": "plan --expert-parallel: whole experts per TP rank",
     "args": ["plan", "{src}/fixtures/oracle2/models/qwen3_moe_tp_i16", "--world-size", "4", "--fsdp-version", "2",
              "--tp-size", "2", "--expert-parallel", "true", "--no-env", "--no-tree"], "exit": 0,
     "stdout": ["tensor parallelism splits 4 of ", "expert-parallel plan: whole experts per rank"]},
    {"name": "plan --expert-parallel without TP ranks is refused (SET006)",
     "args": ["plan", LLAMA, "--world-size", "4", "--fsdp-version", "2", "--expert-parallel", "true", "--no-env"],
     "exit": 2, "stderr": ["[SET006]", "expected FSDP2 with tp_size above 1 for expert parallelism, found "
                                       "fsdp_version 2 and tp_size 1"]},
    # Llama has no expert-parallel plan: transformers splits nothing (PLAN024).
    {"name": "plan --expert-parallel on a model without an EP plan splits nothing",
     "args": ["plan", LLAMA, "--world-size", "4", "--fsdp-version", "2", "--tp-size", "2", "--expert-parallel",
              "true", "--no-env", "--no-tree"],
     "stderr": ["[PLAN024]"]},
    # A composite model has no plan of its own: its language model's (3 Llama layers x 7 projections = 21
    # parameters split), as a real tp_plan="auto" load of Llava gathers it (fixtures/oracle2/tp/llava-*).
    {"name": "plan: a composite model's TP plan is its language model's",
     "args": ["plan", "{src}/fixtures/check/llava", "--config-only", "--world-size", "4", "--fsdp-version", "2",
              "--tp-size", "2", "--no-env", "--no-tree"], "exit": 1,
     "stdout": ["tensor parallelism splits 21 of "], "not_stderr": ["[PLAN015]"]},
    # Context parallelism on the llama fixture (3 layers; 2 key/value heads of dim 5): 8,192 tokens over
    # cp 2 leave 4,096 per rank; one layer's K and V 4,096 x 20 x 2 bytes = 160 KiB (bfloat16); allgather:
    # 3 layers x (forward + backward) x 2 x 160 KiB = 1.88 MiB (tests/unit/test_context_parallel.cpp holds the
    # bytes to torch's own ring code).
    {"name": "plan --cp-size: each rank's piece of the sequence and ring attention's exchanges",
     "args": ["plan", LLAMA, "--world-size", "8", "--fsdp-version", "2", "--cp-size", "2", "--seq-len", "8192",
              "--micro-batch", "1", "--no-env", "--no-tree"], "exit": 0,
     "stdout": ["4,096 tokens (this rank's piece of the sequence over 2 CP ranks)",
                "context parallelism per step per rank (allgather, 4,096 tokens each of 2 CP ranks): all-gather "
                "1.88 MiB (6 calls)"]},
    {"name": "plan --cp-size: a sequence cp_size does not divide is an error (PLAN027)",
     "args": ["plan", LLAMA, "--world-size", "8", "--fsdp-version", "2", "--cp-size", "2", "--seq-len", "8191",
              "--micro-batch", "1", "--no-env", "--no-tree"], "exit": 1,
     "stderr": ["pieces of 4,096 and 4,095 tokens", "[PLAN027]"]},
    {"name": "plan --sp-size under FSDP: no mesh, FSDP2 over every process (PLAN025)",
     "args": ["plan", LLAMA, "--world-size", "8", "--fsdp-version", "2", "--sp-size", "2", "--no-env", "--no-tree"],
     "exit": 0, "stdout": ["over 8 rank(s) per shard group"], "stderr": ["[PLAN025]"], "not_stdout": ["mesh "]},
    # An unknown model_type (tree inferred from the checkpoint) has no attention implementation to judge:
    # context parallelism must not call it "not SDPA" (PLAN026 would withhold the verdict).
    {"name": "plan --cp-size on an inferred tree: no false PLAN026",
     "args": ["plan", "{src}/fixtures/models/toyformer", "--world-size", "4", "--fsdp-version", "2", "--cp-size", "2",
              "--seq-len", "64", "--micro-batch", "1", "--no-env", "--no-tree"], "exit": 0,
     "not_stderr": ["PLAN026"]},
    # GPT-OSS has no SDPA (GptOssPreTrainedModel._supports_sdpa = False): transformers loads it with eager
    # attention, which context parallelism refuses (PLAN026), and refuses sdpa when asked (ARCH005).
    {"name": "plan: GPT-OSS's default attention is eager, so context parallelism is refused",
     "args": ["plan", "{src}/fixtures/models/gpt_oss", "--world-size", "4", "--fsdp-version", "2", "--cp-size", "2",
              "--seq-len", "64", "--micro-batch", "1", "--no-env", "--no-tree"], "exit": 1,
     "stderr": ["you are using eager", "[PLAN026]"]},
    {"name": "plan --attn-implementation sdpa on GPT-OSS: transformers' ValueError (ARCH005)",
     "args": ["plan", "{src}/fixtures/models/gpt_oss", "--world-size", "4", "--attn-implementation", "sdpa",
              "--no-env", "--no-tree"], "exit": 1,
     "stderr": ["GptOssForCausalLM does not support an attention implementation", "[ARCH005]"]},
]


def dpo_step(doc):
    # trl v1.9.0: DataCollatorForPreference puts chosen and rejected in one batch (2 rows of 512 tokens),
    # DPOTrainer is a Trainer (adamw_torch_fused, its default with torch >= 2.8), and the reference
    # model's forward is a moment of the step.
    m = doc["memory"]
    if m["activations"]["tokens"] != 1024:
        return f"tokens {m['activations']['tokens']}, expected 2 x 512"
    parts = [p["what"] for p in m["step"]["peak"]["parts"]]
    if "optimizer states (adamw_torch_fused)" not in parts:
        return f"peak parts {parts}"
    if "reference forward" not in [p["moment"] for p in m["step"]["phases"]]:
        return f"phases {[p['moment'] for p in m['step']['phases']]}"
    return None


CASES += [
    {"name": "plan --trainer dpo: chosen and rejected rows, the Trainer's optimizer, the reference forward",
     "args": ["plan", "{src}/fixtures/oracle2/peak/models/l256", "--world-size", "2", "--fsdp-version", "2",
              "--seq-len", "512", "--micro-batch", "1", "--trainer", "dpo", "--no-env", "--format", "json"],
     "json": dpo_step},
    {"name": "plan --trainer with an unknown trainer is a usage error",
     "args": ["plan", LLAMA, "--trainer", "ppo", "--no-env"], "exit": 2, "stderr": ["--trainer"]},
]
