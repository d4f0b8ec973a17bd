#!/usr/bin/python3
"""Records what real transformers builds for a config: the conformance records of the registry.

Dev-time tool; runs inside the Debian unstable chroot (scripts/oracle2_setup.sh) with Debian's
python3-transformers 5.x and python3-torch:

  scripts/oracle2_run.sh python3 scripts/hf_record.py            # every record
  scripts/oracle2_run.sh python3 scripts/hf_record.py --only 'qwen*'

For each config (transformers' own defaults for every registry model_type, the real Hub configs in
fixtures/corpus-configs/, and the tiny oracle models' configs), the model is instantiated on the
`meta` device (`AutoModelForCausalLM.from_config`; no weights, seconds per model) and written to
fixtures/hf-records/<name>.json:
  config          the config.json the model was built from (config.to_dict(), what save_pretrained writes)
  class           the head class
  modules         [path, class] for every module, named_modules() order (registration, pre-order)
  params          [name, shape, dtype] for every parameter, named_parameters() order (tied aliases once)
  tied            [[alias, target]] from the model's tied-weight keys
  no_split_modules  sorted(model._no_split_modules)
  tp_plan         the model's base_model_tp_plan (config.base_model_tp_plan)
  versions        transformers and torch as they report themselves
tests/unit/test_hf_records.cpp builds each config-only with shardcheck's registry and compares.
"""
from __future__ import annotations

import argparse
import fnmatch
import glob
import json
import os
import sys
import warnings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "fixtures", "hf-records")

warnings.filterwarnings("ignore")

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoModelForImageTextToText  # noqa: E402
from transformers import AutoModelForSeq2SeqLM, AutoModelForSpeechSeq2Seq  # noqa: E402
from transformers.models.auto.modeling_auto import (  # noqa: E402
    MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES as SEQ2SEQ, MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES as SPEECH_SEQ2SEQ)

transformers.logging.set_verbosity_error()

# Registry model types whose transformers defaults are recorded (the full-size default models).
REGISTRY_TYPES = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(REPO, "rules", "models", "*.yaml"))
                        if not os.path.basename(p).startswith("_"))


# Types not in the registry yet, recorded for drafting their registry files (draft_registry.py).
CANDIDATE_TYPES = ["cohere", "cohere2", "olmo", "olmoe", "granitemoe", "phimoe", "deepseek_v2", "helium",
                   "glm", "glm4", "smollm3", "seed_oss", "arcee", "apertus", "vipllava", "llava_next_video",
                   "video_llava", "shieldgemma2", "aya_vision", "cohere2_vision", "deepseek_vl", "aria", "fuyu"]


# Vision-language model types, recorded whole (vision tower, projector, language model).
VLM_TYPES = ["llava", "llava_next", "llava_onevision", "paligemma", "qwen2_vl", "qwen2_5_vl", "mllama", "idefics3",
             "gemma3", "smolvlm", "vipllava", "llava_next_video", "video_llava", "shieldgemma2", "aya_vision",
             "cohere2_vision", "deepseek_vl", "aria", "mistral3", "lighton_ocr", "internvl", "lfm2_vl", "qwen3_vl", "qwen3_5", "qwen3_5_moe", "qwen3_vl_moe"]


# Fields transformers' own default config leaves unset although the model needs them (the default
# config does not build: HunYuan's head_dim, Nemotron's num_key_value_heads): the default record sets them.
DEFAULT_OVERRIDES = {
    "hunyuan_v1_dense": {"head_dim": 128},
    "hunyuan_v1_moe": {"head_dim": 128},
    "nemotron": {"num_key_value_heads": 8},
    "ministral": {"head_dim": 128},
}


def sources():
    """(name, config dict) pairs."""
    out = []
    for mt in dict.fromkeys(REGISTRY_TYPES + [t for t in CANDIDATE_TYPES + VLM_TYPES if t not in REGISTRY_TYPES]):
        try:
            cfg = AutoConfig.for_model(mt, **DEFAULT_OVERRIDES.get(mt, {}))
        except Exception as e:  # noqa: BLE001
            print(f"skip default {mt}: {e}", file=sys.stderr)
            continue
        out.append((f"default-{mt}", cfg.to_dict()))
    for path in sorted(glob.glob(os.path.join(REPO, "fixtures", "corpus-configs", "*.json"))):
        out.append(("hub-" + os.path.basename(path)[:-5], json.load(open(path))))
    # The second configuration of each type scripts/registry_autodraft.py drafted (its fields changed).
    for path in sorted(glob.glob(os.path.join(OUT, "vary-configs", "*.json"))):
        out.append(("vary-" + os.path.basename(path)[:-5], json.load(open(path))))
    for path in sorted(glob.glob(os.path.join(REPO, "fixtures", "oracle2", "models", "*", "config.json"))):
        out.append(("tiny-" + os.path.basename(os.path.dirname(path)), json.load(open(path))))
    return out


def head_kind(model_type: str) -> str:
    """"seq2seq" for the encoder-decoder types (transformers' seq2seq and speech-seq2seq mappings)."""
    return "seq2seq" if model_type in SEQ2SEQ or model_type in SPEECH_SEQ2SEQ else "causal"


def record(name: str, cfg_dict: dict) -> dict:
    cfg_dict = dict(cfg_dict)
    model_type = cfg_dict.get("model_type")
    try:
        cfg = AutoConfig.for_model(model_type, **{k: v for k, v in cfg_dict.items() if k != "model_type"})
    except ValueError as e:
        if "unknown kwargs" not in str(e):
            raise
        # DBRX's attn_config / ffn_config classes refuse the generic keys their own to_dict() writes
        # (_name_or_path, output_attentions): read the nested dicts without them.
        generic = {"_name_or_path", "output_attentions", "output_hidden_states", "return_dict", "torchscript",
                   "transformers_version", "dtype", "torch_dtype", "use_return_dict"}
        cfg = AutoConfig.for_model(model_type, **{
            k: ({a: b for a, b in v.items() if a not in generic} if isinstance(v, dict) else v)
            for k, v in cfg_dict.items() if k != "model_type"})
    with torch.device("meta"):
        # Vision-language models: the class a fine-tuning script builds for image + text input (some,
        # like mllama, also map to a text-only causal LM class).
        if model_type in VLM_TYPES:
            model = AutoModelForImageTextToText.from_config(cfg)
        elif head_kind(model_type) == "seq2seq":
            # Encoder-decoders (T5, BART, Whisper): the *ForConditionalGeneration people fine-tune, not
            # the decoder-only *ForCausalLM some of them also have.
            model = (AutoModelForSpeechSeq2Seq if model_type in SPEECH_SEQ2SEQ else AutoModelForSeq2SeqLM).from_config(cfg)
        else:
            try:
                model = AutoModelForCausalLM.from_config(cfg)
            except ValueError:
                # A sub-model type (clip_vision_model, siglip_vision_model, ...): its base model.
                model = AutoModel.from_config(cfg)
    names = {id(m): n for n, m in model.named_modules()}
    tied = []
    keys = getattr(model, "all_tied_weights_keys", None) or {}
    for alias, target in sorted(keys.items()):
        tied.append([alias, target])
    return {
        "name": name,
        "config": cfg.to_dict(),
        "class": type(model).__name__,
        "modules": [[n, type(m).__name__] for n, m in model.named_modules()],
        "params": [[n, list(p.shape), str(p.dtype).replace("torch.", "")] for n, p in model.named_parameters()],
        "tied": tied,
        "no_split_modules": sorted(model._no_split_modules or []),
        "tp_plan": dict(getattr(cfg, "base_model_tp_plan", None) or {}),
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__},
        "_count": len(names),
    }


def finite(v):
    """JSON has no Infinity or NaN (Mamba-2's time_step_limit (0, inf)): such floats are written as strings."""
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return str(v)
    if isinstance(v, dict):
        return {k: finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [finite(x) for x in v]
    return v


def dump(doc: dict) -> str:
    doc = finite(doc)
    lines = []
    for k, v in doc.items():
        if k.startswith("_"):
            continue
        if isinstance(v, list) and v and isinstance(v[0], list):
            inner = ",\n".join("  " + json.dumps(x) for x in v)
            lines.append(f" {json.dumps(k)}: [\n{inner}\n ]")
        else:
            lines.append(f" {json.dumps(k)}: {json.dumps(v, sort_keys=True)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="*", help="glob(s) of record names, comma-separated")
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    failed = 0
    for name, cfg in sources():
        if not any(fnmatch.fnmatch(name, pat) for pat in a.only.split(",")):
            continue
        try:
            doc = record(name, cfg)
        except Exception as e:  # noqa: BLE001
            print(f"{name}: FAILED {type(e).__name__}: {str(e)[:200]}", file=sys.stderr)
            failed += 1
            continue
        # Types the registry does not describe yet go to candidates/, the input of draft_registry.py.
        out_dir = OUT if cfg.get("model_type") in REGISTRY_TYPES else os.path.join(OUT, "candidates")
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, name + ".json"), "w") as f:
            f.write(dump(doc))
        print(f"{name}: {doc['class']}, {len(doc['modules'])} modules, {len(doc['params'])} parameters", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
