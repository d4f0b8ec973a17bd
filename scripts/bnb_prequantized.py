#!/usr/bin/python3
"""Pre-quantized bitsandbytes checkpoints, written by REAL transformers + bitsandbytes, for
fixtures/bnb-prequantized/ (the "unsloth/...-bnb-4bit" kind of Hub model: config.json carries the
quantization_config, model.safetensors the packed Params4bit bytes and each one's quantization state).

Dev-time tool; CI reads only its output. It runs in the oracle chroot beside bitsandbytes' source
(scripts/peft_oracle_setup.sh), like scripts/peft_oracle.py:

  scripts/oracle2_run.sh python3 scripts/bnb_prequantized.py

For each quantization below: fixtures/oracle2/models/<model> is loaded with that BitsAndBytesConfig
and saved with save_pretrained (transformers 5.12.1 serializes the 4-bit weights with their state);
the saved directory is loaded again with from_pretrained and nothing else (the quantization_config
comes from config.json), and record.json lists that model's parameters (name, shape, dtype, class)
in registration order with the bytes of its quantization state, and whether the reload built the
same parameters as the first load.
"""
from __future__ import annotations

import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.environ.get("BNB_SRC", "/opt/bnb"))

import peft_oracle  # noqa: E402  (its quant_state_bytes; sets up peft's and bitsandbytes' paths)
import torch2_oracle as o  # noqa: E402
import torch  # noqa: E402
from transformers import AutoModelForCausalLM, BitsAndBytesConfig  # noqa: E402

OUT = os.path.join(o.REPO, "fixtures", "bnb-prequantized")

# name: (model, BitsAndBytesConfig keyword arguments, load dtype)
CHECKPOINTS = {
    "llama-nf4dq-u8": ("llama", dict(bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                     bnb_4bit_compute_dtype="bfloat16", bnb_4bit_quant_storage="uint8"), "bfloat16"),
    "llama-nf4dq-bf16": ("llama", dict(bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                       bnb_4bit_compute_dtype="bfloat16", bnb_4bit_quant_storage="bfloat16"),
                         "bfloat16"),
    "qwen2-fp4-u8": ("qwen2", dict(bnb_4bit_quant_type="fp4", bnb_4bit_compute_dtype="float32",
                                   bnb_4bit_quant_storage="uint8"), "float32"),
    # 8-bit (LLM.int8()): Int8Params of the Linear's shape in int8, its SCB beside it. shardcheck
    # refuses these (CFG008); the checkpoint shows what it refuses.
    "llama-int8": ("llama", dict(load_in_8bit=True), "bfloat16"),
}


def params_of(model) -> list:
    return [[n, list(p.shape), str(p.dtype).replace("torch.", ""), type(p).__name__]
            for n, p in model.named_parameters(remove_duplicate=False)]


def main() -> None:
    for name, (model_name, kw, load) in CHECKPOINTS.items():
        kw = {k: getattr(torch, v) if k in ("bnb_4bit_compute_dtype", "bnb_4bit_quant_storage") else v
              for k, v in kw.items()}
        bits = {} if kw.get("load_in_8bit") else {"load_in_4bit": True}
        first = AutoModelForCausalLM.from_pretrained(os.path.join(o.OUT, "models", model_name),
                                                     quantization_config=BitsAndBytesConfig(**bits, **kw),
                                                     dtype=getattr(torch, load), device_map="cpu")
        d = os.path.join(OUT, name)
        shutil.rmtree(d, ignore_errors=True)
        first.save_pretrained(d)
        os.remove(os.path.join(d, "generation_config.json"))
        again = AutoModelForCausalLM.from_pretrained(d, device_map="cpu")
        rec = {"model": model_name, "quantization": {k: str(v).replace("torch.", "") for k, v in kw.items()},
               "load_dtype": load, "same_as_first_load": params_of(first) == params_of(again),
               "quant_state_bytes": peft_oracle.quant_state_bytes(again), "params": params_of(again),
               "versions": {"torch": torch.__version__, "transformers": o.transformers.__version__}}
        with open(os.path.join(d, "record.json"), "w") as f:
            f.write(o.dump(rec))
        print(name, "params", len(rec["params"]), "same", rec["same_as_first_load"], "state", rec["quant_state_bytes"])


if __name__ == "__main__":
    main()
