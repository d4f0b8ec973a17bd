"""CLI cases for PEFT LoRA / QLoRA (--adapter, --lora-*, --load-in-4bit). Numbers are hand arithmetic
on fixtures/models/llama (hidden 20, 4 heads of 5, 2 key/value heads, intermediate 52, 3 layers,
vocab 37, bf16, untied): per layer q 400, k 200, v 200, o 400, gate/up/down 1040 each, two norms of 20
= 4360; embed 740, lm_head 740, norm 20: 14,580 in all. LoRA r=4 on q_proj and v_proj adds per layer
q: A [4, 20] + B [20, 4] = 160, v: A [4, 20] + B [10, 4] = 120, so 840 in all (peft 0.20 on the real
model says the same: "trainable params: 840 || all params: 15,420")."""
import json

LLAMA = "{src}/fixtures/models/llama"
ADAPTERS = "{src}/fixtures/adapters"
QV = ["--lora-target-modules", "q_proj,v_proj", "--lora-r", "4"]


def units(doc):
    return {u["path"]: u for u in doc["units"]}


def trainer_fsdp1_w3(doc):
    # peft's policy (the Trainer's default under FSDP1): the three layers, the root, and each lora_A /
    # lora_B of q and v in a unit of its own: 1 + 3 + 3 * 4 = 16.
    u = units(doc)
    if len(u) != 16:
        return f"{len(u)} units, expected 16"
    peft = doc.get("peft", {})
    if (peft.get("trainable_params"), peft.get("all_params"), len(peft.get("targeted", []))) != (840, 15420, 6):
        return f"peft summary {peft}"
    qa = u.get("base_model.model.model.layers.0.self_attn.q_proj.lora_A.default")
    if not qa or (qa["numel"], qa["shard_numel"], qa["dtype"], qa["requires_grad"]) != (80, 27, "F32", True):
        return f"q_proj lora_A unit {qa}"
    layer = u["base_model.model.model.layers.2"]
    if (layer["numel"], layer["shard_numel"], layer["requires_grad"]) != (4360, 1454, False):
        return f"layer 2 {layer['numel']} {layer['shard_numel']} {layer['requires_grad']}"
    # params: root 1500 -> 500 x 2 B + layers 3 x 1454 x 2 B + LoRA f32 3 x (27 + 27 + 27 + 14) x 4 B
    # = 1000 + 8724 + 1140 = 10864; only the LoRA units have gradients (1140) and AdamW states (2280).
    m = doc["memory"]["per_rank_bytes"]
    got = (m["params"], m["grads"], m["optimizer"])
    return None if got == (10864, 1140, 2280) else f"memory {got}, expected (10864, 1140, 2280)"


# peft's own FSDP+QLoRA example (examples/sft/run_peft_qlora_fsdp.sh with configs/fsdp_config_qlora.yaml,
# corpus entry 016) on Llama-3.1-70B's config: all-linear r 8, nf4 with double quant, bf16 storage and
# load dtype, 2048 tokens x 2, gradient checkpointing; FSDP1, offload, use_orig_params false.
QLORA_EXAMPLE = ["check", "--no-env", "--config", "{src}/fixtures/configs/corpus/016_huggingface_peft_sft_fsdp_config_qlora.yaml",
                 "{src}/fixtures/corpus-configs/meta-llama__Llama-3.1-70B-Instruct.json",
                 "--lora-r", "8", "--lora-alpha", "16", "--lora-dropout", "0.1", "--lora-target-modules", "all-linear",
                 "--load-in-4bit", "--bnb-4bit-quant-type", "nf4", "--bnb-4bit-use-double-quant",
                 "--bnb-4bit-compute-dtype", "bfloat16", "--load-dtype", "bfloat16", "--seq-len", "2048",
                 "--micro-batch", "2", "--activation-checkpointing", "true"]


def qlora_example(doc):
    # peft's policy: the root, 80 decoder layers, and lora_A + lora_B of the 7 Linear layers of each.
    if len(doc["units"]) != 1 + 80 + 80 * 14:
        return f"{len(doc['units'])} units, expected 1201"
    if doc["diagnostics"]:
        return f"diagnostics {[d['code'] for d in doc['diagnostics']]}"
    if doc["settings"]["mixed_precision"]["value"] != "bf16":
        return "the Trainer makes the bf16 storage dtype the mixed precision"
    m = doc["memory"]
    return None if m["verdict"] == "fits" else f"verdict {m['verdict']}"


CASES = [
    {"name": "check peft's FSDP+QLoRA example: runs, and fits in a 24 GB GPU as peft's guide says",
     "args": QLORA_EXAMPLE + ["--bnb-4bit-quant-storage", "bfloat16", "--gpu-memory", "24GB", "--format", "json"],
     "json": qlora_example},
    {"name": "the same example with bitsandbytes' default uint8 storage cannot be flattened by FSDP1",
     "args": QLORA_EXAMPLE, "exit": 1, "stdout": ["Cannot flatten integer dtype tensors", "[PLAN001]"]},
    {"name": "inspect --lora-*: peft's trainable count",
     "args": ["inspect", LLAMA] + QV,
     "stdout": ["trainable params: 840 || all params: 15,420 || trainable%: 5.4475", "(q_proj): lora.Linear",
                "(base_layer): Linear", "(lora_A): ModuleDict"]},
    {"name": "plan --lora-*: the Trainer's peft policy gives every LoRA matrix a unit",
     "args": ["plan", LLAMA, "--world-size", "3", "--format", "json"] + QV, "json": trainer_fsdp1_w3},
    # A plain accelerate loop wraps whole decoder layers: the bf16 base weight and the float32 adapter
    # (peft's autocast) meet in one FlatParameter, and torch checks dtypes before requires_grad.
    {"name": "plan --caller accelerate: a bf16 decoder layer holds float32 adapters",
     "args": ["plan", LLAMA, "--world-size", "3", "--caller", "accelerate"] + QV, "exit": 1,
     "stderr": ["Must flatten tensors with uniform dtype but got torch.bfloat16 and torch.float32", "[PLAN002]",
                "peft keeps LoRA adapters in float32"]},
    {"name": "plan --caller accelerate in float32: frozen and trainable in one FlatParameter",
     "args": ["plan", LLAMA, "--world-size", "3", "--caller", "accelerate", "--load-dtype", "float32"] + QV,
     "exit": 1, "stderr": ["Must flatten tensors with uniform `requires_grad` when `use_orig_params=False`",
                           "[PLAN003]"]},
    {"name": "check prints peft's trainable line above the unit table",
     "args": ["check", "--no-env", LLAMA, "--world-size", "3"] + QV,
     "stdout": ["LoRA adapter command line: trainable params: 840 || all params: 15,420 || trainable%: 5.4475",
                "policy PEFT_WRAP"]},
    {"name": "plan --caller accelerate in float32 with use_orig_params runs",
     "args": ["plan", LLAMA, "--world-size", "3", "--caller", "accelerate", "--use-orig-params", "true",
              "--load-dtype", "float32"] + QV,
     "exit": 0, "stdout": ["3 x LlamaDecoderLayer"]},
    {"name": "adapter_config.json that is not JSON",
     "args": ["plan", LLAMA, "--adapter", ADAPTERS + "/bad-json"], "exit": 12,
     "stderr": ["adapter_config.json is not valid JSON", "[PEFT001]"]},
    # A local adapter beside a local model is read on the checkpoint's reading thread; a directory
    # without config.json starts no load, and preflight reads the adapter itself: its findings still
    # come out (a path that does not exist may be a Hub id: the adapter is read beside it, as before).
    {"name": "a broken adapter is reported when the model directory has no config.json",
     "args": ["plan", ADAPTERS, "--adapter", ADAPTERS + "/bad-json"], "exit": 12,
     "stderr": ["adapter_config.json is not valid JSON", "[PEFT001]"]},
    {"name": "a broken adapter is reported when the model is missing",
     "args": ["plan", "no/such/model/dir", "--adapter", ADAPTERS + "/bad-json"], "exit": 12,
     "stderr": ["adapter_config.json is not valid JSON", "[PEFT001]"]},
    {"name": "a good adapter with a model directory without config.json: the model's error",
     "args": ["plan", ADAPTERS, "--adapter", ADAPTERS + "/rank-edited"], "exit": 3,
     "stderr": ["config.json"]},
    {"name": "a prefix-tuning adapter is refused, not planned as LoRA",
     "args": ["plan", LLAMA, "--adapter", ADAPTERS + "/prefix-tuning"], "exit": 12,
     "stderr": ["peft_type `PREFIX_TUNING`", "[PEFT003]"]},
    {"name": "r: -4 is named at its line",
     "args": ["plan", LLAMA, "--adapter", ADAPTERS + "/negative-rank"], "exit": 12,
     "stderr": ["adapter_config.json:5:", "expected a positive integer, found -4", "[PEFT002]"]},
    {"name": "a container as target: peft's ValueError",
     "args": ["plan", LLAMA, "--adapter", ADAPTERS + "/container-target"], "exit": 1,
     "stderr": ["ValueError: Target module LlamaAttention is not supported", "[PEFT005]"]},
    {"name": "targets of another architecture: peft's NoMatchingPeftModuleError",
     "args": ["plan", LLAMA, "--adapter", ADAPTERS + "/no-match"], "exit": 1,
     "stderr": ["Target modules ['query', 'value'] not found in the base model", "q_proj", "[PEFT004]"]},
    {"name": "saved weights of rank 3 under a config edited to r 4: torch's size mismatch at load",
     "args": ["plan", "{src}/fixtures/oracle2/models/llama", "--adapter", ADAPTERS + "/rank-edited"], "exit": 1,
     "stderr": ["size mismatch for base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight: copying a "
                "param with shape torch.Size([3, 20]) from checkpoint, the shape in current model is "
                "torch.Size([4, 20])", "[PEFT008]"]},
    {"name": "an adapter directory as MODEL plans its base model with it",
     "args": ["plan", "fixtures/adapters/lora-checkpoint", "--world-size", "3", "--format", "json"], "cwd": "{src}",
     "json": lambda d: None if len(d["units"]) == 16 and [x["rule"] for x in d["diagnostics"]] == ["PEFT010"]
     else f"{len(d['units'])} units, diagnostics {[x['rule'] for x in d['diagnostics']]}"},
    # peft's FSDP+QLoRA guide: bitsandbytes >= 0.43.3, peft > 0.13.0 (rules/peft.yaml).
    {"name": "QLoRA with bitsandbytes and peft below peft's guide, read from the job's environment",
     "args": ["plan", LLAMA, "--world-size", "2", "--load-in-4bit", "--bnb-4bit-quant-storage", "bfloat16",
              "--python-env", "{src}/fixtures/python-env-qlora-old"] + QV, "exit": 0,
     "stderr": ["bitsandbytes 0.42.0 is below what peft's FSDP+QLoRA guide requires (bitsandbytes >=0.43.3)",
                "peft 0.12.0 is below", "[PEFT011]"]},
    {"name": "a LoRA run without 4-bit weights is not held to the QLoRA guide",
     "args": ["plan", LLAMA, "--world-size", "2", "--peft-version", "0.12.0"] + QV, "exit": 0,
     "not_stderr": ["PEFT011"]},
    # fixtures/training-args/sft-qlora.yaml: 2048 tokens x 4 sequences, bf16, gradient checkpointing.
    {"name": "--training-args: the workload, precision and checkpointing of a TRL recipe, each with its line",
     "args": ["plan", LLAMA, "--world-size", "2", "--training-args", "{src}/fixtures/training-args/sft-qlora.yaml",
              "--format", "json"] + QV,
     "json": lambda d: None if (d["memory"]["activations"]["tokens"] == 8192
                                and d["settings"]["mixed_precision"]["value"] == "bf16"
                                and d["settings"]["mixed_precision"]["source"].endswith("sft-qlora.yaml:9")
                                and d["settings"]["activation_checkpointing"]["value"] is True
                                and d["settings"]["activation_checkpointing"]["source"].endswith("sft-qlora.yaml:10"))
     else f"activations {d['memory'].get('activations')}, settings {d['settings']['mixed_precision']} "
          f"{d['settings']['activation_checkpointing']}"},
    {"name": "--training-args with bf16 and fp16 both true is refused as TrainingArguments refuses it",
     "args": ["plan", LLAMA, "--training-args", "{src}/fixtures/training-args/both-precisions.yaml"], "exit": 2,
     "stderr": ["both-precisions.yaml:3: bf16 and fp16 are both true"]},
    {"name": "--training-args with a batch size that is not a number names its line",
     "args": ["plan", LLAMA, "--training-args", "{src}/fixtures/training-args/bad-batch.yaml"], "exit": 2,
     "stderr": ["bad-batch.yaml:2:30: expected a positive integer for per_device_train_batch_size, found 'four'"]},
    {"name": "no adapter at the path",
     "args": ["plan", LLAMA, "--adapter", ADAPTERS + "/nowhere"], "exit": 3, "stderr": ["[IO005]"]},
    {"name": "--adapter and --lora-* together is a usage error",
     "args": ["plan", LLAMA, "--adapter", ADAPTERS + "/no-match", "--lora-r", "4"], "exit": 2},
    {"name": "a LoRA dropout above 1 is torch's ValueError, not a plan",
     "args": ["plan", LLAMA, "--lora-dropout", "1.5"] + QV, "exit": 12,
     "stderr": ["dropout probability has to be between 0 and 1, but got 1.5", "[PEFT002]"]},
    {"name": "--bnb-4bit-* without --load-in-4bit is a usage error",
     "args": ["plan", LLAMA, "--bnb-4bit-quant-storage", "bfloat16"], "exit": 2},
    {"name": "inspect --load-in-4bit: Params4bit packs two values per byte",
     # q_proj 20 x 20 = 400 elements -> (400 + 1) // 2 = 200 rows of uint8; lm_head is kept whole.
     "args": ["inspect", LLAMA, "--load-in-4bit", "--lora-target-modules", "q_proj"],
     # peft counts a Params4bit as the elements it packs: 14,580 + 3 x (8 x 20 + 20 x 8) = 15,540, as
     # plan says too (one count).
     "stdout": ["(q_proj): lora.Linear4bit", "(base_layer): Linear4bit", "weight[200, 1] U8",
                "(lm_head): Linear", "trainable params: 960 || all params: 15,540 || trainable%: 6.1776"]},
    # peft's policy leaves q_proj's 4-bit base weight first in each layer's FlatParameter.
    {"name": "QLoRA with uint8 storage under FSDP1: torch cannot flatten the 4-bit weights",
     "args": ["plan", LLAMA, "--world-size", "2", "--load-in-4bit"] + QV, "exit": 1,
     "stderr": ["ValueError: Cannot flatten integer dtype tensors", "[PLAN001]", "bnb_4bit_quant_storage"]},
    {"name": "QLoRA with bf16 storage under FSDP1 (peft's guide) plans",
     "args": ["plan", LLAMA, "--world-size", "2", "--load-in-4bit", "--bnb-4bit-quant-storage", "bfloat16",
              "--format", "json"] + QV,
     # q_proj: 400 elements in bf16 storage -> (400 + 1) // 4 = 100 rows; the Trainer makes the storage
     # dtype the mixed precision.
     "json": lambda d: None if d["settings"]["mixed_precision"]["value"] == "bf16" and not d["diagnostics"]
     else f"mixed precision {d['settings']['mixed_precision']}, diagnostics {d['diagnostics']}"},
]

# TRL's ModelConfig fields in --training-args (trl/trainer/model_config.py, utils.py get_peft_config /
# get_quantization_config, sft_trainer.py). Hand arithmetic on fixtures/models/llama as above.
TRAINING_ARGS = "{src}/fixtures/training-args"


def trl_qlora(doc):
    # r 8 on q_proj and v_proj: per layer q A [8, 20] + B [20, 8] = 320, v A [8, 20] + B [10, 8] = 240,
    # 1680 in all; peft counts the bf16-stored Params4bit by the elements they pack, all exact here
    # (every Linear's size is a multiple of 4), so all params = 14,580 + 1,680 = 16,260.
    peft = doc.get("peft", {})
    if (peft.get("trainable_params"), peft.get("all_params")) != (1680, 16260):
        return f"peft summary {peft}"
    # peft's policy puts q_proj's lora_A [8, 20] in a unit of its own (the bf16 cast of TRL's SFTTrainer is
    # undone by accelerate's fp32 upcast of trainable flat parameters under mixed precision; the tree
    # before wrapping is checked in tests/unit/test_trl_model_config.cpp).
    qa = units(doc).get("base_model.model.model.layers.0.self_attn.q_proj.lora_A.default")
    if not qa or (qa["numel"], qa["shard_numel"], qa["requires_grad"]) != (160, 54, True):
        return f"q_proj lora_A unit {qa}"
    if doc["settings"]["mixed_precision"]["value"] != "bf16":
        return "the Trainer makes the bf16 storage dtype the mixed precision"
    if doc["memory"]["activations"]["tokens"] != 2048:
        return f"activations {doc['memory']['activations']}"
    return None


def trl_defaults(doc):
    # r 16 on peft's Llama default (q_proj, v_proj): q 320 + 320, v 320 + 160 = 1,120 per layer, 3,360;
    # the model loads in float32 (ModelConfig's dtype), adapters too.
    peft = doc.get("peft", {})
    if (peft.get("trainable_params"), peft.get("all_params")) != (3360, 17940):
        return f"peft summary {peft}"
    if {u["dtype"] for u in doc["units"]} != {"F32"}:
        return f"dtypes {sorted({u['dtype'] for u in doc['units']})}"
    return None if "TRL001" in [x["rule"] for x in doc["diagnostics"]] else f"diagnostics {doc['diagnostics']}"


CASES += [
    {"name": "--training-args: a trl sft QLoRA file gives the LoRA and 4-bit settings, adapters in bf16 (trl >= 0.26)",
     "args": ["plan", LLAMA, "--world-size", "3", "--no-env", "--training-args", TRAINING_ARGS + "/trl-qlora.yaml",
              "--format", "json"], "json": trl_qlora},
    {"name": "--training-args: use_peft alone takes TRL's defaults and its float32 load (TRL001)",
     "args": ["plan", LLAMA, "--world-size", "2", "--no-env", "--training-args", TRAINING_ARGS + "/trl-lora-defaults.yaml",
              "--format", "json"], "json": trl_defaults},
    {"name": "--training-args: before trl 0.27 the dtype is transformers' (the checkpoint's bf16), no TRL001",
     "args": ["plan", LLAMA, "--world-size", "2", "--no-env", "--trl-version", "0.26.2", "--training-args",
              TRAINING_ARGS + "/trl-lora-defaults.yaml", "--format", "json"],
     "json": lambda d: None if ("TRL001" not in [x["rule"] for x in d["diagnostics"]]
                                and "BF16" in {u["dtype"] for u in d["units"]}) else f"{d['diagnostics']}"},
    {"name": "--training-args: lora_target_modules [q_proj] becomes the regex 'q_proj' (TRL002), peft finds nothing",
     "args": ["plan", LLAMA, "--world-size", "2", "--no-env", "--training-args", TRAINING_ARGS + "/trl-one-target.yaml"],
     "exit": 1, "stderr": ["trl-one-target.yaml:5", "[TRL002]", "Target modules q_proj not found", "[PEFT004]"]},
    {"name": "--training-args: lora_modules_to_save as a string is refused at its line (TRL003)",
     "args": ["plan", LLAMA, "--world-size", "2", "--no-env", "--training-args", TRAINING_ARGS + "/trl-save-string.yaml"],
     "exit": 1, "stderr": ["trl-save-string.yaml:6", "write it as a list: lora_modules_to_save: [lm_head]", "[TRL003]"]},
    {"name": "--training-args: an 8-bit load is refused, not planned as 16-bit (PEFT006, exit 11)",
     "args": ["plan", LLAMA, "--world-size", "2", "--no-env", "--training-args", TRAINING_ARGS + "/trl-8bit.yaml"],
     "exit": 11, "stderr": ["trl-8bit.yaml:5", "load_in_8bit", "[PEFT006]"]},
    {"name": "--training-args: load_in_4bit and load_in_8bit together is refused as ModelConfig refuses it",
     "args": ["plan", LLAMA, "--training-args", TRAINING_ARGS + "/trl-4and8.yaml"], "exit": 2,
     "stderr": ["trl-4and8.yaml:3: load_in_4bit and load_in_8bit are both true"]},
    {"name": "--training-args: QLoRA with trl 0.25 warns that its adapter dtype rule is not followed (TRL004)",
     "args": ["plan", LLAMA, "--world-size", "3", "--no-env", "--trl-version", "0.25.1", "--training-args",
              TRAINING_ARGS + "/trl-qlora.yaml"], "exit": 0, "stderr": ["trl-qlora.yaml:10", "[TRL004]"]},
]

# --bnb-4bit-* flags refine the 4-bit load the training arguments already ask for (TRL ModelConfig
# load_in_4bit: true makes get_quantization_config build BitsAndBytesConfig(load_in_4bit=True, ...),
# trl/trainer/utils.py), so they need no --load-in-4bit then; flags win field by field: uint8 storage
# over the file's bfloat16 gives FSDP1's own error for integer parameters (torch
# distributed/fsdp/_flat_param.py: "Cannot flatten integer dtype tensors").
CASES += [
    {"name": "QLoRA flags: accepted when --training-args says load_in_4bit: true, and they win over the file",
     "args": ["plan", LLAMA, "--world-size", "3", "--no-env", "--training-args", TRAINING_ARGS + "/trl-qlora.yaml",
              "--bnb-4bit-quant-storage", "uint8", "--no-tree"], "exit": 1,
     "stdout": ["Cannot flatten integer dtype tensors"], "not_stderr": ["add --load-in-4bit"]},
    {"name": "QLoRA flags: still refused with no 4-bit load anywhere",
     "args": ["plan", LLAMA, "--no-env", "--bnb-4bit-quant-storage", "uint8"], "exit": 2,
     "stderr": ["the --bnb-4bit-* flags describe a 4-bit load: add --load-in-4bit (or give --training-args with "
                "load_in_4bit: true)"]},
]

# transformers 5 MoE experts: peft 0.20 converts all-linear and 4.x expert names into target_parameters
# (ParamWrapper). fixtures/oracle2/models/mixtral: hidden 20, 2 heads of 10, 1 key/value head,
# intermediate 14, 3 experts, 2 layers. all-linear r 4, per layer: q A [4, 20] + B [20, 4] = 160,
# k and v 80 + 40 = 120 each, o 160; the router gate.weight [3, 20] (2-D): A [4, 20] + B [3, 4] = 92;
# gate_up_proj [3, 28, 20], fused from w1 and w3 so r 8: A [8 * 3, 20] = 480 + B [28, 24] = 672;
# down_proj [3, 20, 14]: A [12, 14] = 168 + B [20, 12] = 240. 2,212 per layer, 4,424 in all; real
# peft 0.20 on the same shapes prints "trainable params: 4,424 || all params: 13,564".
MIXTRAL5 = "{src}/fixtures/oracle2/models/mixtral"


def mixtral_all_linear(doc):
    peft = doc.get("peft", {})
    if (peft.get("trainable_params"), peft.get("all_params")) != (4424, 13564):
        return f"peft summary {peft}"
    layer = units(doc).get("base_model.model.model.layers.0")
    want = "base_model.model.model.layers.0.mlp.experts.base_layer.lora_A.default.weight"
    if not layer or want not in layer["params"]:
        return f"layer 0 group lacks the inner ParamWrapper's lora_A: {layer and layer['params']}"
    return None if not doc["diagnostics"] else f"diagnostics {doc['diagnostics']}"


CASES += [
    {"name": "MoE all-linear on transformers 5: ParamWrapper adapters on the experts and router, FSDP2 plans them",
     "args": ["plan", MIXTRAL5, "--no-env", "--world-size", "2", "--fsdp-version", "2", "--lora-target-modules",
              "all-linear", "--lora-r", "4", "--format", "json"], "json": mixtral_all_linear},
    {"name": "MoE all-linear under FSDP1 fails in the first step (PEFT014), as the oracle's Qwen3-MoE does",
     "args": ["plan", MIXTRAL5, "--no-env", "--world-size", "2", "--use-orig-params", "true", "--caller", "accelerate",
              "--lora-target-modules", "all-linear", "--lora-r", "4"], "exit": 1,
     "stderr": ["Output 0 of View is a view", "[PEFT014]"], "stdout": ["no fit verdict"]},
    {"name": "MoE all-linear with lora_dropout 0.05 (TRL's default) is ParamWrapper's ValueError (PEFT013)",
     "args": ["plan", MIXTRAL5, "--no-env", "--world-size", "2", "--fsdp-version", "2", "--lora-target-modules",
              "all-linear", "--lora-dropout", "0.05"], "exit": 1,
     "stderr": ["lora.ParamWrapper does not work with lora_dropout != 0.", "[PEFT013]"]},
    {"name": "MoE: w1 without w3 cannot be converted to the fused gate_up_proj (PEFT012)",
     "args": ["plan", MIXTRAL5, "--no-env", "--world-size", "2", "--fsdp-version", "2", "--lora-target-modules",
              "w1,q_proj"], "exit": 1,
     "stderr": ["Cannot convert PEFT target(s) w1 without also targeting w3 because they are fused into gate_up_proj.",
                "[PEFT012]"]},
    {"name": "MoE: no target_modules on transformers 5 Mixtral gets no peft default (the conversion empties it)",
     "args": ["plan", MIXTRAL5, "--no-env", "--world-size", "2", "--fsdp-version", "2", "--lora-r", "4"], "exit": 1,
     "stderr": ["No `target_modules` passed but also no `target_parameters` found", "[PEFT004]"]},
]

# Checkpoints saved already quantized by bitsandbytes (fixtures/bnb-prequantized, real transformers +
# bitsandbytes): config.json's quantization_config decides, no --load-in-4bit needed. llama (oracle2):
# hidden 20, 2 layers; with bf16 storage a layer's frozen base packs q 400 -> (400 + 1) // 4 = 100 rows,
# k and v 50, o 100, gate/up/down 1040 -> 260 each, plus two norms of 20: 1,120 elements, over 3 ranks
# ceil(1120 / 3) = 374 with 2 padding; LoRA r 4 on q and v adds (80 + 80) + (80 + 40) = 280 per layer.
PREQ = "{src}/fixtures/bnb-prequantized"


def prequantized_bf16(doc):
    layer = units(doc).get("base_model.model.model.layers.0")
    if not layer or (layer["numel"], layer["shard_numel"], layer["dtype"]) != (1120, 374, "BF16"):
        return f"layer 0 unit {layer and (layer['numel'], layer['shard_numel'], layer['dtype'])}"
    if doc["peft"]["trainable_params"] != 560:
        return f"trainable {doc['peft']['trainable_params']}"
    if doc["settings"]["mixed_precision"]["value"] != "bf16" or doc["diagnostics"]:
        return f"mixed precision {doc['settings']['mixed_precision']}, diagnostics {doc['diagnostics']}"
    return None


CASES += [
    {"name": "a pre-quantized bnb checkpoint (bf16 storage) plans as 4-bit from its own config, QLoRA under FSDP1",
     "args": ["plan", PREQ + "/llama-nf4dq-bf16", "--no-env", "--world-size", "3", "--lora-target-modules",
              "q_proj,v_proj", "--lora-r", "4", "--format", "json"], "json": prequantized_bf16},
    {"name": "a pre-quantized bnb checkpoint with uint8 storage cannot be flattened by FSDP1 (PLAN001)",
     "args": ["plan", PREQ + "/llama-nf4dq-u8", "--no-env", "--world-size", "2", "--lora-target-modules",
              "q_proj,v_proj", "--lora-r", "4"], "exit": 1,
     "stderr": ["Cannot flatten integer dtype tensors", "[PLAN001]"]},
    {"name": "a pre-quantized bnb checkpoint with uint8 storage under FSDP2: 4-bit weights whole on every rank",
     "args": ["plan", PREQ + "/llama-nf4dq-u8", "--no-env", "--world-size", "2", "--fsdp-version", "2",
              "--lora-target-modules", "q_proj,v_proj", "--lora-r", "4", "--format", "json"],
     # uint8 storage: per layer q 200 + k 100 + v 100 + o 200 + 3 x 520 = 2,160 bytes, 2 layers: 4,320.
     "json": lambda d: None if d["memory"]["per_rank_bytes"]["ignored"] == 4320 else f"{d['memory']['per_rank_bytes']}"},
    {"name": "a bitsandbytes 8-bit checkpoint is refused (CFG008, exit 11)",
     "args": ["plan", PREQ + "/llama-int8", "--no-env", "--world-size", "2"], "exit": 11,
     "stderr": ["bitsandbytes 8-bit checkpoint", "[CFG008]"]},
]
