#!/usr/bin/python3
"""PEFT oracle: what REAL peft LoRA adapters on real torch 2.x FSDP1/FSDP2 (through real accelerate
and the policy transformers' Trainer installs) build, step and raise.

Dev-time tool; CI never needs torch or peft. It runs inside the Debian unstable chroot of
scripts/oracle2_setup.sh, with peft's source (not packaged by Debian) put beside it by
scripts/peft_oracle_setup.sh, and writes to fixtures/peft-oracle/:

  scripts/peft_oracle_setup.sh PEFT_CHECKOUT BNB_CHECKOUT  # once: peft's and bitsandbytes' sources
  scripts/oracle2_run.sh python3 scripts/peft_oracle.py    # adapters + every case
  scripts/oracle2_run.sh python3 scripts/peft_oracle.py --only 'llama-qv-*' --list
  scripts/oracle2_run.sh python3 scripts/peft_oracle.py --only '*-fsdp2-*nf4u8*' --accelerate-src /opt/acc113/src

What it does
  * Adapters (adapters/<model>-<adapter>/): peft's get_peft_model(model, LoraConfig(...)) on a
    tiny model of scripts/torch2_oracle.py (fixtures/oracle2/models/), saved with save_pretrained
    (adapter_config.json + adapter_model.safetensors), and record.json: every module (path, class)
    and parameter (name, shape, dtype, requires_grad) of the PeftModel, in registration order, and
    the counts print_trainable_parameters reports.
  * Cases: each loads the model (float32, or bfloat16 with `load_dtype`), applies the same
    LoraConfig with get_peft_model in W fresh processes and prepares the PeftModel as the job would:
      - caller "trainer", FSDP1: transformers 5.12.1 Trainer._prepare_for_training calls
        integrations/fsdp.py update_fsdp_plugin_peft, which sets the plugin's auto_wrap_policy to
        peft's utils/other.py fsdp_auto_wrap_policy(model) before Accelerator.prepare_model; the
        rest is scripts/torch2_oracle.py's FSDP1 path (accelerate 1.14's FSDP(...) arguments);
      - caller "accelerate" (plain accelerate, or the Trainer under FSDP2, which never calls
        update_fsdp_plugin_peft): accelerate's own policy, FSDP1 or fsdp2_prepare_model;
    then lazy init and, for float32 cases without mixed precision, a forward, backward and AdamW
    step over the trainable parameters. Recorded as scripts/torch2_oracle.py records (its README).
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
PEFT_SRC = os.environ.get("PEFT_SRC", "/opt/peft/src")
sys.path.insert(0, PEFT_SRC)
# bitsandbytes (not packaged by Debian either): its pure-PyTorch CPU backend quantizes 4-bit weights
# exactly as the CUDA kernels lay them out (bitsandbytes/backends/default/ops.py).
BNB_SRC = os.environ.get("BNB_SRC", "/opt/bnb")
sys.path.insert(0, BNB_SRC)
# --accelerate-src DIR: another accelerate release's src/ (a `git archive vX.Y.Z src/accelerate` of
# its repository, put in the chroot), imported instead of Debian's; its cases are written with
# "-acc<major><minor>" in their names beside the default release's (fixtures/peft-oracle/README.md).
ACCELERATE_SRC = sys.argv[sys.argv.index("--accelerate-src") + 1] if "--accelerate-src" in sys.argv else None
if ACCELERATE_SRC:
    sys.path.insert(0, ACCELERATE_SRC)

import torch2_oracle as o  # noqa: E402
import torch  # noqa: E402
import peft  # noqa: E402
from peft import LoraConfig, get_peft_model  # noqa: E402

OUT = os.path.join(o.REPO, "fixtures", "peft-oracle")

# name: LoraConfig keyword arguments (task_type is left unset: a PeftModel, as for a causal LM
# without the task wrapper; module paths are the same under PeftModelForCausalLM).
ADAPTERS = {
    "qv": dict(r=3, lora_alpha=6, target_modules=["q_proj", "v_proj"]),
    "alllinear": dict(r=4, lora_alpha=8, target_modules="all-linear"),
    "regex": dict(r=2, target_modules=r".*\.(up|down)_proj"),
    "mts": dict(r=3, target_modules=["q_proj", "k_proj"], modules_to_save=["lm_head"]),
    "dora": dict(r=3, target_modules=["q_proj", "v_proj"], use_dora=True),
    "layers": dict(r=3, target_modules=["q_proj", "v_proj"], layers_to_transform=[1], layers_pattern="layers"),
    "rankpat": dict(r=3, target_modules=["q_proj", "v_proj", "o_proj"], rank_pattern={"v_proj": 5},
                    alpha_pattern={"o_proj": 2}),
    "exclude": dict(r=2, target_modules="all-linear", exclude_modules=["o_proj", "down_proj"]),
    "lorabias": dict(r=3, target_modules=["q_proj", "v_proj"], lora_bias=True),
    "biasall": dict(r=3, target_modules=["q_proj", "v_proj"], bias="all"),
    "biaslora": dict(r=3, target_modules=["q_proj", "v_proj"], bias="lora_only"),
    "cattn": dict(r=3, target_modules=["c_attn"], fan_in_fan_out=True),
}

# model: the adapters tried on it.
PLAN = {
    "llama": ["qv", "alllinear", "regex", "mts", "dora", "layers", "rankpat", "exclude", "lorabias"],
    "llama_tied": ["alllinear"],
    "qwen2": ["qv", "alllinear", "biasall", "biaslora"],
    "gpt2": ["alllinear", "cattn"],
    "qwen3_moe": ["alllinear"],
    "gemma3_text": ["qv"],
}


# QLoRA: transformers BitsAndBytesConfig(load_in_4bit=True, ...) and the dtype the model is loaded in.
QUANTS = {
    "nf4u8": dict(quant_type="nf4", storage="uint8", compute="bfloat16", double=False, load="bfloat16"),
    "nf4bf16": dict(quant_type="nf4", storage="bfloat16", compute="bfloat16", double=False, load="bfloat16"),
    "nf4dqbf16": dict(quant_type="nf4", storage="bfloat16", compute="bfloat16", double=True, load="bfloat16"),
    # float32 storage and load: everything gloo all-gathers is float32, so these cases also step.
    "fp4f32": dict(quant_type="fp4", storage="float32", compute="float32", double=False, load="float32"),
    "nf4u8f32": dict(quant_type="nf4", storage="uint8", compute="float32", double=True, load="float32"),
}


def quant_state_bytes(model) -> int:
    """bitsandbytes' quantization state of every Params4bit (absmax, code; with double quant the
    quantized absmax, its offset and second-level state): not parameters, so whole on every rank;
    bytes of distinct storages."""
    tensors = []
    for p in model.parameters():
        qs = getattr(p, "quant_state", None)
        if type(p).__name__ == "Params4bit" and qs is not None:
            tensors += [qs.absmax, qs.code]
            if qs.nested:
                tensors += [qs.offset, qs.state2.absmax, qs.state2.code]
    return o.storage_bytes(tensors)


def lora_config(adapter: str) -> LoraConfig:
    return LoraConfig(**ADAPTERS[adapter])


def load_base(model_name: str, dtype: str = "float32", quant: str | None = None):
    if not quant:
        return o.load_model(model_name, dtype=getattr(torch, dtype))
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig
    q = QUANTS[quant]
    cfg = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=q["quant_type"],
                             bnb_4bit_quant_storage=getattr(torch, q["storage"]),
                             bnb_4bit_compute_dtype=getattr(torch, q["compute"]),
                             bnb_4bit_use_double_quant=q["double"])
    return AutoModelForCausalLM.from_pretrained(os.path.join(o.OUT, "models", model_name), quantization_config=cfg,
                                                dtype=getattr(torch, q["load"]), device_map="cpu")


def load_peft(c: dict):
    torch.manual_seed(0)
    model = load_base(c["model"], c.get("load_dtype", "float32"), c.get("quant"))
    if c.get("kbit"):
        from peft import prepare_model_for_kbit_training
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    return get_peft_model(model, lora_config(c["adapter"]))


def trainer_policy(model, c: dict, plugin) -> None:
    """transformers' own integrations/fsdp.py update_fsdp_plugin_peft (5.12.1; the Trainer calls it
    for FSDP1 only): peft's wrap policy, and a floating bnb_4bit_quant_storage as mixed precision."""
    if c.get("caller") == "trainer":
        from transformers.integrations.fsdp import update_fsdp_plugin_peft
        update_fsdp_plugin_peft(model, types.SimpleNamespace(state=types.SimpleNamespace(fsdp_plugin=plugin)))


o.LOAD_HOOK = load_peft
o.PLUGIN_HOOK = trainer_policy


# Also recorded loaded in bfloat16 (record-bf16.json): the dtypes peft gives adapters and wrappers.
RECORD_BF16 = {("llama", "qv"), ("llama", "mts"), ("llama", "dora"), ("qwen2", "biasall")}
# And quantized to 4 bits with each of QUANTS (record-<quant>.json).
RECORD_QUANT = {("llama", "qv"), ("llama", "alllinear"), ("qwen2", "qv")}


def record(model_name: str, adapter: str, dtype: str = "float32", quant: str | None = None) -> dict:
    """Save the adapter (float32 only) and describe the PeftModel peft builds."""
    torch.manual_seed(0)
    pm = get_peft_model(load_base(model_name, dtype, quant), lora_config(adapter))
    d = os.path.join(OUT, "adapters", f"{model_name}-{adapter}")
    os.makedirs(d, exist_ok=True)
    if dtype == "float32" and not quant:
        pm.save_pretrained(d, safe_serialization=True)
        for extra in os.listdir(d):
            if extra not in ("adapter_config.json", "adapter_model.safetensors") and not extra.startswith("record"):
                os.remove(os.path.join(d, extra))
    trainable, total = pm.get_nb_trainable_parameters()
    rec = {
        "model": model_name, "adapter": adapter, "lora_config": ADAPTERS[adapter],
        "load_dtype": QUANTS[quant]["load"] if quant else dtype, "quant": QUANTS[quant] if quant else None,
        "versions": {"peft": peft.__version__, "torch": torch.__version__, "transformers": o.transformers.__version__},
        "class": type(pm).__name__, "trainable_params": int(trainable), "all_params": int(total),
        "quant_state_bytes": quant_state_bytes(pm),
        "modules": [[n, type(m).__name__] for n, m in pm.named_modules()],
        "params": [[n, list(p.shape), str(p.dtype).replace("torch.", ""), bool(p.requires_grad)]
                   for n, p in pm.named_parameters(remove_duplicate=False)],
    }
    name = f"record-{quant}.json" if quant else "record.json" if dtype == "float32" else "record-bf16.json"
    with open(os.path.join(d, name), "w") as f:
        f.write(o.dump(rec))
    return rec


def case(model, adapter, fsdp, W, caller, **kw):
    policy = o.TF()
    c = o.case(model, fsdp, W, policy, **kw)
    parts = c["case"].split("-")
    parts.insert(1, adapter)
    parts.insert(-1, caller)
    if kw.get("load_dtype"):
        parts.insert(-1, "load" + kw["load_dtype"].replace("float", "f").replace("bfloat", "bf"))
    if kw.get("quant"):
        parts.insert(-1, kw["quant"])
        c["load_dtype"] = QUANTS[kw["quant"]]["load"]
        c["quant_config"] = QUANTS[kw["quant"]]
    if kw.get("kbit"):
        parts.insert(-1, "kbit")
    c["case"] = "-".join(parts)
    c.update(adapter=adapter, caller=caller)
    if c.get("load_dtype", "float32") != "float32":
        c["step"] = False  # gloo rejects bf16/fp16 all-gathers
    return c


def all_cases() -> list:
    cs = []
    for model, adapters in PLAN.items():
        for a in adapters:
            cs.append(case(model, a, 1, 3, "trainer"))
            cs.append(case(model, a, 1, 4, "trainer", use_orig_params=True))
            cs.append(case(model, a, 1, 3, "accelerate"))
            cs.append(case(model, a, 1, 2, "accelerate", use_orig_params=True))
            cs.append(case(model, a, 2, 3, "accelerate"))
            cs.append(case(model, a, 2, 4, "accelerate"))
    for model, a in (("llama", "qv"), ("llama", "alllinear"), ("qwen2", "biasall"), ("llama", "mts")):
        cs.append(case(model, a, 1, 3, "trainer", load_dtype="bfloat16"))
        cs.append(case(model, a, 1, 3, "trainer", load_dtype="bfloat16", use_orig_params=True))
        cs.append(case(model, a, 1, 3, "accelerate", load_dtype="bfloat16", use_orig_params=True))
        cs.append(case(model, a, 2, 3, "accelerate", load_dtype="bfloat16"))
        cs.append(case(model, a, 1, 3, "trainer", mixed_precision="bf16"))
        cs.append(case(model, a, 2, 3, "accelerate", mixed_precision="bf16"))
        cs.append(case(model, a, 2, 3, "accelerate", load_dtype="bfloat16", mixed_precision="bf16"))
    # QLoRA: 4-bit base weights in each storage dtype, the Trainer's and plain accelerate's preparation.
    for q in QUANTS:
        for a in ("qv", "alllinear"):
            cs.append(case("llama", a, 1, 3, "trainer", quant=q))
            cs.append(case("llama", a, 1, 3, "trainer", quant=q, use_orig_params=True))
            cs.append(case("llama", a, 1, 2, "accelerate", quant=q, use_orig_params=True))
            cs.append(case("llama", a, 2, 3, "accelerate", quant=q))
        cs.append(case("qwen2", "qv", 1, 3, "trainer", quant=q))
        cs.append(case("qwen2", "qv", 2, 3, "accelerate", quant=q))
        cs.append(case("llama", "qv", 1, 3, "trainer", quant=q, kbit=True))
        cs.append(case("llama", "qv", 2, 3, "accelerate", quant=q, kbit=True))
    return o.unique(cs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="*")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--records", action="store_true", help="(re)write every adapter and record, run no case")
    ap.add_argument("--accelerate-src", help="run the cases with this accelerate source tree (see above)")
    a = ap.parse_args()
    cases = [c for c in all_cases() if fnmatch.fnmatch(c["case"], a.only)]
    if a.accelerate_src:
        import accelerate
        major, minor = accelerate.__version__.split(".")[:2]
        for c in cases:
            head, _, world = c["case"].rpartition("-")
            c["case"] = f"{head}-acc{major}{minor}-{world}"
    pairs = sorted({(c["model"], c["adapter"]) for c in (all_cases() if a.records else cases)})
    if a.list:
        return o.list_cases(cases)
    os.makedirs(OUT, exist_ok=True)
    for pair in ([] if a.accelerate_src else pairs):  # records do not depend on accelerate
        rec = record(*pair)
        print("adapter", *pair, rec["trainable_params"], "of", rec["all_params"], file=sys.stderr)
        if pair in RECORD_BF16:
            record(*pair, dtype="bfloat16")
        if pair in RECORD_QUANT:
            for q in QUANTS:
                record(*pair, quant=q)
    if a.records:
        return 0
    t0 = time.time()
    for i, c in enumerate(cases):
        o.run_and_write(c, OUT, a.timeout, f"{i + 1}/{len(cases)} {time.time() - t0:.0f}s", {"peft": peft.__version__})
    return 0


if __name__ == "__main__":
    sys.exit(main())
