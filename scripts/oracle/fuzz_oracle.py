#!/usr/bin/python3
"""Differential fuzzer: random FSDP cases run on REAL torch + transformers + accelerate.

Dev-time tool, run inside the real-stack chroot (scripts/oracle2_setup.sh); CI never needs it.
A seeded generator samples what nobody wrote a test for: an architecture of the oracle's model
zoo (scripts/torch2_oracle.py MODELS: dense, MoE, vision-language) with a random small config
(vocabulary, depth, tied or not), FSDP1 or FSDP2, the sharding strategy, the policy (accelerate's
default classes, class lists at random levels of the model, size thresholds at, just below and just
above a module's size, no wrap), world size 1-8, HSDP meshes, use_orig_params, a frozen-parameter
regex, an ignored-modules regex, the load dtype and mixed precision. Each case runs exactly as
torch2_oracle.py runs its own (W forked gloo ranks, accelerate's plugin and prepare_model arguments
for FSDP1, accelerate's fsdp2_prepare_model for FSDP2, lazy init, one AdamW step where gloo allows),
and is written in the oracle's record format with the extra fields

  model_dir   the saved config.json of the case's model (relative to the repository; config-only)
  load_dtype  from_pretrained(dtype=...): float32, bfloat16 or float16
  frozen      a regex: every parameter with a name (tied aliases included) it re.search-es is frozen
              with requires_grad_(False), which acts on the Parameter all its names share
  seed        the generator's seed; the case name ends with its index

  scripts/oracle2_run.sh python3 scripts/oracle/fuzz_oracle.py --seed 7 --cases 500 --out fuzz-out
  build/tests/unit/shardcheck_unit -tc='fuzz*'   # with SHARDCHECK_FUZZ_DIR=fuzz-out/seed-7: compare all
  python3 scripts/oracle/fuzz_keep.py fuzz-out/seed-7 # failing cases + a sample -> fixtures/fuzz/

The chroot has no shardcheck: the comparison is tests/unit/test_fuzz_oracle.cpp on the host.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch2_oracle as T  # noqa: E402  (the oracle's models, case runner and record format)
import torch  # noqa: E402
from transformers import AutoConfig  # noqa: E402

REPO = T.REPO
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
MOE_TYPES = ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3", "gpt_oss", "olmoe", "phimoe", "deepseek_v2",
             "granitemoe")
VLM = ("llava", "llava_next", "llava_onevision", "paligemma", "gemma3", "qwen2_vl", "qwen2_5_vl", "idefics3",
       "smolvlm", "mllama")
DENSE = ("llama", "mistral", "qwen2", "qwen3", "olmo2", "granite", "gemma", "gemma2", "gemma3_text", "phi3", "phi",
         "starcoder2", "gpt_neox", "falcon", "gpt2", "helium", "smollm3", "arcee", "olmo", "cohere2", "glm", "glm4",
         "seed_oss", "apertus", "stablelm")
MOE = ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3", "gpt_oss", "olmoe", "granitemoe", "phimoe", "deepseek_v2")
# Causal LMs the registry gained from transformers' own records (rules/models/, #39): no hand-made tiny
# config in torch2_oracle.MODELS, so their default config is shrunk field by field (shrink_config).
NEW_CAUSAL = ("opt", "bloom", "gptj", "gpt_neo", "gpt_bigcode", "codegen", "mpt", "persimmon", "xglm", "biogpt",
              "ctrl", "openai-gpt", "exaone4", "ernie4_5", "bitnet", "olmo3", "vaultgemma", "ministral3", "jais2",
              "diffllama", "doge", "cwm", "youtu", "nanochat", "solar_open", "hyperclovax", "nemotron",
              "hunyuan_v1_dense", "hunyuan_v1_moe", "qwen3_next", "qwen3_5_text", "jetmoe", "flex_olmo", "mamba",
              "falcon_mamba")

# Field name -> tiny value; the first pattern that matches a name wins. Odd sizes where shapes allow
# (vocabulary), even head dims (rotary embeddings), 2 heads over 1 key/value head.
SHRINK = [
    (r"^(vocab_size)$", 37),
    (r"(kv_heads|key_value_heads|num_kv|n_head_kv|multi_query_group)", 1),
    (r"(heads|n_head)$", 2),
    (r"^head_dim$", 12),
    (r"(hidden_size|n_embd|d_model|word_embed_proj_dim|embed_dim)$", 24),
    (r"(intermediate_size|ffn_dim|n_inner|d_ff|inner_dim|ffn_hidden_size)$", 40),
    (r"(num_hidden_layers|n_layer|num_layers|n_layers)$", 2),
    (r"(max_position_embeddings|n_positions|n_ctx|max_seq_len|max_sequence_length)$", 64),
    (r"(num_local_experts|num_experts|n_routed_experts|moe_num_experts)$", 3),
    (r"(num_experts_per_tok|top_k|moe_topk)$", 2),
    (r"(moe_intermediate_size|expert_intermediate_size|shared_expert_intermediate_size)$", 14),
    (r"(state_size|d_state|conv_kernel|linear_conv_kernel_dim)$", 4),
    (r"(linear_num_key_heads|linear_num_value_heads)$", 2),
    (r"(linear_key_head_dim|linear_value_head_dim)$", 8),
]


def shrink_config(model_type: str) -> dict:
    """transformers' default config for model_type with every size field made tiny."""
    defaults = AutoConfig.for_model(model_type).to_dict()
    kw = {}
    for key, value in defaults.items():
        if isinstance(value, bool) or not isinstance(value, int):
            continue
        for pattern, tiny in SHRINK:
            if re.search(pattern, key):
                kw[key] = tiny
                break
    for key, value in defaults.items():  # special tokens inside the tiny vocabulary
        if key.endswith("_token_id") and isinstance(value, int) and not isinstance(value, bool) and value > 2:
            kw[key] = 2
    if "layer_types" in defaults and isinstance(defaults["layer_types"], list):
        pattern = defaults["layer_types"]
        kw["layer_types"] = [pattern[i % len(pattern)] for i in range(2)]
        if model_type in ("qwen3_next", "qwen3_5_text"):  # one linear-attention and one full-attention layer
            kw["layer_types"] = ["linear_attention", "full_attention"]
    return kw


# ------------------------------------------------------------------------------------------------
# Models: a random small config per case, saved once per distinct config
# ------------------------------------------------------------------------------------------------

def random_config(rng: random.Random, base: str) -> tuple[str, dict]:
    """The zoo model `base` with its sizes and tying drawn at random (what any config may say)."""
    model_type, kw = T.MODELS[base] if base in T.MODELS else (base, shrink_config(base))
    kw = json.loads(json.dumps(kw))  # a deep copy
    if base in VLM:
        if rng.random() < 0.3:
            kw["tie_word_embeddings"] = True
        return model_type, kw
    if "vocab_size" in kw:
        kw["vocab_size"] = rng.choice([29, 37, 41, 53, 64])
    if base not in T.MODELS:  # a shrunk default config: its two layers and layer_types stay
        if rng.random() < 0.5:
            kw["tie_word_embeddings"] = rng.random() < 0.5
        return model_type, kw
    layers_key = "n_layer" if model_type == "gpt2" else "num_hidden_layers"
    layers = rng.choice([1, 2, 3])
    kw[layers_key] = layers
    if "layer_types" in kw:
        kw["layer_types"] = [("sliding_attention" if i % 2 == 0 else "full_attention") for i in range(layers)]
    if model_type == "deepseek_v3" or model_type == "deepseek_v2":
        kw["first_k_dense_replace"] = rng.choice([0, 1])
    if "intermediate_size" in kw and model_type not in MOE_TYPES:
        kw["intermediate_size"] = rng.choice([22, 38, 52])
    if rng.random() < 0.5:
        kw["tie_word_embeddings"] = rng.random() < 0.5
    return model_type, kw


def model_key(model_type: str, kw: dict) -> str:
    return model_type + "-" + hashlib.sha1(json.dumps([model_type, kw], sort_keys=True).encode()).hexdigest()[:10]


def save_model(model_type: str, kw: dict, models_dir: str, weights_dir: str) -> str:
    """Builds the model with transformers, saves config.json (kept) and the weights (scratch)."""
    key = model_key(model_type, kw)
    wdir = os.path.join(weights_dir, key)
    if not os.path.exists(os.path.join(wdir, "model.safetensors")):
        cfg = AutoConfig.for_model(model_type, **kw)
        if hasattr(cfg, "experts_implementation"):
            cfg.experts_implementation = "eager"
        torch.manual_seed(0)
        model = T.auto_class(cfg).from_config(cfg, dtype=torch.float32)
        T.fill_distinct(model)
        if cfg.model_type not in T.MODELS and getattr(cfg, "vision_config", None) is None:
            # A shrunk default config must run without FSDP first: a config the model itself cannot
            # run (a rotary width above the head size) is no FSDP case (raises: the draw is skipped).
            # Forward only, without autograd: a backward here would start autograd's worker threads,
            # which the forked ranks then refuse ("Unable to handle autograd's threading ... fork").
            ids = torch.tensor([[1, 5, 2, 7, 3]])
            with torch.no_grad():
                model(input_ids=ids, labels=ids)
        model.save_pretrained(wdir, safe_serialization=True)
        os.makedirs(os.path.join(models_dir, key), exist_ok=True)
        shutil.copy(os.path.join(wdir, "config.json"), os.path.join(models_dir, key, "config.json"))
    return key


def meta_model(wdir: str):
    cfg = AutoConfig.from_pretrained(wdir)
    with torch.device("meta"):
        return T.auto_class(cfg).from_config(cfg)


# ------------------------------------------------------------------------------------------------
# Cases
# ------------------------------------------------------------------------------------------------

def subtree_numels(model) -> dict:
    """Each module's parameter elements, a shared Parameter counted once (what a size policy sums)."""
    out = {}
    for name, m in model.named_modules():
        out[name] = sum(p.numel() for p in m.parameters())
    return out


def draw_policy(rng: random.Random, model, fsdp: int) -> dict:
    r = rng.random()
    if r < 0.4:
        return T.TF()
    if r < 0.65:
        classes = sorted({type(m).__name__ for _, m in model.named_modules() if m is not model})
        return T.TF(*rng.sample(classes, k=min(len(classes), rng.choice([1, 1, 2]))))
    if r < 0.92:
        sizes = sorted({n for n in subtree_numels(model).values() if n > 0})
        n = rng.choice(sizes) + rng.choice([-1, 0, 0, 1])
        return T.SIZE(max(n, 1))
    return T.NONE


def draw_regex(rng: random.Random, model, kind: str) -> str:
    """frozen: searched in parameter names; ignored: full-matched against module names."""
    if kind == "frozen":
        names = [n for n, _ in model.named_parameters(remove_duplicate=False)]
        pick = rng.random()
        if pick < 0.4:
            return re.escape(rng.choice(names))
        return rng.choice([r"embed_tokens", r"lm_head", r"norm", r"layers\.0\.", r"bias", r"wte", r"embed",
                           r"self_attn", r"mlp", r"experts", r"vision"])
    paths = [n for n, _ in model.named_modules() if n]
    return re.escape(rng.choice(paths))


def draw_case(rng: random.Random, seed: int, index: int, models_dir: str, weights_dir: str) -> dict | None:
    pool = POOL + (VLM if rng.random() < 0.15 else ())
    base = rng.choice(pool)
    model_type, kw = random_config(rng, base)
    try:
        key = save_model(model_type, kw, models_dir, weights_dir)
    except Exception as e:  # noqa: BLE001 - a config transformers refuses is not a case
        print(f"skip {base}: {type(e).__name__}: {e}", file=sys.stderr)
        return None
    model = meta_model(os.path.join(weights_dir, key))
    fsdp = rng.choice([1, 2])
    W = rng.choice([1, 2, 2, 3, 4, 4, 5, 6, 7, 8])
    policy = draw_policy(rng, model, fsdp)
    kwargs: dict = {}
    if fsdp == 1:
        strat = rng.choice(["FULL_SHARD", "FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD",
                            "_HYBRID_SHARD_ZERO2"])
        if strat.endswith("HYBRID_SHARD") or strat == "_HYBRID_SHARD_ZERO2":
            machines = [m for m in range(2, W + 1) if W % m == 0]
            if not machines:
                strat = "FULL_SHARD"
            else:
                kwargs["num_machines"] = rng.choice(machines)
        kwargs["sharding_strategy"] = strat
        kwargs["use_orig_params"] = rng.random() < 0.5
    else:
        reps = [r for r in range(2, W + 1) if W % r == 0]
        if reps and rng.random() < 0.25:
            kwargs["dp_replicate"] = rng.choice(reps)
        if rng.random() < 0.15:
            kwargs["reshard_after_forward"] = False
    if rng.random() < 0.2:
        kwargs["mixed_precision"] = "bf16"
    if rng.random() < 0.15:
        kwargs["ignored_modules"] = draw_regex(rng, model, "ignored")
    c = T.case(base, fsdp, W, policy, **kwargs)
    c["case"] = f"s{seed}-{index:04d}-" + c["case"]
    c["model"] = key
    c["model_type"] = model_type
    c["model_dir"] = os.path.relpath(os.path.join(models_dir, key), REPO)
    c["seed"] = seed
    c["load_dtype"] = rng.choices(["float32", "bfloat16", "float16"], weights=[6, 2, 2])[0]
    if rng.random() < 0.25:
        c["frozen"] = draw_regex(rng, model, "frozen")
    # gloo has no bfloat16 or float16 collectives ("RuntimeError: Invalid scalar type"): such cases
    # record the layout and lazy init only.
    c["step"] = c.get("step", True) and c["load_dtype"] == "float32"
    return c


# ------------------------------------------------------------------------------------------------
# Loading as a job does: from_pretrained in the dtype, then the user's freezing
# ------------------------------------------------------------------------------------------------

WEIGHTS = None  # set in main, before any case forks
POOL = DENSE + MOE + NEW_CAUSAL  # --pool


def load_case_model(c: dict):
    d = os.path.join(WEIGHTS, c["model"])
    kwargs = {"dtype": DTYPES[c["load_dtype"]]}
    cfg = AutoConfig.from_pretrained(d)
    if hasattr(cfg, "experts_implementation") or cfg.model_type in MOE_TYPES:
        kwargs["experts_implementation"] = "eager"
    try:
        model = T.auto_class(cfg).from_pretrained(d, **kwargs)
    except TypeError:
        kwargs.pop("experts_implementation", None)
        model = T.auto_class(cfg).from_pretrained(d, **kwargs)
    return model  # torch2_oracle.rank_main then applies the case's `frozen`


def main() -> int:
    global WEIGHTS, POOL
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=None, help="default: a fresh one from the clock")
    ap.add_argument("--cases", type=int, default=500)
    ap.add_argument("--out", default="fuzz-out", help="directory under the repository")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--list", action="store_true", help="draw and print the cases without running them")
    ap.add_argument("--pool", choices=["all", "new"], default="all",
                    help="new: only the causal LMs whose tiny config is shrunk from transformers' default")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else int(time.time()) % 100000
    if a.pool == "new":
        POOL = NEW_CAUSAL
    out = os.path.join(REPO, a.out, f"seed-{seed}")
    models_dir = os.path.join(out, "models")
    cases_dir = os.path.join(out, "cases")
    os.makedirs(models_dir, exist_ok=True)
    os.makedirs(cases_dir, exist_ok=True)
    WEIGHTS = tempfile.mkdtemp(prefix="fuzz-weights-")
    T.LOAD_HOOK = load_case_model
    rng = random.Random(seed)
    print(f"seed {seed}: {a.cases} cases -> {out}", file=sys.stderr)
    t0, n = time.time(), 0
    while n < a.cases:
        c = draw_case(rng, seed, n, models_dir, WEIGHTS)
        if c is None:
            continue
        n += 1
        if a.list:
            print(json.dumps(c))
            continue
        try:
            T.run_and_write(c, cases_dir, a.timeout, f"{n}/{a.cases} {time.time() - t0:.0f}s")
        except AssertionError as e:
            # torch2_oracle.merge: the ranks built different FSDP1 units (a size policy counting
            # rank-local slices); a real job would then hang or fail in its first collective.
            rec = dict(c, error={"type": "RanksDisagree", "message": str(e)[:2000], "stage": "wrap"})
            with open(os.path.join(cases_dir, c["case"] + ".json"), "w") as f:
                f.write(T.dump(rec))
            print(f"[{n}/{a.cases}] {c['case']}: ranks disagree", file=sys.stderr)
    shutil.rmtree(WEIGHTS, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
