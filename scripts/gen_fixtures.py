#!/usr/bin/env python3
"""Writes safetensors fixture checkpoints for shardcheck's tests (Python 3.11, standard library only).

    gen_fixtures.py tiny   --out fixtures/models   # tiny real checkpoints (committed)
    gen_fixtures.py sparse --out /tmp/sparse       # full-size, header-real, data-sparse checkpoints

Why this file exists: the C++ side derives every architecture's tensor layout from its own YAML
registry (rules/models/). The layouts below are a *second, independent* description of the same
facts, written by hand from the transformers modeling files (read at the releases each layout
names; "the research doc" below means those readings, sections cited as §N per layout), so that a test comparing the two catches a mistake on either side. Do not derive
these functions from the registry.

Names are on-disk names: transformers 4.x checkpoint names as the Hub files hold them (research doc
§0: "Tensor names in 4.44 equal what almost all Hub checkpoints hold on disk"; §2.4: 5.x converts
per-expert tensors at load, checkpoints keep them).

The safetensors writer here reproduces the official one (huggingface/safetensors
safetensors/src/tensor.rs `prepare`/`serialize`):
  * 8-byte little-endian u64 N, then N bytes of JSON header, then the data region;
  * tensors laid out sorted by dtype descending (the `Dtype` enum is declared in increasing
    alignment order), then by name (byte order);
  * header = compact JSON, `__metadata__` first, then tensors in data order, each
    {"dtype","shape","data_offsets"}; padded with spaces to a multiple of 8.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import struct
import sys
import time
import zlib
from pathlib import Path

SCRIPT_PATH = Path(__file__).resolve()
REPO_ROOT = SCRIPT_PATH.parent.parent
# The real DeepSeek-V3 config.json (a copy of the Hub file, with its source in fixtures/corpus-configs).
DEEPSEEK_V3_CONFIG = REPO_ROOT / "fixtures" / "corpus-configs" / "deepseek-ai__DeepSeek-V3.json"

# --------------------------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------------------------

# safetensors `Dtype` enum in declaration order (= increasing alignment; the writer sorts by it,
# descending). Same order as include/shardcheck/dtype.hpp.
DTYPE_ORDER = [
    "BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0",
    "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64",
    "F64", "I64", "U64",
]
DTYPE_RANK = {d: i for i, d in enumerate(DTYPE_ORDER)}
DTYPE_BYTES = {"F8_E4M3": 1, "F16": 2, "BF16": 2, "F32": 4}

# config.json `torch_dtype` -> safetensors dtype of the model's (unquantized) weights.
TORCH_TO_ST = {"bfloat16": "BF16", "float16": "F16", "float32": "F32"}


def numel(shape) -> int:
    return math.prod(shape)


def nbytes(dtype: str, shape) -> int:
    return numel(shape) * DTYPE_BYTES[dtype]


def wdtype(cfg) -> str:
    """Safetensors dtype of a checkpoint's ordinary weights (from `torch_dtype`)."""
    return TORCH_TO_ST[cfg.get("torch_dtype", "float32")]


# --------------------------------------------------------------------------------------------
# Layout helpers shared by the llama-like families (research doc §3.1)
# --------------------------------------------------------------------------------------------

def head_dim_of(cfg) -> int:
    """§3.1: head_dim = config.head_dim if set (4.57/main; mistral, qwen3, gemma*, gpt_oss always
    carry it), else hidden_size // num_attention_heads."""
    hd = cfg.get("head_dim")
    return hd if hd else cfg["hidden_size"] // cfg["num_attention_heads"]


def n_kv_heads(cfg) -> int:
    return cfg.get("num_key_value_heads") or cfg["num_attention_heads"]


def llama_attention(p, cfg, dt, qkv_bias=False, o_bias=False):
    """§3.1 self_attn: q [nH*hd, H], k/v [nKV*hd, H], o [H, nH*hd]; optional biases."""
    H, nH, nKV, hd = cfg["hidden_size"], cfg["num_attention_heads"], n_kv_heads(cfg), head_dim_of(cfg)
    out = []
    for proj, rows in (("q_proj", nH * hd), ("k_proj", nKV * hd), ("v_proj", nKV * hd)):
        out.append((f"{p}self_attn.{proj}.weight", dt, [rows, H]))
        if qkv_bias:
            out.append((f"{p}self_attn.{proj}.bias", dt, [rows]))
    out.append((f"{p}self_attn.o_proj.weight", dt, [H, nH * hd]))
    if o_bias:
        out.append((f"{p}self_attn.o_proj.bias", dt, [H]))
    return out


def gated_mlp(p, H, I, dt):
    """§3.1 LlamaMLP: gate_proj [I, H], up_proj [I, H], down_proj [H, I] (no bias)."""
    return [
        (f"{p}gate_proj.weight", dt, [I, H]),
        (f"{p}up_proj.weight", dt, [I, H]),
        (f"{p}down_proj.weight", dt, [H, I]),
    ]


def tie_embeddings(cfg, class_default: bool) -> bool:
    """§1 table 'tie_word_embeddings default' / §5 rule 6: a config.json without the key gets the
    config class default."""
    return bool(cfg.get("tie_word_embeddings", class_default))


def llama_non_layer_head(cfg, dt):
    """§3.1 non_layer: model.embed_tokens.weight [V, H] (emitted before the layers)."""
    return [("model.embed_tokens.weight", dt, [cfg["vocab_size"], cfg["hidden_size"]])]


def llama_non_layer_tail(cfg, dt, tie_default: bool):
    """§3.1 non_layer: model.norm.weight [H]; lm_head.weight [V, H] unless tied (§5 rule 6)."""
    out = [("model.norm.weight", dt, [cfg["hidden_size"]])]
    if not tie_embeddings(cfg, tie_default):
        out.append(("lm_head.weight", dt, [cfg["vocab_size"], cfg["hidden_size"]]))
    return out


def llama_like(cfg, layer_fn, tie_default: bool):
    """embed, layers 0..L-1 (each from layer_fn(prefix, i)), final norm, lm_head."""
    dt = wdtype(cfg)
    out = llama_non_layer_head(cfg, dt)
    for i in range(cfg["num_hidden_layers"]):
        out += layer_fn(f"model.layers.{i}.", i)
    return out + llama_non_layer_tail(cfg, dt, tie_default)


def two_norms(p, H, dt):
    return [(f"{p}input_layernorm.weight", dt, [H]), (f"{p}post_attention_layernorm.weight", dt, [H])]


# --------------------------------------------------------------------------------------------
# Per-architecture layouts: layout_<model_type>(cfg) -> [(name, safetensors dtype, shape)]
# in "layer order" (embeddings, layers 0..L-1, final norm / head; extras after).
# --------------------------------------------------------------------------------------------

def layout_llama(cfg):
    """§3.1 llama (transformers models/llama/modeling_llama.py): q/k/v/o (+bias if
    attention_bias), gate/up/down (+bias if mlp_bias), input/post_attention RMSNorm; tie default
    False."""
    H, I, dt = cfg["hidden_size"], cfg["intermediate_size"], wdtype(cfg)
    ab, mb = cfg.get("attention_bias", False), cfg.get("mlp_bias", False)

    def layer(p, i):
        out = llama_attention(p, cfg, dt, qkv_bias=ab, o_bias=ab)
        for name, d, shape in gated_mlp(f"{p}mlp.", H, I, dt):
            out.append((name, d, shape))
            if mb:
                out.append((name[: -len("weight")] + "bias", d, [shape[0]]))
        return out + two_norms(p, H, dt)

    return llama_like(cfg, layer, tie_default=False)


def layout_mistral(cfg):
    """§3.2 mistral (models/mistral/modeling_mistral.py): llama names/shapes, head_dim is a config
    field (also in 4.44), no biases; tie default False."""
    H, I, dt = cfg["hidden_size"], cfg["intermediate_size"], wdtype(cfg)
    return llama_like(
        cfg, lambda p, i: llama_attention(p, cfg, dt) + gated_mlp(f"{p}mlp.", H, I, dt) + two_norms(p, H, dt),
        tie_default=False)


def layout_mixtral(cfg):
    """§3.3 mixtral (models/mixtral/modeling_mixtral.py), 4.44/on-disk names:
    block_sparse_moe.gate.weight [E, H]; block_sparse_moe.experts.{j}.w1 [I, H] (gate),
    w2 [H, I] (down), w3 [I, H] (up); E = num_local_experts; tie default False."""
    H, I, E, dt = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_local_experts"], wdtype(cfg)

    def layer(p, i):
        out = llama_attention(p, cfg, dt)
        out.append((f"{p}block_sparse_moe.gate.weight", dt, [E, H]))
        for j in range(E):
            q = f"{p}block_sparse_moe.experts.{j}."
            out += [(f"{q}w1.weight", dt, [I, H]), (f"{q}w2.weight", dt, [H, I]), (f"{q}w3.weight", dt, [I, H])]
        return out + two_norms(p, H, dt)

    return llama_like(cfg, layer, tie_default=False)


def layout_qwen2(cfg):
    """§3.4 qwen2 (models/qwen2/modeling_qwen2.py): llama tree, q/k/v WITH bias, o without;
    hd = H // nH; tie default False (small checkpoints set it True in config.json)."""
    H, I, dt = cfg["hidden_size"], cfg["intermediate_size"], wdtype(cfg)
    return llama_like(
        cfg, lambda p, i: llama_attention(p, cfg, dt, qkv_bias=True) + gated_mlp(f"{p}mlp.", H, I, dt)
        + two_norms(p, H, dt), tie_default=False)


def moe_layer_qwen(cfg, i) -> bool:
    """§3.5 / §5 rule 5: sparse iff i not in mlp_only_layers and num_experts > 0 and
    (i + 1) % decoder_sparse_step == 0."""
    return (i not in cfg.get("mlp_only_layers", []) and cfg.get("num_experts", 0) > 0
            and (i + 1) % cfg.get("decoder_sparse_step", 1) == 0)


def layout_qwen2_moe(cfg):
    """§3.5 qwen2_moe (models/qwen2_moe/modeling_qwen2_moe.py), 4.44/on-disk names: attention as
    qwen2; MoE layers: mlp.gate [E, H], mlp.experts.{j}.{gate,up,down}_proj (mI),
    mlp.shared_expert.{gate,up,down}_proj (sI = shared_expert_intermediate_size),
    mlp.shared_expert_gate [1, H]; dense layers: mlp.{gate,up,down}_proj (intermediate_size)."""
    H, I, dt = cfg["hidden_size"], cfg["intermediate_size"], wdtype(cfg)
    E, mI, sI = cfg["num_experts"], cfg["moe_intermediate_size"], cfg["shared_expert_intermediate_size"]

    def layer(p, i):
        out = llama_attention(p, cfg, dt, qkv_bias=True)
        if moe_layer_qwen(cfg, i):
            out.append((f"{p}mlp.gate.weight", dt, [E, H]))
            for j in range(E):
                out += gated_mlp(f"{p}mlp.experts.{j}.", H, mI, dt)
            out += gated_mlp(f"{p}mlp.shared_expert.", H, sI, dt)
            out.append((f"{p}mlp.shared_expert_gate.weight", dt, [1, H]))
        else:
            out += gated_mlp(f"{p}mlp.", H, I, dt)
        return out + two_norms(p, H, dt)

    return llama_like(cfg, layer, tie_default=False)


def qk_norm(p, hd, dt):
    """§3.6 / §3.10: per-head QK RMSNorm, self_attn.q_norm / k_norm [head_dim]."""
    return [(f"{p}self_attn.q_norm.weight", dt, [hd]), (f"{p}self_attn.k_norm.weight", dt, [hd])]


def layout_qwen3(cfg):
    """§3.6 qwen3 (models/qwen3/modeling_qwen3.py): llama tree + q_norm/k_norm [hd]; head_dim is a
    config field; no q/k/v bias unless attention_bias; tie default False."""
    H, I, dt = cfg["hidden_size"], cfg["intermediate_size"], wdtype(cfg)
    ab = cfg.get("attention_bias", False)
    return llama_like(
        cfg, lambda p, i: llama_attention(p, cfg, dt, qkv_bias=ab, o_bias=ab) + qk_norm(p, head_dim_of(cfg), dt)
        + gated_mlp(f"{p}mlp.", H, I, dt) + two_norms(p, H, dt), tie_default=False)


def layout_qwen3_moe(cfg):
    """§3.7 qwen3_moe (models/qwen3_moe/modeling_qwen3_moe.py), 4.57/on-disk names: attention as
    qwen3; MoE: mlp.gate [E, H], mlp.experts.{j}.{gate,up,down}_proj (mI), NO shared expert;
    dense layers (mlp_only_layers / decoder_sparse_step) use intermediate_size; tie False."""
    H, I, dt = cfg["hidden_size"], cfg["intermediate_size"], wdtype(cfg)
    E, mI = cfg["num_experts"], cfg["moe_intermediate_size"]

    def layer(p, i):
        out = llama_attention(p, cfg, dt) + qk_norm(p, head_dim_of(cfg), dt)
        if moe_layer_qwen(cfg, i):
            out.append((f"{p}mlp.gate.weight", dt, [E, H]))
            for j in range(E):
                out += gated_mlp(f"{p}mlp.experts.{j}.", H, mI, dt)
        else:
            out += gated_mlp(f"{p}mlp.", H, I, dt)
        return out + two_norms(p, H, dt)

    return llama_like(cfg, layer, tie_default=False)


def layout_gemma(cfg):
    """§3.8 gemma (models/gemma/modeling_gemma.py): llama params, head_dim config field, no biases;
    tie default TRUE -> no lm_head.weight on disk."""
    H, I, dt = cfg["hidden_size"], cfg["intermediate_size"], wdtype(cfg)
    return llama_like(
        cfg, lambda p, i: llama_attention(p, cfg, dt) + gated_mlp(f"{p}mlp.", H, I, dt) + two_norms(p, H, dt),
        tie_default=True)


def gemma2_norms(p, H, dt):
    """§3.9: input_layernorm, post_attention_layernorm, pre_feedforward_layernorm,
    post_feedforward_layernorm, all [H]."""
    return two_norms(p, H, dt) + [(f"{p}pre_feedforward_layernorm.weight", dt, [H]),
                                  (f"{p}post_feedforward_layernorm.weight", dt, [H])]


def layout_gemma2(cfg):
    """§3.9 gemma2 (models/gemma2/modeling_gemma2.py): gemma + pre/post_feedforward_layernorm;
    tie default True."""
    H, I, dt = cfg["hidden_size"], cfg["intermediate_size"], wdtype(cfg)
    return llama_like(
        cfg, lambda p, i: llama_attention(p, cfg, dt) + gated_mlp(f"{p}mlp.", H, I, dt) + gemma2_norms(p, H, dt),
        tie_default=True)


def layout_gemma3_text(cfg):
    """§3.10 gemma3_text (models/gemma3/modeling_gemma3.py, Gemma3ForCausalLM): gemma2 layer +
    q_norm/k_norm [hd]; tie default True."""
    H, I, dt = cfg["hidden_size"], cfg["intermediate_size"], wdtype(cfg)
    return llama_like(
        cfg, lambda p, i: llama_attention(p, cfg, dt) + qk_norm(p, head_dim_of(cfg), dt)
        + gated_mlp(f"{p}mlp.", H, I, dt) + gemma2_norms(p, H, dt), tie_default=True)


def layout_phi3(cfg):
    """§3.12 phi3 (models/phi3/modeling_phi3.py): fused self_attn.qkv_proj [(nH+2nKV)*hd, H],
    o_proj [H, nH*hd], mlp.gate_up_proj [2I, H], mlp.down_proj [H, I]; hd = H // nH;
    tie default False."""
    H, I, dt = cfg["hidden_size"], cfg["intermediate_size"], wdtype(cfg)
    nH, nKV = cfg["num_attention_heads"], n_kv_heads(cfg)
    hd = H // nH

    def layer(p, i):
        return [
            (f"{p}self_attn.qkv_proj.weight", dt, [(nH + 2 * nKV) * hd, H]),
            (f"{p}self_attn.o_proj.weight", dt, [H, nH * hd]),
            (f"{p}mlp.gate_up_proj.weight", dt, [2 * I, H]),
            (f"{p}mlp.down_proj.weight", dt, [H, I]),
        ] + two_norms(p, H, dt)

    return llama_like(cfg, layer, tie_default=False)


def layout_gpt2(cfg):
    """§3.13 gpt2 (models/gpt2/modeling_gpt2.py), AS ON DISK in openai-community/gpt2: no
    `transformer.` prefix, no lm_head (tied to wte, default True), and the old causal-mask buffer
    h.{i}.attn.bias [1, 1, P, P] per block. Conv1D weights are [in, out]. n_inner None => 4H."""
    H, L, P, V, dt = cfg["n_embd"], cfg["n_layer"], cfg["n_positions"], cfg["vocab_size"], wdtype(cfg)
    F = cfg.get("n_inner") or 4 * H
    out = [("wte.weight", dt, [V, H]), ("wpe.weight", dt, [P, H])]
    for i in range(L):
        p = f"h.{i}."
        out += [
            (f"{p}ln_1.weight", dt, [H]), (f"{p}ln_1.bias", dt, [H]),
            (f"{p}attn.bias", dt, [1, 1, P, P]),  # checkpoint-only buffer (not a parameter)
            (f"{p}attn.c_attn.weight", dt, [H, 3 * H]), (f"{p}attn.c_attn.bias", dt, [3 * H]),
            (f"{p}attn.c_proj.weight", dt, [H, H]), (f"{p}attn.c_proj.bias", dt, [H]),
            (f"{p}ln_2.weight", dt, [H]), (f"{p}ln_2.bias", dt, [H]),
            (f"{p}mlp.c_fc.weight", dt, [H, F]), (f"{p}mlp.c_fc.bias", dt, [F]),
            (f"{p}mlp.c_proj.weight", dt, [F, H]), (f"{p}mlp.c_proj.bias", dt, [H]),
        ]
    out += [("ln_f.weight", dt, [H]), ("ln_f.bias", dt, [H])]
    assert tie_embeddings(cfg, True), "gpt2 fixture is tied (no lm_head on disk)"
    return out


def layout_gpt_neox(cfg):
    """§3.14 gpt_neox (models/gpt_neox/modeling_gpt_neox.py), on-disk names: prefix gpt_neox,
    embed_in, layers.{i}.{input,post_attention}_layernorm (+bias), attention.query_key_value
    [3H, H] + bias, attention.dense [H, H] + bias, mlp.dense_h_to_4h [I, H] + bias,
    mlp.dense_4h_to_h [H, I] + bias, final_layer_norm (+bias); head `embed_out.weight` [V, H]
    (untied, default False; renamed lm_head only at load in main)."""
    H, I, V, dt = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"], wdtype(cfg)
    out = [("gpt_neox.embed_in.weight", dt, [V, H])]
    for i in range(cfg["num_hidden_layers"]):
        p = f"gpt_neox.layers.{i}."
        out += [
            (f"{p}input_layernorm.weight", dt, [H]), (f"{p}input_layernorm.bias", dt, [H]),
            (f"{p}post_attention_layernorm.weight", dt, [H]), (f"{p}post_attention_layernorm.bias", dt, [H]),
            (f"{p}attention.query_key_value.weight", dt, [3 * H, H]),
            (f"{p}attention.query_key_value.bias", dt, [3 * H]),
            (f"{p}attention.dense.weight", dt, [H, H]), (f"{p}attention.dense.bias", dt, [H]),
            (f"{p}mlp.dense_h_to_4h.weight", dt, [I, H]), (f"{p}mlp.dense_h_to_4h.bias", dt, [I]),
            (f"{p}mlp.dense_4h_to_h.weight", dt, [H, I]), (f"{p}mlp.dense_4h_to_h.bias", dt, [H]),
        ]
    out += [("gpt_neox.final_layer_norm.weight", dt, [H]), ("gpt_neox.final_layer_norm.bias", dt, [H])]
    if not tie_embeddings(cfg, False):
        out.append(("embed_out.weight", dt, [V, H]))
    return out


def layout_falcon(cfg):
    """§3.16 falcon (models/falcon/modeling_falcon.py): prefix transformer, word_embeddings,
    h.{i}.self_attention.query_key_value: multi_query -> [(nH+2)*hd, H], new_decoder_architecture
    -> [(nH+2*num_kv_heads)*hd, H], else [3H, H]; self_attention.dense [H, H]; mlp 4H (or
    ffn_hidden_size); linear biases iff `bias`; norms: new arch ln_attn/ln_mlp, old arch
    input_layernorm (+ post_attention_layernorm unless parallel_attn); ln_f; lm_head tied
    (default True)."""
    H, nH, V, dt = cfg["hidden_size"], cfg["num_attention_heads"], cfg["vocab_size"], wdtype(cfg)
    hd = H // nH
    F = cfg.get("ffn_hidden_size") or 4 * H
    new_arch = cfg.get("new_decoder_architecture", False)
    if new_arch:
        qkv = (nH + 2 * cfg["num_kv_heads"]) * hd
    elif cfg.get("multi_query", True):
        qkv = (nH + 2) * hd
    else:
        qkv = 3 * H
    bias = cfg.get("bias", False)

    def lin(p, o, i):
        return [(f"{p}.weight", dt, [o, i])] + ([(f"{p}.bias", dt, [o])] if bias else [])

    def ln(p):
        return [(f"{p}.weight", dt, [H]), (f"{p}.bias", dt, [H])]

    out = [("transformer.word_embeddings.weight", dt, [V, H])]
    for i in range(cfg["num_hidden_layers"]):
        p = f"transformer.h.{i}."
        out += lin(f"{p}self_attention.query_key_value", qkv, H) + lin(f"{p}self_attention.dense", H, H)
        out += lin(f"{p}mlp.dense_h_to_4h", F, H) + lin(f"{p}mlp.dense_4h_to_h", H, F)
        if new_arch and cfg.get("num_ln_in_parallel_attn", 2) == 2:
            out += ln(f"{p}ln_attn") + ln(f"{p}ln_mlp")
        else:
            out += ln(f"{p}input_layernorm")
            if not cfg.get("parallel_attn", True):
                out += ln(f"{p}post_attention_layernorm")
    out += ln("transformer.ln_f")
    if not tie_embeddings(cfg, True):
        out.append(("lm_head.weight", dt, [V, H]))
    return out


def layout_olmo2(cfg):
    """§3.23 olmo2 (models/olmo2/modeling_olmo2.py): llama attention/MLP names, full-width QK norm
    q_norm [nH*hd], k_norm [nKV*hd]; post-norm: post_attention_layernorm and
    post_feedforward_layernorm, NO input_layernorm; tie False."""
    H, I, dt = cfg["hidden_size"], cfg["intermediate_size"], wdtype(cfg)
    nH, nKV, hd = cfg["num_attention_heads"], n_kv_heads(cfg), head_dim_of(cfg)

    def layer(p, i):
        return llama_attention(p, cfg, dt) + [
            (f"{p}self_attn.q_norm.weight", dt, [nH * hd]),
            (f"{p}self_attn.k_norm.weight", dt, [nKV * hd]),
        ] + gated_mlp(f"{p}mlp.", H, I, dt) + [
            (f"{p}post_attention_layernorm.weight", dt, [H]),
            (f"{p}post_feedforward_layernorm.weight", dt, [H]),
        ]

    return llama_like(cfg, layer, tie_default=False)


def layout_gpt_oss(cfg):
    """§3.22 gpt_oss (models/gpt_oss/modeling_gpt_oss.py): fused experts on disk and in every
    version. q/k/v/o all with bias, self_attn.sinks [nH]; mlp.router.{weight [E, H], bias [E]};
    mlp.experts.gate_up_proj [E, H, 2I] + gate_up_proj_bias [E, 2I]; mlp.experts.down_proj
    [E, I, H] + down_proj_bias [E, H]; E = num_local_experts, I = intermediate_size; tie False.
    (This is the unquantized/BF16 on-disk form; the released openai checkpoints store the experts
    as MXFP4 `*_blocks`/`*_scales`, §3.22 last paragraph - not modelled here.)"""
    H, I, E, dt = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_local_experts"], wdtype(cfg)

    def layer(p, i):
        return llama_attention(p, cfg, dt, qkv_bias=True, o_bias=True) + [
            (f"{p}self_attn.sinks", dt, [cfg["num_attention_heads"]]),
            (f"{p}mlp.router.weight", dt, [E, H]), (f"{p}mlp.router.bias", dt, [E]),
            (f"{p}mlp.experts.gate_up_proj", dt, [E, H, 2 * I]),
            (f"{p}mlp.experts.gate_up_proj_bias", dt, [E, 2 * I]),
            (f"{p}mlp.experts.down_proj", dt, [E, I, H]),
            (f"{p}mlp.experts.down_proj_bias", dt, [E, H]),
        ] + two_norms(p, H, dt)

    return llama_like(cfg, layer, tie_default=False)


def fp8_linear(name_prefix, out_f, in_f, cfg):
    """DeepSeek-V3 official FP8 checkpoint (§3.21 last paragraph; README_WEIGHTS.md 'FP8 Weight
    Documentation'): a quantized Linear stores `<p>.weight` F8_E4M3 [out, in] and a companion F32
    `<p>.weight_scale_inv` [ceil(out/bo), ceil(in/bi)] with weight_block_size [bo, bi] = [128,128]
    (blocks not aligned to 128 are padded for the scale)."""
    qc = cfg.get("quantization_config")
    if not qc:
        return [(f"{name_prefix}.weight", wdtype(cfg), [out_f, in_f])]
    bo, bi = qc.get("weight_block_size", [128, 128])
    return [(f"{name_prefix}.weight", "F8_E4M3", [out_f, in_f]),
            (f"{name_prefix}.weight_scale_inv", "F32", [-(-out_f // bo), -(-in_f // bi)])]


def deepseek_is_moe(cfg, i) -> bool:
    """§3.21 / §5 rule 5: MoE iff n_routed_experts and i >= first_k_dense_replace (and, in the
    remote-code config, i % moe_layer_freq == 0; DeepSeek-V3 has moe_layer_freq 1)."""
    return (bool(cfg.get("n_routed_experts")) and i >= cfg.get("first_k_dense_replace", 0)
            and i % cfg.get("moe_layer_freq", 1) == 0)


def deepseek_decoder_layer(p, i, cfg):
    """§3.21 DeepseekV3DecoderLayer, on-disk (4.57) names. Quantized (FP8 + scale): every attention
    and MLP/expert/shared-expert projection. Not quantized: norms, router gate, its bias."""
    H, dt = cfg["hidden_size"], wdtype(cfg)
    nH = cfg["num_attention_heads"]
    qk_hd = cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"]
    kvr, vhd = cfg["kv_lora_rank"], cfg["v_head_dim"]
    a = f"{p}self_attn."
    out = []
    if cfg.get("q_lora_rank") is None:
        out += fp8_linear(f"{a}q_proj", nH * qk_hd, H, cfg)
    else:
        qr = cfg["q_lora_rank"]
        out += fp8_linear(f"{a}q_a_proj", qr, H, cfg)
        out.append((f"{a}q_a_layernorm.weight", dt, [qr]))
        out += fp8_linear(f"{a}q_b_proj", nH * qk_hd, qr, cfg)
    out += fp8_linear(f"{a}kv_a_proj_with_mqa", kvr + cfg["qk_rope_head_dim"], H, cfg)
    out.append((f"{a}kv_a_layernorm.weight", dt, [kvr]))
    out += fp8_linear(f"{a}kv_b_proj", nH * (cfg["qk_nope_head_dim"] + vhd), kvr, cfg)
    out += fp8_linear(f"{a}o_proj", H, nH * vhd, cfg)

    def mlp(q, inter):
        return (fp8_linear(f"{q}gate_proj", inter, H, cfg) + fp8_linear(f"{q}up_proj", inter, H, cfg)
                + fp8_linear(f"{q}down_proj", H, inter, cfg))

    if deepseek_is_moe(cfg, i):
        E, mI = cfg["n_routed_experts"], cfg["moe_intermediate_size"]
        out.append((f"{p}mlp.gate.weight", dt, [E, H]))
        # persistent buffer, F32 in the official checkpoint (§3.21: _keep_in_fp32_modules_strict)
        out.append((f"{p}mlp.gate.e_score_correction_bias", "F32", [E]))
        for j in range(E):
            out += mlp(f"{p}mlp.experts.{j}.", mI)
        out += mlp(f"{p}mlp.shared_experts.", mI * cfg.get("n_shared_experts", 1))
    else:
        out += mlp(f"{p}mlp.", cfg["intermediate_size"])
    return out + two_norms(p, H, dt)


def layout_deepseek_v3(cfg):
    """§3.21 deepseek_v3 (models/deepseek_v3/modeling_deepseek_v3.py) as in the official FP8
    checkpoint: embed, layers 0..L-1, norm, lm_head (untied, BF16), then the MTP module(s) stored
    as model.layers.{L+k}.*: a full decoder layer plus embed_tokens, enorm, hnorm,
    eh_proj [H, 2H], shared_head.norm, shared_head.head [V, H] (README_WEIGHTS.md; all BF16, no
    scale: vLLM/sglang build eh_proj as a plain unquantized nn.Linear). The decoder part of the
    MTP layer comes first so that the MTP-specific tensors land in the last shard."""
    H, V, L, dt = cfg["hidden_size"], cfg["vocab_size"], cfg["num_hidden_layers"], wdtype(cfg)
    out = [("model.embed_tokens.weight", dt, [V, H])]
    for i in range(L):
        out += deepseek_decoder_layer(f"model.layers.{i}.", i, cfg)
    out += [("model.norm.weight", dt, [H]), ("lm_head.weight", dt, [V, H])]
    for k in range(cfg.get("num_nextn_predict_layers", 0)):
        p = f"model.layers.{L + k}."
        out += deepseek_decoder_layer(p, L + k, cfg)
        out += [
            (f"{p}embed_tokens.weight", dt, [V, H]),
            (f"{p}enorm.weight", dt, [H]),
            (f"{p}hnorm.weight", dt, [H]),
            (f"{p}eh_proj.weight", dt, [H, 2 * H]),
            (f"{p}shared_head.norm.weight", dt, [H]),
            (f"{p}shared_head.head.weight", dt, [V, H]),
        ]
    return out


def layout_toyformer(cfg):
    """A made-up architecture (model_type 'toyformer', not in transformers and not in the
    registry) for the unknown-model fallback: numbered layers under `model.blocks.{i}`."""
    H, F, V, dt = cfg["hidden_size"], cfg["ffn_size"], cfg["vocab_size"], wdtype(cfg)
    out = [("model.embed.weight", dt, [V, H])]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.blocks.{i}."
        out += [
            (f"{p}norm1.weight", dt, [H]),
            (f"{p}attn.qkv.weight", dt, [3 * H, H]),
            (f"{p}attn.out.weight", dt, [H, H]),
            (f"{p}norm2.weight", dt, [H]),
            (f"{p}ffn.up.weight", dt, [F, H]),
            (f"{p}ffn.down.weight", dt, [H, F]),
        ]
    out += [("model.final_norm.weight", dt, [H]), ("head.weight", dt, [V, H])]
    return out


LAYOUTS = {name[len("layout_"):]: fn for name, fn in globals().items() if name.startswith("layout_")}

# Tensors a checkpoint holds that the instantiated model does not count as parameters
# (checked in this order; the first match names the category).
def checkpoint_only_rules(cfg):
    mt = cfg["model_type"]
    rules = []
    if mt == "gpt2":
        # §3.13: old causal-mask buffer, in _keys_to_ignore_on_load_unexpected
        rules.append((re.compile(r"^h\.\d+\.attn\.bias$"), "gpt2 h.{i}.attn.bias causal-mask buffers"))
    if mt == "deepseek_v3":
        L = cfg["num_hidden_layers"]
        # §3.21: _keys_to_ignore_on_load_unexpected model\.layers\.61.* (the MTP layer)
        def is_mtp(n, L=L):
            m = re.match(r"^model\.layers\.(\d+)\.", n)
            return m is not None and int(m.group(1)) >= L
        rules.append((is_mtp, f"deepseek MTP layer(s) model.layers.{L}+ (all, incl. their scales)"))
        rules.append((re.compile(r"\.e_score_correction_bias$"), "deepseek mlp.gate.e_score_correction_bias buffers"))
        rules.append((re.compile(r"\.weight_scale_inv$"), "deepseek FP8 weight_scale_inv block scales"))
    return rules


def classify(rules, name):
    for pat, cat in rules:
        hit = pat(name) if callable(pat) else pat.search(name)
        if hit:
            return cat
    return None


# --------------------------------------------------------------------------------------------
# safetensors writing
# --------------------------------------------------------------------------------------------

def st_order(tensors):
    """Data order of the official writer: dtype descending (enum order), then name."""
    return sorted(tensors, key=lambda t: (-DTYPE_RANK[t[1]], t[0]))


def st_header(tensors):
    """(ordered tensors, header bytes incl. padding, data length)."""
    ordered = st_order(tensors)
    hdr = {"__metadata__": {"format": "pt"}}
    off = 0
    for name, dt, shape in ordered:
        n = nbytes(dt, shape)
        hdr[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    raw = json.dumps(hdr, separators=(",", ":"), ensure_ascii=False).encode()
    raw += b" " * ((8 - len(raw) % 8) % 8)
    return ordered, raw, off


def lcg_bytes(name, dt, count):
    """Deterministic pseudo-random data for one tensor (LCG seeded by crc32 of the name)."""
    x = zlib.crc32(name.encode()) or 1
    out = bytearray()
    for _ in range(count):
        x = (1664525 * x + 1013904223) & 0xFFFFFFFF
        u = (x >> 8) / float(1 << 24)  # [0, 1)
        if dt == "F8_E4M3":
            b = x >> 24
            if b & 0x7F == 0x7F:  # the e4m3fn NaN encodings
                b ^= 1
            out.append(b)
        elif name.endswith("weight_scale_inv"):
            out += struct.pack("<f", 1e-3 + u * 1e-2)
        else:
            v = (u - 0.5) * 0.2
            if dt == "F32":
                out += struct.pack("<f", v)
            elif dt == "F16":
                out += struct.pack("<e", v)
            elif dt == "BF16":
                out += struct.pack("<f", v)[2:4]  # upper half of the f32 (truncation)
            else:
                raise ValueError(dt)
    return bytes(out)


def write_safetensors(path: Path, tensors, sparse: bool):
    """Writes one file. sparse: header only, then truncate() so the data region is a hole."""
    ordered, raw, data_len = st_header(tensors)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        if sparse:
            f.truncate(8 + len(raw) + data_len)
        else:
            for name, dt, shape in ordered:
                f.write(lcg_bytes(name, dt, numel(shape)))
    return 8 + len(raw) + data_len


def split_shards(tensors, n_shards):
    """Contiguous split in layer order into n_shards of roughly equal bytes: a tensor goes to the
    shard its byte midpoint falls in."""
    total = sum(nbytes(dt, s) for _, dt, s in tensors)
    shards = [[] for _ in range(n_shards)]
    cum = 0
    for t in tensors:
        b = nbytes(t[1], t[2])
        k = min(n_shards - 1, int((cum + b / 2) * n_shards // total))
        shards[k].append(t)
        cum += b
    assert all(shards), "empty shard"
    return shards


def shard_name(k, n, total_digits):
    return f"model-{k + 1:05d}-of-{n:0{total_digits}d}.safetensors"


def write_checkpoint(out: Path, tensors, n_shards=1, total_digits=5, sparse=False):
    """model.safetensors, or n_shards shards + model.safetensors.index.json (transformers format:
    json.dumps(index, indent=2, sort_keys=True) + newline). Returns {file: size}."""
    out.mkdir(parents=True, exist_ok=True)
    sizes = {}
    if n_shards == 1:
        sizes["model.safetensors"] = write_safetensors(out / "model.safetensors", tensors, sparse)
        return sizes
    weight_map = {}
    for k, shard in enumerate(split_shards(tensors, n_shards)):
        fn = shard_name(k, n_shards, total_digits)
        sizes[fn] = write_safetensors(out / fn, shard, sparse)
        for name, _, _ in shard:
            weight_map[name] = fn
    index = {"metadata": {"total_size": sum(nbytes(dt, s) for _, dt, s in tensors)},
             "weight_map": weight_map}
    text = json.dumps(index, indent=2, sort_keys=True) + "\n"
    (out / "model.safetensors.index.json").write_text(text)
    sizes["model.safetensors.index.json"] = len(text.encode())
    return sizes


def write_config(out: Path, cfg):
    """transformers writes config.json as json.dumps(indent=2, sort_keys=True) + newline."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")


def expected_facts(fixture, cfg, tensors, files):
    """Facts computed here, independently of the C++ registry. Convention (README.md):
    num_params = numel of every tensor the instantiated model owns (a tied embedding once; the
    checkpoint of a tied model holds it once) = checkpoint numel - checkpoint_only_numel."""
    rules = checkpoint_only_rules(cfg)
    dtypes, breakdown = {}, {}
    total_numel = total_bytes = 0
    for name, dt, shape in tensors:
        n = numel(shape)
        dtypes[dt] = dtypes.get(dt, 0) + n
        total_numel += n
        total_bytes += nbytes(dt, shape)
        cat = classify(rules, name)
        if cat:
            breakdown[cat] = breakdown.get(cat, 0) + n
    names = [t[0] for t in tensors]
    assert len(set(names)) == len(names), "duplicate tensor names"
    only = sum(breakdown.values())
    return {
        "fixture": fixture,
        "model_type": cfg["model_type"],
        "num_params": total_numel - only,
        "checkpoint_only_numel": only,
        "checkpoint_only_breakdown": dict(sorted(breakdown.items())),
        "num_tensors": len(tensors),
        "checkpoint_numel": total_numel,
        "total_size": total_bytes,
        "dtypes": dict(sorted(dtypes.items())),
        "files": sorted(f for f in files if f.endswith(".safetensors")),
    }


def write_expected(out: Path, facts):
    (out / "EXPECTED.json").write_text(json.dumps(facts, indent=2) + "\n")


# --------------------------------------------------------------------------------------------
# Tiny fixtures: realistic config.json files with odd dims (V=37 etc.)
# --------------------------------------------------------------------------------------------

V = 37  # prime vocab everywhere, so FSDP flat-parameter padding matters


def base_llama_cfg(model_type, arch, **kw):
    cfg = {
        "architectures": [arch], "model_type": model_type, "torch_dtype": "bfloat16",
        "transformers_version": "4.57.6", "vocab_size": V, "hidden_act": "silu",
        "max_position_embeddings": 64, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
        "initializer_range": 0.02, "use_cache": True, "bos_token_id": 1, "eos_token_id": 2,
        "attention_dropout": 0.0,
    }
    cfg.update(kw)
    return cfg


def tiny_configs():
    """fixture name -> (config.json dict, number of shards)."""
    c = {}
    c["llama"] = (base_llama_cfg(
        "llama", "LlamaForCausalLM", hidden_size=20, intermediate_size=52, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, attention_bias=False, mlp_bias=False,
        tie_word_embeddings=False, pretraining_tp=1, rope_scaling=None), 2)
    c["mistral"] = (base_llama_cfg(
        "mistral", "MistralForCausalLM", hidden_size=20, intermediate_size=44, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=7, sliding_window=32,
        tie_word_embeddings=False), 1)
    c["mixtral"] = (base_llama_cfg(
        "mixtral", "MixtralForCausalLM", hidden_size=20, intermediate_size=28, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, num_local_experts=3, num_experts_per_tok=2,
        router_aux_loss_coef=0.02, output_router_logits=False, sliding_window=None,
        tie_word_embeddings=False), 1)
    c["qwen2"] = (base_llama_cfg(
        "qwen2", "Qwen2ForCausalLM", hidden_size=20, intermediate_size=44, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True,
        use_sliding_window=False, sliding_window=None, max_window_layers=2, rms_norm_eps=1e-06), 1)
    c["qwen2_moe"] = (base_llama_cfg(
        "qwen2_moe", "Qwen2MoeForCausalLM", hidden_size=20, intermediate_size=44,
        num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, num_experts=4,
        num_experts_per_tok=2, moe_intermediate_size=12, shared_expert_intermediate_size=28,
        decoder_sparse_step=1, mlp_only_layers=[1], norm_topk_prob=False,
        router_aux_loss_coef=0.001, output_router_logits=False, tie_word_embeddings=False,
        use_sliding_window=False, sliding_window=None, max_window_layers=3, rms_norm_eps=1e-06), 1)
    c["qwen3"] = (base_llama_cfg(
        "qwen3", "Qwen3ForCausalLM", hidden_size=20, intermediate_size=44, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=6, attention_bias=False,
        tie_word_embeddings=False, use_sliding_window=False, sliding_window=None,
        max_window_layers=2, rms_norm_eps=1e-06), 1)
    c["qwen3_moe"] = (base_llama_cfg(
        "qwen3_moe", "Qwen3MoeForCausalLM", hidden_size=20, intermediate_size=44,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=6,
        num_experts=4, num_experts_per_tok=2, moe_intermediate_size=10, decoder_sparse_step=1,
        mlp_only_layers=[], norm_topk_prob=True, router_aux_loss_coef=0.001,
        output_router_logits=False, attention_bias=False, tie_word_embeddings=False,
        use_sliding_window=False, sliding_window=None, max_window_layers=2, rms_norm_eps=1e-06), 1)
    # gemma: no tie_word_embeddings key -> class default True (§1)
    c["gemma"] = (base_llama_cfg(
        "gemma", "GemmaForCausalLM", hidden_size=20, intermediate_size=44, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, head_dim=12, hidden_act="gelu",
        hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-06, pad_token_id=0), 1)
    c["gemma2"] = (base_llama_cfg(
        "gemma2", "Gemma2ForCausalLM", hidden_size=20, intermediate_size=44, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=6, hidden_act="gelu_pytorch_tanh",
        hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=6, sliding_window=16,
        final_logit_softcapping=30.0, attn_logit_softcapping=50.0, rms_norm_eps=1e-06,
        pad_token_id=0, tie_word_embeddings=True), 1)
    # gemma3_text: no tie_word_embeddings key -> class default True (§1)
    c["gemma3_text"] = (base_llama_cfg(
        "gemma3_text", "Gemma3ForCausalLM", hidden_size=20, intermediate_size=44,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1, head_dim=8,
        hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=8, sliding_window=16,
        sliding_window_pattern=2, layer_types=["sliding_attention", "full_attention"],
        rope_local_base_freq=10000.0, rms_norm_eps=1e-06, pad_token_id=0), 1)
    c["phi3"] = (base_llama_cfg(
        "phi3", "Phi3ForCausalLM", hidden_size=20, intermediate_size=28, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, original_max_position_embeddings=64,
        resid_pdrop=0.0, embd_pdrop=0.0, tie_word_embeddings=False, pad_token_id=V - 1), 1)
    c["gpt2"] = ({
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "torch_dtype": "float32",
        "activation_function": "gelu_new", "attn_pdrop": 0.1, "embd_pdrop": 0.1, "resid_pdrop": 0.1,
        "bos_token_id": V - 1, "eos_token_id": V - 1, "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05, "n_ctx": 16, "n_embd": 12, "n_head": 3, "n_layer": 2,
        "n_positions": 16, "n_inner": None, "vocab_size": V, "transformers_version": "4.57.6",
        "summary_type": "cls_index", "summary_use_proj": True, "use_cache": True,
    }, 1)
    c["gpt_neox"] = ({
        "architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "torch_dtype": "float16",
        "hidden_size": 20, "intermediate_size": 52, "num_hidden_layers": 2,
        "num_attention_heads": 4, "rotary_pct": 0.25, "rotary_emb_base": 10000,
        "max_position_embeddings": 64, "layer_norm_eps": 1e-05, "use_parallel_residual": True,
        "hidden_act": "gelu", "vocab_size": V, "tie_word_embeddings": False, "bos_token_id": 0,
        "eos_token_id": 0, "initializer_range": 0.02, "use_cache": True,
        "transformers_version": "4.57.6",
    }, 1)
    c["falcon"] = ({
        "architectures": ["FalconForCausalLM"], "model_type": "falcon", "torch_dtype": "bfloat16",
        "hidden_size": 20, "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": V,
        "multi_query": True, "new_decoder_architecture": False, "parallel_attn": True,
        "bias": False, "alibi": False, "layer_norm_epsilon": 1e-05, "hidden_dropout": 0.0,
        "attention_dropout": 0.0, "bos_token_id": 11, "eos_token_id": 11,
        "initializer_range": 0.02, "use_cache": True, "transformers_version": "4.57.6",
    }, 1)
    c["olmo2"] = (base_llama_cfg(
        "olmo2", "Olmo2ForCausalLM", torch_dtype="float32", hidden_size=20, intermediate_size=44,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, attention_bias=False,
        tie_word_embeddings=False, rms_norm_eps=1e-06, pad_token_id=V - 1), 1)
    c["gpt_oss"] = (base_llama_cfg(
        "gpt_oss", "GptOssForCausalLM", hidden_size=20, intermediate_size=12, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=6, num_local_experts=3,
        num_experts_per_tok=2, experts_per_token=2, sliding_window=16, swiglu_limit=7.0,
        layer_types=["sliding_attention", "full_attention"], attention_bias=True,
        router_aux_loss_coef=0.9, output_router_logits=False, tie_word_embeddings=False,
        rope_theta=150000.0), 1)
    c["deepseek_v3"] = (base_llama_cfg(
        "deepseek_v3", "DeepseekV3ForCausalLM", hidden_size=20, intermediate_size=136,
        moe_intermediate_size=20, num_hidden_layers=3, first_k_dense_replace=1, moe_layer_freq=1,
        n_routed_experts=4, n_shared_experts=1, num_experts_per_tok=2, n_group=2, topk_group=1,
        num_attention_heads=4, num_key_value_heads=4, q_lora_rank=12, kv_lora_rank=16,
        qk_nope_head_dim=24, qk_rope_head_dim=12, v_head_dim=20, num_nextn_predict_layers=1,
        norm_topk_prob=True, routed_scaling_factor=2.5, scoring_func="sigmoid",
        topk_method="noaux_tc", attention_bias=False, tie_word_embeddings=False,
        rms_norm_eps=1e-06, quantization_config={
            "activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
            "weight_block_size": [128, 128]}), 1)
    c["toyformer"] = ({
        "architectures": ["ToyformerForCausalLM"], "model_type": "toyformer",
        "torch_dtype": "float32", "hidden_size": 12, "ffn_size": 30, "num_heads": 3,
        "num_hidden_layers": 3, "vocab_size": V, "transformers_version": "4.57.6",
    }, 1)
    return c


def cmd_tiny(out_root: Path):
    for fixture, (cfg, shards) in tiny_configs().items():
        out = out_root / fixture
        if out.exists():
            for p in out.iterdir():  # stale shards from an earlier layout
                if p.suffix in (".safetensors", ".json"):
                    p.unlink()
        tensors = LAYOUTS[cfg["model_type"]](cfg)
        write_config(out, cfg)
        files = write_checkpoint(out, tensors, n_shards=shards)
        facts = expected_facts(fixture, cfg, tensors, files)
        write_expected(out, facts)
        print(f"{fixture:12s} {facts['num_tensors']:4d} tensors  num_params {facts['num_params']:>8,}  "
              f"checkpoint_only {facts['checkpoint_only_numel']:>6,}  files {len(facts['files'])}  "
              f"{sum(files.values()):,} B")


# --------------------------------------------------------------------------------------------
# Sparse full-size checkpoints
# --------------------------------------------------------------------------------------------

def llama_405b_config():
    """Llama-3.1-405B (research doc §4: hidden 16384, intermediate 53248, 126 layers, 128 heads,
    8 KV heads, vocab 128256, rope_theta 500000, untied); other keys as Llama-3.1 configs."""
    return {
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu",
        "hidden_size": 16384, "initializer_range": 0.02, "intermediate_size": 53248,
        "max_position_embeddings": 131072, "mlp_bias": False, "model_type": "llama",
        "num_attention_heads": 128, "num_hidden_layers": 126, "num_key_value_heads": 8,
        "pretraining_tp": 1, "rms_norm_eps": 1e-05,
        "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "transformers_version": "4.42.3", "use_cache": True, "vocab_size": 128256,
    }


STAMP = ".gen_fixtures.stamp"


def script_hash():
    h = hashlib.sha256(SCRIPT_PATH.read_bytes())
    if DEEPSEEK_V3_CONFIG.exists():
        h.update(DEEPSEEK_V3_CONFIG.read_bytes())
    return h.hexdigest()


def up_to_date(out: Path, digest: str) -> bool:
    """A complete set: stamp with this script's hash, and every listed file at its size."""
    try:
        stamp = json.loads((out / STAMP).read_text())
    except (OSError, ValueError):
        return False
    if stamp.get("script_sha256") != digest:
        return False
    return all((out / f).is_file() and (out / f).stat().st_size == s for f, s in stamp["files"].items())


def gen_sparse(out: Path, name, cfg, cfg_text, n_shards, total_digits, digest):
    t0 = time.monotonic()
    if up_to_date(out, digest):
        facts = json.loads((out / "EXPECTED.json").read_text())
        print(f"{name}: up to date (stamp matches), {facts['num_tensors']:,} tensors, "
              f"{facts['num_params']:,} params, skipped in {time.monotonic() - t0:.2f}s")
        return
    if out.exists():
        for p in out.iterdir():
            if p.is_file():
                p.unlink()
    out.mkdir(parents=True, exist_ok=True)
    tensors = LAYOUTS[cfg["model_type"]](cfg)
    (out / "config.json").write_text(cfg_text)
    files = write_checkpoint(out, tensors, n_shards=n_shards, total_digits=total_digits, sparse=True)
    facts = expected_facts(name, cfg, tensors, files)
    write_expected(out, facts)
    files["config.json"] = len(cfg_text.encode())
    files["EXPECTED.json"] = (out / "EXPECTED.json").stat().st_size
    (out / STAMP).write_text(json.dumps({"script_sha256": digest, "files": files}, indent=1) + "\n")
    disk = sum((out / f).stat().st_blocks * 512 for f in files)
    print(f"{name}: {n_shards} shards, {facts['num_tensors']:,} tensors, {facts['num_params']:,} params "
          f"(+{facts['checkpoint_only_numel']:,} checkpoint-only), apparent {facts['total_size'] / 1e9:,.1f} GB, "
          f"on disk {disk / 1e6:.1f} MB, {time.monotonic() - t0:.2f}s")


def gen_sparse_lora(out: Path, name, cfg, r, digest):
    """A LoRA adapter as peft 0.20's save_pretrained writes it for all-linear on this model:
    adapter_config.json with the resolved full module names, adapter_model.safetensors with lora_A
    [r, in] and lora_B [out, r] of every decoder Linear in float32, keys under base_model.model. and
    without the adapter name; data-sparse like the checkpoints (the benchmark of `plan --adapter`)."""
    t0 = time.monotonic()
    if up_to_date(out, digest):
        print(f"{name}: up to date (stamp matches), skipped in {time.monotonic() - t0:.2f}s")
        return
    out.mkdir(parents=True, exist_ok=True)
    targets, tensors = [], []
    for tname, _, shape in LAYOUTS[cfg["model_type"]](cfg):
        if not (tname.startswith("model.layers.") and tname.endswith("_proj.weight")):
            continue
        module = tname[: -len(".weight")]
        targets.append(module)
        tensors.append((f"base_model.model.{module}.lora_A.weight", "F32", [r, shape[1]]))
        tensors.append((f"base_model.model.{module}.lora_B.weight", "F32", [shape[0], r]))
    config = {"base_model_name_or_path": None, "bias": "none", "fan_in_fan_out": False,
              "lora_alpha": 2 * r, "lora_dropout": 0.0, "modules_to_save": None, "peft_type": "LORA",
              "r": r, "target_modules": sorted(targets), "task_type": "CAUSAL_LM", "use_dora": False,
              "use_rslora": False}
    text = json.dumps(config, indent=2, sort_keys=True) + "\n"
    (out / "adapter_config.json").write_text(text)
    size = write_safetensors(out / "adapter_model.safetensors", tensors, sparse=True)
    files = {"adapter_config.json": len(text.encode()), "adapter_model.safetensors": size}
    (out / STAMP).write_text(json.dumps({"script_sha256": digest, "files": files}, indent=1) + "\n")
    print(f"{name}: {len(targets)} LoRA layers, {len(tensors)} tensors, {time.monotonic() - t0:.2f}s")


def cmd_sparse(out_root: Path):
    digest = script_hash()
    cfg = llama_405b_config()
    gen_sparse(out_root / "llama-3.1-405b", "llama-3.1-405b", cfg,
               json.dumps(cfg, indent=2, sort_keys=True) + "\n", 191, 5, digest)
    gen_sparse_lora(out_root / "llama-3.1-405b-lora-r64", "llama-3.1-405b-lora-r64", cfg, 64, digest)
    text = DEEPSEEK_V3_CONFIG.read_text()  # copied verbatim
    gen_sparse(out_root / "deepseek-v3", "deepseek-v3", json.loads(text), text, 163, 6, digest)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=["tiny", "sparse"])
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    if args.command == "tiny":
        cmd_tiny(args.out)
    else:
        cmd_sparse(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
