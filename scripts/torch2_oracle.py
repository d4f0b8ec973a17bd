#!/usr/bin/python3
"""torch 2.x oracle: what REAL torch 2.x FSDP1 and FSDP2 (through real accelerate) build, step and raise.

Dev-time tool; CI never needs torch. It runs inside the Debian unstable chroot made by
scripts/oracle2_setup.sh (Debian's python3-torch 2.x, python3-transformers 5.x, python3-accelerate
1.x) and writes what shardcheck's simulator must reproduce to fixtures/oracle2/:

  scripts/oracle2_setup.sh                                   # once per machine (about 10 min)
  scripts/oracle2_run.sh python3 scripts/torch2_oracle.py    # models + every case
  scripts/oracle2_run.sh python3 scripts/torch2_oracle.py --only 'llama*' --list

What it does
  * Models (fixtures/oracle2/models/<name>/): each architecture built by transformers itself from a
    tiny config with odd sizes (`AutoModelForCausalLM.from_config`), every parameter filled with
    distinct values, saved with `save_pretrained` (config.json + model.safetensors, float32).
  * Cases: each loads its model with `from_pretrained(dir, dtype=float32)` in W fresh processes
    (forked from this one after the imports; gloo over a FileStore, CPU) and prepares it as the
    job would:
      - FSDP1: accelerate's FullyShardedDataParallelPlugin(fsdp_version=1).set_auto_wrap_policy
        and the FSDP(...) keyword arguments of Accelerator.prepare_model (accelerate 1.14
        accelerator.py), with device_id=cpu;
      - FSDP2: accelerate's own accelerate.utils.fsdp_utils.fsdp2_prepare_model with a stand-in
        for the Accelerator carrying a real plugin and a real
        ParallelismConfig(...).build_device_mesh("cpu") (the Accelerator never picks FSDP on CPU).
    then lazy init, and for float32 cases one forward (input_ids 1 x 5, labels = input_ids; a
    vision-language model also gets one image and its placeholder tokens),
    backward and torch.optim.AdamW step. Recorded per rank and merged: the units (FSDP1) or
    fully_shard groups (FSDP2) with their parameters, numels, padding and per-rank shards; the
    bytes of the parameters', gradients' and optimizer states' storages after the step; or the
    exception (type, message, stage: load, wrap, lazy_init, step).
  * Every case runs in fresh processes, so one case's failure (or a hang: killed after --timeout
    seconds and recorded as such) cannot disturb another.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import multiprocessing as mp
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
import types
import warnings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "fixtures", "oracle2")

warnings.filterwarnings("ignore")
os.environ.setdefault("USE_LIBUV", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import transformers  # noqa: E402
import accelerate  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText  # noqa: E402

transformers.logging.set_verbosity_error()

# --------------------------------------------------------------------------------------------
# Models: tiny, odd sizes (so that padding shows), built and saved by transformers itself.
# --------------------------------------------------------------------------------------------

# Shared tiny dimensions: vocab 37 and hidden 20 give rows that divide by none of W = 3..8.
# Two heads of 10 (rotary embeddings need an even head_dim), one key/value head.
BASE = dict(vocab_size=37, hidden_size=20, intermediate_size=52, num_hidden_layers=2,
            num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64)

# A tiny SigLIP vision tower (image 16, patch 4: 16 patches).
SIGLIP = dict(model_type="siglip_vision_model", hidden_size=12, intermediate_size=26, num_hidden_layers=2,
              num_attention_heads=2, image_size=16, patch_size=4)

MODELS = {
    # name: (model_type, config kwargs)
    "llama": ("llama", dict(BASE, tie_word_embeddings=False)),
    "llama_tied": ("llama", dict(BASE, tie_word_embeddings=True)),
    "mistral": ("mistral", dict(BASE, tie_word_embeddings=False)),
    "qwen2": ("qwen2", dict(BASE, tie_word_embeddings=False)),
    "qwen2_tied": ("qwen2", dict(BASE, tie_word_embeddings=True)),
    "qwen3": ("qwen3", dict(BASE, head_dim=6, tie_word_embeddings=False)),
    "olmo2": ("olmo2", dict(BASE, tie_word_embeddings=False)),
    "granite": ("granite", dict(BASE, tie_word_embeddings=False)),
    "gemma": ("gemma", dict(BASE, head_dim=6)),
    "gemma2": ("gemma2", dict(BASE, head_dim=6)),
    "gemma3_text": ("gemma3_text", dict(BASE, head_dim=6, sliding_window=8)),
    "phi3": ("phi3", dict(BASE, pad_token_id=0, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)),
    "phi": ("phi", dict(BASE, partial_rotary_factor=0.4, tie_word_embeddings=False)),
    "starcoder2": ("starcoder2", dict(BASE, tie_word_embeddings=False)),
    "gpt_neox": ("gpt_neox", dict(BASE, tie_word_embeddings=False)),
    "falcon": ("falcon", dict(vocab_size=37, hidden_size=20, num_hidden_layers=2, num_attention_heads=2,
                              num_kv_heads=1, new_decoder_architecture=True, tie_word_embeddings=False)),
    "gpt2": ("gpt2", dict(vocab_size=37, n_embd=20, n_layer=2, n_head=4, n_positions=64)),
    "mixtral": ("mixtral", dict(BASE, intermediate_size=14, num_local_experts=3, num_experts_per_tok=2,
                                tie_word_embeddings=False)),
    "qwen2_moe": ("qwen2_moe", dict(BASE, moe_intermediate_size=14, shared_expert_intermediate_size=18,
                                    num_experts=3, num_experts_per_tok=2, tie_word_embeddings=False)),
    "qwen3_moe": ("qwen3_moe", dict(BASE, head_dim=6, moe_intermediate_size=14, num_experts=3,
                                    num_experts_per_tok=2, tie_word_embeddings=False)),
    "deepseek_v3": ("deepseek_v3", dict(BASE, moe_intermediate_size=14, n_routed_experts=3, n_shared_experts=1,
                                        num_experts_per_tok=2, n_group=1, topk_group=1, first_k_dense_replace=1,
                                        q_lora_rank=12, kv_lora_rank=10, qk_rope_head_dim=4, qk_nope_head_dim=6,
                                        v_head_dim=6, tie_word_embeddings=False)),
    "gpt_oss": ("gpt_oss", dict(BASE, head_dim=6, num_local_experts=3, num_experts_per_tok=2,
                                layer_types=["sliding_attention", "full_attention"], sliding_window=8,
                                tie_word_embeddings=False)),
    "helium": ("helium", dict(BASE, head_dim=10, tie_word_embeddings=False)),
    "smollm3": ("smollm3", dict(BASE, pad_token_id=0, bos_token_id=1, eos_token_id=2, tie_word_embeddings=True)),
    "arcee": ("arcee", dict(BASE, head_dim=10, tie_word_embeddings=False)),
    "olmo": ("olmo", dict(BASE, tie_word_embeddings=False)),
    # Registry types added from transformers 5.12.1 records (rules/models/<type>.yaml).
    "olmoe": ("olmoe", dict(BASE, intermediate_size=14, num_experts=3, num_experts_per_tok=2, tie_word_embeddings=False)),
    "granitemoe": ("granitemoe", dict(BASE, intermediate_size=14, num_local_experts=3, num_experts_per_tok=2,
                                      tie_word_embeddings=False)),
    "phimoe": ("phimoe", dict(BASE, intermediate_size=14, num_local_experts=3, num_experts_per_tok=2,
                              tie_word_embeddings=False)),
    "cohere2": ("cohere2", dict(BASE, sliding_window=8)),
    "glm": ("glm", dict(BASE, pad_token_id=0, tie_word_embeddings=False)),
    "glm4": ("glm4", dict(BASE, pad_token_id=0, tie_word_embeddings=False)),
    "deepseek_v2": ("deepseek_v2", dict(BASE, moe_intermediate_size=14, n_routed_experts=3, n_shared_experts=1,
                                        num_experts_per_tok=2, n_group=1, topk_group=1, first_k_dense_replace=1,
                                        q_lora_rank=12, kv_lora_rank=10, qk_rope_head_dim=4, qk_nope_head_dim=6,
                                        v_head_dim=6, tie_word_embeddings=False)),
    "seed_oss": ("seed_oss", dict(BASE, head_dim=10, tie_word_embeddings=False)),
    "apertus": ("apertus", dict(BASE, head_dim=10, tie_word_embeddings=False)),
    "stablelm": ("stablelm", dict(BASE, tie_word_embeddings=False)),
    # A vision-language composite: LLaVA with a tiny CLIP vision tower (image 16, patch 4: 17 positions)
    # and a tiny Llama; its _no_split_modules is CLIP's (with CLIPTextEmbeddings) plus Llama's.
    # More vision-language composites (tiny configs that run a CPU step with an image; vlm_inputs()).
    "llava_next": ("llava_next", dict(vision_config=dict(model_type="clip_vision_model", hidden_size=16,
                                                         intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                                                         image_size=28, patch_size=14, projection_dim=16),
                                      text_config=dict(BASE, model_type="llama", intermediate_size=40,
                                                       tie_word_embeddings=False),
                                      image_token_index=36, image_grid_pinpoints=[[28, 56], [56, 28], [56, 56]],
                                      vision_feature_layer=-2, tie_word_embeddings=False)),
    "llava_onevision": ("llava_onevision", dict(vision_config=dict(SIGLIP, vision_use_head=False),
                                                text_config=dict(BASE, model_type="qwen2", tie_word_embeddings=False),
                                                image_token_index=36, video_token_index=35,
                                                image_grid_pinpoints=[[16, 16]], tie_word_embeddings=False)),
    "paligemma": ("paligemma", dict(vision_config=dict(SIGLIP, vision_use_head=False),
                                    text_config=dict(BASE, model_type="gemma", head_dim=10), vocab_size=37,
                                    projection_dim=20, hidden_size=20, image_token_index=36)),
    "gemma3": ("gemma3", dict(vision_config=dict(SIGLIP),
                              text_config=dict(BASE, model_type="gemma3_text", head_dim=10, sliding_window=8),
                              mm_tokens_per_image=4, image_token_index=36, boi_token_index=34, eoi_token_index=35)),
    "qwen2_vl": ("qwen2_vl", dict(vision_config=dict(depth=2, embed_dim=16, hidden_size=20, num_heads=2, mlp_ratio=2,
                                                     in_channels=3, patch_size=14, spatial_merge_size=2,
                                                     temporal_patch_size=2),
                                  text_config=dict(BASE, intermediate_size=40, tie_word_embeddings=False,
                                                   rope_parameters=dict(rope_type="default", rope_theta=1e6,
                                                                        mrope_section=[1, 2, 2])),
                                  image_token_id=36, video_token_id=35, vision_start_token_id=34,
                                  vision_end_token_id=33, tie_word_embeddings=False)),
    "qwen2_5_vl": ("qwen2_5_vl", dict(vision_config=dict(depth=2, hidden_size=16, intermediate_size=32, num_heads=2,
                                                         out_hidden_size=20, in_channels=3, patch_size=14,
                                                         spatial_merge_size=2, temporal_patch_size=2, window_size=56,
                                                         fullatt_block_indexes=[1], tokens_per_second=2),
                                      text_config=dict(BASE, intermediate_size=40, tie_word_embeddings=False,
                                                       rope_parameters=dict(rope_type="default", rope_theta=1e6,
                                                                            mrope_section=[1, 2, 2])),
                                      image_token_id=36, video_token_id=35, vision_start_token_id=34,
                                      vision_end_token_id=33, tie_word_embeddings=False)),
    # Idefics3 / SmolVLM: pixel-shuffle connectors (scale 2 and 4: 4 image tokens per image).
    "idefics3": ("idefics3", dict(vision_config=dict(model_type="idefics3_vision", hidden_size=12, intermediate_size=26,
                                                     num_hidden_layers=2, num_attention_heads=2, image_size=16,
                                                     patch_size=4),
                                  text_config=dict(BASE, model_type="llama", pad_token_id=0),
                                  scale_factor=2, image_token_id=36, pad_token_id=0, tie_word_embeddings=False)),
    "smolvlm": ("smolvlm", dict(vision_config=dict(model_type="smolvlm_vision", hidden_size=16, intermediate_size=24,
                                                   num_hidden_layers=2, num_attention_heads=2, image_size=32, patch_size=4,
                                                   hidden_act="gelu"),
                                text_config=dict(BASE, model_type="llama", pad_token_id=0),
                                scale_factor=4, image_token_id=36, pad_token_id=0, tie_word_embeddings=False)),
    # Llama 3.2 Vision: a cross-attention layer at index 1 of 3, a tiny tiled vision model.
    "mllama": ("mllama", dict(image_token_index=37,
                              text_config=dict(vocab_size=37, hidden_size=24, intermediate_size=40, num_hidden_layers=3,
                                               num_attention_heads=4, num_key_value_heads=2, cross_attention_layers=[1],
                                               max_position_embeddings=64, bos_token_id=1, eos_token_id=2,
                                               pad_token_id=0),
                              vision_config=dict(hidden_size=20, intermediate_size=36, num_hidden_layers=2,
                                                 num_global_layers=1, attention_heads=2, image_size=28, patch_size=14,
                                                 max_num_tiles=2, supported_aspect_ratios=[[1, 1], [1, 2], [2, 1]],
                                                 intermediate_layers_indices=[0], vision_output_dim=40))),
    "llava": ("llava", dict(vision_config=dict(model_type="clip_vision_model", hidden_size=12, intermediate_size=26,
                                               num_hidden_layers=2, num_attention_heads=2, image_size=16,
                                               patch_size=4, num_channels=3),
                            text_config=dict(BASE, model_type="llama", tie_word_embeddings=False),
                            image_token_index=36, vision_feature_layer=-2, tie_word_embeddings=False)),
    # Regression models: config.json fields that transformers reads and the registry once ignored.
    "qwen2_moe_hd": ("qwen2_moe", dict(BASE, head_dim=6, moe_intermediate_size=14, shared_expert_intermediate_size=18,
                                       num_experts=3, num_experts_per_tok=2, tie_word_embeddings=False)),
    "phi_hd": ("phi", dict(BASE, head_dim=6, partial_rotary_factor=0.4, tie_word_embeddings=False)),
    "qwen3_moe_v4keys": ("qwen3_moe", dict(BASE, head_dim=6, moe_intermediate_size=14, num_experts=3,
                                           num_experts_per_tok=2, tie_word_embeddings=False)),
}
# An explicit head_dim (6, not hidden_size // heads = 10) for every family whose config may carry one.
for _m in ("llama", "mistral", "qwen2", "olmo2", "granite", "starcoder2", "gpt_neox", "phi3", "mixtral"):
    _t, _kw = MODELS[_m]
    MODELS[_m + "_hd"] = (_t, dict(_kw, head_dim=6))

# Experts whose rows are multiples of 16 bytes, as torch._grouped_mm (transformers' default experts
# implementation) requires on CPU: activation records of the grouped path (scripts/activation_probe.py).
MODELS["mixtral_i16"] = ("mixtral", dict(BASE, hidden_size=24, intermediate_size=16, num_attention_heads=4,
                                         num_key_value_heads=2, head_dim=6, num_local_experts=4,
                                         num_experts_per_tok=2, tie_word_embeddings=False))
for _m, _extra in (("olmoe", dict(intermediate_size=16)), ("granitemoe", dict(intermediate_size=16)),
                   ("phimoe", dict(intermediate_size=16)), ("gpt_oss", dict(intermediate_size=16)),
                   ("qwen2_moe", dict(moe_intermediate_size=16, shared_expert_intermediate_size=16, head_dim=6)),
                   ("deepseek_v3", dict(moe_intermediate_size=16, intermediate_size=32))):
    _t, _kw = MODELS[_m]
    MODELS[_m + "_i16"] = (_t, dict(_kw, hidden_size=24, num_attention_heads=4, num_key_value_heads=2,
                                    **({"head_dim": 6} if "head_dim" in _kw else {}), **_extra))
# DeepSeek-V3 with every width of its layer distinct (h 40, q_lora 26, kv_lora 22, nH x qk_head_dim 54,
# nH x v_head_dim 42, kv_b's nH x (nope + v) 78, top-3 of 5 experts of 24, 2 shared) and 16-byte expert rows:
# its activation records (scripts/activation_probe.py) tell each saved tensor by its width.
MODELS["deepseek_v3_w"] = ("deepseek_v3", dict(BASE, hidden_size=40, num_attention_heads=3, num_key_value_heads=3,
                                               intermediate_size=56, moe_intermediate_size=24, n_routed_experts=5,
                                               n_shared_experts=2, num_experts_per_tok=3, n_group=1, topk_group=1,
                                               first_k_dense_replace=1, q_lora_rank=26, kv_lora_rank=22,
                                               qk_rope_head_dim=6, qk_nope_head_dim=12, v_head_dim=14,
                                               tie_word_embeddings=False))
# Its branches: no q_lora_rank (q_proj on the input norm's output, V2-Lite's layout), no top-k
# normalization, and group-limited routing (2 groups of 3 experts, 1 chosen).
MODELS["deepseek_v3_w_lite"] = ("deepseek_v3", dict(MODELS["deepseek_v3_w"][1], q_lora_rank=None, norm_topk_prob=False,
                                                    n_routed_experts=6, n_group=2, topk_group=1, num_experts_per_tok=2,
                                                    n_shared_experts=1, v_head_dim=10))
# DeepSeek-V2 with deepseek_v3_w's widths but 4 heads (V2 wants hidden_size divisible by them): its softmax
# router, greedy top-k.
MODELS["deepseek_v2_w"] = ("deepseek_v2", dict(MODELS["deepseek_v3_w"][1], num_attention_heads=4, num_key_value_heads=4,
                                               topk_method="greedy", n_group=None,
                                               topk_group=None))
# DeepSeek-V2's own routing: group_limited_greedy (2 groups of 3 experts, 1 chosen; DeepSeek-V2's is 8 of 20,
# 3 chosen), and no q_lora_rank (V2-Lite's layout).
MODELS["deepseek_v2_w_group"] = ("deepseek_v2", dict(MODELS["deepseek_v2_w"][1], topk_method="group_limited_greedy",
                                                     n_routed_experts=6, n_group=2, topk_group=1, num_experts_per_tok=2,
                                                     q_lora_rank=None))
MODELS["qwen3_moe_i16_norm"] = ("qwen3_moe", dict(BASE, hidden_size=24, num_attention_heads=4, num_key_value_heads=4,
                                                  head_dim=6, moe_intermediate_size=16, num_experts=4,
                                                  num_experts_per_tok=2, norm_topk_prob=True,
                                                  tie_word_embeddings=False))

# Four query heads over one and over two KV heads: what eager attention keeps differs with the grouping
# (repeat_kv copies keys and values unless there is one KV head), and the probes tell a per-query-head
# term from a per-KV-head one only when 4 x head_dim differs from 2 x 2 x head_dim (scripts/activation_probe.py).
for _m in ("phi3", "glm", "gemma2", "phi"):
    _t, _kw = MODELS[_m]
    for _kv in (1, 2):
        MODELS[f"{_m}_kv{_kv}"] = (_t, dict(_kw, num_attention_heads=4, num_key_value_heads=_kv,
                                            **({"hidden_size": 24} if _m in ("phi3", "phi") else {})))

# config.json keys rewritten after saving, as an older transformers release wrote them (Qwen3MoeConfig
# in 4.x stored `num_experts`; 5.x stores `num_local_experts` and maps the old name to it).
CONFIG_RENAMES = {"qwen3_moe_v4keys": {"num_local_experts": "num_experts"}}


def fill_distinct(model: torch.nn.Module) -> None:
    """Every element of every parameter and persistent buffer distinct (a tied pair is one tensor)."""
    seen, start = set(), 0
    with torch.no_grad():
        for _, t in list(model.named_parameters()) + list(model.named_buffers()):
            if id(t) in seen or not t.is_floating_point() or t.numel() == 0:
                continue
            seen.add(id(t))
            n = t.numel()
            t.copy_((torch.arange(start, start + n, dtype=torch.float64) * 1e-4 - 0.5).reshape(t.shape).to(t.dtype))
            start += n


def auto_class(cfg):
    """The Auto class a fine-tuning script loads the model with: causal LM, or image-text-to-text for
    vision-language composites."""
    return AutoModelForImageTextToText if getattr(cfg, "vision_config", None) is not None else AutoModelForCausalLM


def build_model(name: str, out_dir: str) -> dict:
    model_type, kwargs = MODELS[name]
    cfg = AutoConfig.for_model(model_type, **kwargs)
    if hasattr(cfg, "experts_implementation"):
        cfg.experts_implementation = "eager"
    torch.manual_seed(0)
    model = auto_class(cfg).from_config(cfg, dtype=torch.float32)
    fill_distinct(model)
    d = os.path.join(out_dir, "models", name)
    shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(d, safe_serialization=True)
    for extra in os.listdir(d):
        if extra not in ("config.json", "model.safetensors"):
            os.remove(os.path.join(d, extra))
    if name in CONFIG_RENAMES:
        path = os.path.join(d, "config.json")
        cfg_json = json.load(open(path))
        for old, new in CONFIG_RENAMES[name].items():
            cfg_json[new] = cfg_json.pop(old)
        with open(path, "w") as f:
            json.dump(cfg_json, f, indent=2, sort_keys=True)
            f.write("\n")
    return {"name": name, "model_type": model_type, "class": type(model).__name__,
            "no_split_modules": list(model._no_split_modules or []),
            "num_params": sum(p.numel() for p in model.parameters())}


def load_model(name: str, dtype=torch.float32):
    d = os.path.join(OUT, "models", name)
    kwargs = {"dtype": dtype}
    cfg = AutoConfig.from_pretrained(d)
    if hasattr(cfg, "experts_implementation") or cfg.model_type in ("mixtral", "qwen2_moe", "qwen3_moe",
                                                                     "deepseek_v3", "gpt_oss", "olmoe", "phimoe",
                                                                     "deepseek_v2", "granitemoe"):
        kwargs["experts_implementation"] = "eager"
    try:
        return auto_class(cfg).from_pretrained(d, **kwargs)
    except TypeError:
        kwargs.pop("experts_implementation", None)
        return auto_class(cfg).from_pretrained(d, **kwargs)


# --------------------------------------------------------------------------------------------
# Preparing a model as accelerate does
# --------------------------------------------------------------------------------------------

POLICY = {"transformer": "TRANSFORMER_BASED_WRAP", "size": "SIZE_BASED_WRAP", "none": "NO_WRAP"}


def make_plugin(c: dict):
    from accelerate.utils import FullyShardedDataParallelPlugin
    kw = dict(fsdp_version=c["fsdp_version"], auto_wrap_policy=POLICY[c["policy"]["kind"]],
              cpu_ram_efficient_loading=False)
    if c["fsdp_version"] == 1:
        kw.update(use_orig_params=c.get("use_orig_params", False), sync_module_states=False)
    if c["policy"].get("classes"):
        kw["transformer_cls_names_to_wrap"] = list(c["policy"]["classes"])
    if c["policy"]["kind"] == "size":
        kw["min_num_params"] = int(c["policy"]["min_num_params"])
    if c["fsdp_version"] == 1:
        kw["sharding_strategy"] = c.get("sharding_strategy", "FULL_SHARD")
    else:
        kw["reshard_after_forward"] = c.get("reshard_after_forward", True)
    if c.get("ignored_modules"):
        kw["ignored_modules"] = c["ignored_modules"]
    plugin = FullyShardedDataParallelPlugin(**kw)
    if c.get("mixed_precision", "no") != "no":
        plugin.set_mixed_precision(c["mixed_precision"])
    return plugin


# Hooks for oracles built on this one (scripts/peft_oracle.py): how a case's model is loaded, and
# the FSDP1 auto-wrap policy a caller installs on the plugin before Accelerator.prepare_model (as
# transformers' Trainer does for a PEFT model). Set before any case is forked.
LOAD_HOOK = None     # callable(case) -> model, or None for load_model(case["model"])
PLUGIN_HOOK = None   # callable(model, case, plugin) -> None


def wrap_fsdp1(model, c: dict):
    """accelerate 1.14 Accelerator.prepare_model, FSDP1 branch (accelerator.py), on CPU."""
    import re
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    plugin = make_plugin(c)
    if PLUGIN_HOOK is not None:
        PLUGIN_HOOK(model, c, plugin)
    plugin.set_auto_wrap_policy(model)
    kwargs = {
        "sharding_strategy": plugin.sharding_strategy or plugin.reshard_after_forward,
        "cpu_offload": plugin.cpu_offload,
        "auto_wrap_policy": plugin.auto_wrap_policy,
        "mixed_precision": plugin.mixed_precision_policy,
        "sync_module_states": plugin.sync_module_states,
        "backward_prefetch": plugin.backward_prefetch,
        "forward_prefetch": plugin.forward_prefetch,
        "use_orig_params": plugin.use_orig_params,
        "param_init_fn": None,
        "ignored_modules": plugin.ignored_modules,
        "limit_all_gathers": plugin.limit_all_gathers,
        "device_id": torch.device("cpu"),
    }
    if plugin.sharding_strategy.name in ("HYBRID_SHARD", "_HYBRID_SHARD_ZERO2"):
        # accelerate passes no process groups, so torch builds the intra-node shard groups from the
        # device handle's device_count() (_init_utils.py _init_process_group_state_for_hybrid_shard:
        # torch.cuda on GPUs, torch.cpu here, which says 1): report the GPUs per node a machine of
        # num_machines nodes would, the one change from a GPU run.
        per_node = c["world_size"] // c["num_machines"]
        torch.cuda.device_count = lambda: per_node
        torch.cpu.device_count = lambda: per_node
    if isinstance(kwargs["ignored_modules"], str):
        reg = re.compile(kwargs["ignored_modules"])
        kwargs["ignored_modules"] = [m for n, m in model.named_modules() if reg.fullmatch(n)]
    return FSDP(model, **kwargs)


def wrap_fsdp2(model, c: dict, W: int):
    """accelerate 1.14 fsdp2_prepare_model with a stand-in Accelerator (fsdp_utils.py)."""
    from accelerate.parallelism_config import ParallelismConfig
    import logging
    import accelerate.utils.fsdp_utils as fsdp_utils
    from accelerate.utils.fsdp_utils import fsdp2_prepare_model
    # accelerate's MultiProcessAdapter refuses to log without an initialised AcceleratorState, which
    # the stand-in has none of (the upcast under mixed precision logs): a plain logger instead.
    fsdp_utils.logger = logging.getLogger("accelerate-standin")
    R = c.get("dp_replicate", 1)
    pc = ParallelismConfig(dp_replicate_size=R, dp_shard_size=W // R)
    mesh = pc.build_device_mesh("cpu")
    standin = types.SimpleNamespace(
        state=types.SimpleNamespace(fsdp_plugin=make_plugin(c)), torch_device_mesh=mesh, parallelism_config=pc,
        mixed_precision=c.get("mixed_precision", "no"), device=torch.device("cpu"),
        is_main_process=dist.get_rank() == 0)
    return fsdp2_prepare_model(standin, model)


def wrap_torchtitan(model, c: dict, W: int):
    """The fully_shard calls of torchtitan's apply_fsdp (torchtitan/models/llama3/infra/parallelize.py,
    v0.2.x; tied weights as in HEAD with enable_weight_tying), on a transformers model: the input
    embedding (untied), every decoder layer, [final norm, head] kept after forward (with a tied
    embedding: [embedding, final norm, head]), then the root; MixedPrecisionPolicy(param_dtype=bf16,
    reduce_dtype=fp32), torchtitan's default."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    mesh = init_device_mesh("cpu", (W,))
    kw = dict(mesh=mesh, mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32))
    emb, out = model.get_input_embeddings(), model.get_output_embeddings()
    tied = out is not None and emb.weight is out.weight
    base = getattr(model, model.base_model_prefix)
    if not tied:
        fully_shard(emb, reshard_after_forward=True, **kw)
    for block in base.layers:
        fully_shard(block, reshard_after_forward=True, **kw)
    tail = ([emb] if tied else []) + [base.norm, out]
    fully_shard(tail, reshard_after_forward=False, **kw)
    return fully_shard(model, **kw)


def lazy_init(model, c: dict) -> None:
    if c["fsdp_version"] == 1:
        from torch.distributed.fsdp._runtime_utils import _lazy_init
        _lazy_init(model, model)
    else:
        model._get_fsdp_state()._lazy_init()


def storage_bytes(tensors) -> int:
    """Bytes of the distinct storages behind these (local) tensors: what is really allocated."""
    seen, total = set(), 0
    for t in tensors:
        if t is None:
            continue
        if hasattr(t, "_local_tensor"):
            t = t._local_tensor
        s = t.untyped_storage()
        if s.data_ptr() in seen or s.nbytes() == 0:
            continue
        seen.add(s.data_ptr())
        total += s.nbytes()
    return total


def vlm_inputs(cfg) -> dict:
    """One training example with an image for a vision-language model (else its tower gets no
    gradient): the image, its placeholder tokens in the text (as many as the model's processor would
    put there) and labels that leave them out of the loss."""
    g = torch.Generator().manual_seed(0)
    t = cfg.model_type

    def text(image_token, n, before=(1,), after=(5, 2, 7)):
        ids = torch.tensor([list(before) + [image_token] * n + list(after)])
        return ids, ids.masked_fill(ids == image_token, -100)

    if t in ("qwen2_vl", "qwen2_5_vl"):
        # 4 x 4 patches of 14 px, merged 2 x 2: 4 image tokens between the vision start and end ids.
        ids, labels = text(cfg.image_token_id, 4, before=(1, 5, cfg.vision_start_token_id),
                           after=(cfg.vision_end_token_id, 7, 8))
        return dict(input_ids=ids, labels=labels, pixel_values=torch.randn(16, 1176, generator=g),
                    image_grid_thw=torch.tensor([[1, 4, 4]]), mm_token_type_ids=(ids == cfg.image_token_id).long())
    if t in ("idefics3", "smolvlm"):
        # One 5-D image (batch, images, C, H, W) per sequence and its 4 tokens.
        ids, labels = text(cfg.image_token_id, 4)
        size = cfg.vision_config.image_size
        return dict(input_ids=ids, labels=labels, pixel_values=torch.randn(1, 1, 3, size, size, generator=g))
    if t == "mllama":
        # Two sequences, each one image of tiles ([1, 2] aspect: two tiles; [1, 1]: one) and a cross-attention
        # mask from the image token on.
        ids = torch.tensor([[37, 5, 6, 7, 8, 9, 10, 11], [3, 37, 12, 13, 14, 15, 16, 17]])
        cam = torch.zeros(2, 8, 1, 2, dtype=torch.long)
        cam[0, 0:, 0, :2] = 1
        cam[1, 1:, 0, :1] = 1
        return dict(input_ids=ids, labels=ids.masked_fill(ids == 37, -100), use_cache=False,
                    pixel_values=torch.randn(2, 1, 2, 3, 28, 28, generator=g), aspect_ratio_ids=torch.tensor([[2], [1]]),
                    aspect_ratio_mask=torch.tensor([[[1, 1]], [[1, 0]]]), cross_attention_mask=cam)
    vc = cfg.vision_config
    if t == "llava_next":
        # A 28 x 56 image on the [28, 56] pinpoint: base features, unpadded tiles and newlines, 14 tokens.
        ids, labels = text(cfg.image_token_index, 14)
        return dict(input_ids=ids, labels=labels, image_sizes=torch.tensor([[28, 56]]),
                    pixel_values=torch.randn(1, 3, 3, 28, 28, generator=g))
    if t == "llava_onevision":
        ids, labels = text(cfg.image_token_index, 36)
        return dict(input_ids=ids, labels=labels, image_sizes=torch.tensor([[16, 16]]),
                    pixel_values=torch.randn(1, 2, 3, 16, 16, generator=g))
    pixels = torch.randn(1, vc.num_channels, vc.image_size, vc.image_size, generator=g)
    if t == "gemma3":
        ids, labels = text(cfg.image_token_index, cfg.mm_tokens_per_image)
        return dict(input_ids=ids, labels=labels, pixel_values=pixels)
    if t == "paligemma":
        ids, labels = text(cfg.image_token_index, (vc.image_size // vc.patch_size) ** 2)
        return dict(input_ids=ids, labels=labels, pixel_values=pixels, token_type_ids=(ids != cfg.image_token_index).long())
    # LLaVA: one token per patch (the default strategy drops the CLS feature).
    ids, labels = text(cfg.image_token_index, (vc.image_size // vc.patch_size) ** 2)
    return dict(input_ids=ids, labels=labels, pixel_values=pixels)


def step(model, c: dict) -> dict:
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    ids = torch.tensor([[1, 5, 2, 7, 3]])
    cfg = getattr(model, "config", None)
    if getattr(cfg, "vision_config", None) is not None:
        out = model(**vlm_inputs(cfg))
    else:
        out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    opt.step()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    if c["fsdp_version"] == 1:
        # With use_orig_params=True the FlatParameters are not model parameters, and a rank whose
        # shard holds no element of a trainable parameter has no gradient view into its flat
        # gradient: count every FlatParameter and its .grad too (what the rank really holds).
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        flat = [m._handle.flat_param for m in model.modules() if isinstance(m, FSDP) and m._handle is not None]
        params += flat
        grads += [f.grad for f in flat]
    states = [v for s in opt.state.values() for k, v in s.items() if torch.is_tensor(v) and k != "step"]
    return {"params": storage_bytes(params), "grads": storage_bytes(grads),
            "optimizer": storage_bytes(states), "loss_finite": bool(torch.isfinite(out.loss).item())}


# --------------------------------------------------------------------------------------------
# What was built
# --------------------------------------------------------------------------------------------

def clean(name: str) -> str:
    return name.replace("_fsdp_wrapped_module.", "").replace("._fsdp_wrapped_module", "").replace(
        "_fsdp_wrapped_module", "")


def units_fsdp1(model) -> list:
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    units = []
    for name, m in model.named_modules():
        if not isinstance(m, FSDP):
            continue
        path = clean(name)
        pre = path + "." if path else ""
        u = {"path": path, "class": type(m.module).__name__, "strategy": m.sharding_strategy.name}
        h = m._handle
        if h is None:
            u.update(params=[], param_numels=[], numel=0, padded_numel=0, shard_numel=0, rank_pad=0, layout=[])
            units.append(u)
            continue
        fp = h.flat_param
        u["params"] = [pre + clean(f) for f in fp._fqns]
        u["param_numels"] = [int(n) for n in fp._numels]
        u["shared"] = [pre + clean(s.param_name if hasattr(s, "param_name") else "") for s in fp._shared_param_infos]
        layout, k = [], 0
        for n, is_pad in zip(fp._numels_with_padding, fp._is_padding_mask):
            if is_pad:
                layout.append(["", int(n)])
            else:
                layout.append([u["params"][k], int(n)])
                k += 1
        u["layout"] = layout
        u["numel"] = int(sum(fp._numels))
        u["unsharded_numel"] = int(fp._unpadded_unsharded_size.numel())
        # NO_SHARD never pads: _padded_unsharded_size is set only by sharded strategies' lazy init.
        u["padded_numel"] = int(getattr(fp, "_padded_unsharded_size", fp._unpadded_unsharded_size).numel())
        u["shard_numel"] = int(fp.numel())
        u["rank_pad"] = int(getattr(fp, "_shard_numel_padded", 0))
        u["dtype"] = str(fp.dtype).replace("torch.", "")
        u["requires_grad"] = bool(fp.requires_grad)
        units.append(u)
    return units


def groups_fsdp2(model) -> list:
    from torch.distributed.fsdp import FSDPModule
    names = {id(m): n for n, m in model.named_modules()}
    groups, seen = [], set()
    for name, m in model.named_modules():
        if not isinstance(m, FSDPModule):
            continue
        st = m._get_fsdp_state()
        if id(st) in seen:
            continue
        seen.add(id(st))
        g = {"modules": [names[id(x)] for x in st._modules], "params": [], "shapes": [], "sharded_shapes": [],
             "padded_rows": []}
        pg = st._fsdp_param_group
        if pg is not None:
            g["reshard_after_forward"] = pg.post_forward_mesh_info is not None
            for fp in pg.fsdp_params:
                mi = fp._module_info
                prefix = names[id(mi.module)]
                g["params"].append((prefix + "." if prefix else "") + mi.param_name)
                g["shapes"].append(list(fp._orig_size))
                g["sharded_shapes"].append(list(fp.sharded_size))
                g["padded_rows"].append(int(fp.padded_sharded_param_size[0]) if len(fp._orig_size) else 0)
            g["orig_dtype"] = str(pg.fsdp_params[0].orig_dtype).replace("torch.", "") if pg.fsdp_params else None
        groups.append(g)
    return groups


# --------------------------------------------------------------------------------------------
# Running a case
# --------------------------------------------------------------------------------------------

def rank_prologue(rank: int, W: int) -> None:
    """What every forked rank does first: silence (unless ORACLE_TRACE), the launcher's variables, a seed."""
    if not os.environ.get("ORACLE_TRACE"):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
    os.environ["LOCAL_RANK"] = str(rank)
    os.environ["RANK"] = str(rank)
    os.environ["WORLD_SIZE"] = str(W)
    torch.manual_seed(0)


def apply_frozen(model, c: dict) -> None:
    """`frozen`: requires_grad_(False) on every Parameter one of whose names (tied aliases included)
    the regex re.search-es, as a script freezing by name over named_parameters(remove_duplicate=False)."""
    if not c.get("frozen"):
        return
    import re
    rx = re.compile(c["frozen"])
    for name, p in model.named_parameters(remove_duplicate=False):
        if rx.search(name):
            p.requires_grad_(False)


def rank_main(c: dict, rank: int, W: int, store: str, result: str) -> None:
    rank_prologue(rank, W)
    rec, stage = {}, "init"
    try:
        dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=W)
        stage = "load"
        model = LOAD_HOOK(c) if LOAD_HOOK is not None else load_model(c["model"])
        apply_frozen(model, c)
        stage = "wrap"
        if c["fsdp_version"] == 1:
            model = wrap_fsdp1(model, c)
        elif c.get("caller") == "torchtitan":
            model = wrap_torchtitan(model, c, W)
        else:
            model = wrap_fsdp2(model, c, W)
        stage = "lazy_init"
        lazy_init(model, c)
        rec["units" if c["fsdp_version"] == 1 else "groups"] = (units_fsdp1(model) if c["fsdp_version"] == 1
                                                               else groups_fsdp2(model))
        if c.get("step", True):
            stage = "step"
            rec["memory"] = step(model, c)
    except BaseException as e:  # noqa: BLE001 - every failure is a result here
        msg = str(e)
        if isinstance(e, KeyError):
            msg = repr(e)
        rec["error"] = {"type": type(e).__name__, "message": msg, "stage": stage}
        if os.environ.get("ORACLE_TRACE"):
            traceback.print_exc()
    with open(result, "w") as f:
        json.dump(rec, f)
    os._exit(0)


def merge(c: dict, per_rank: list) -> dict:
    out = dict(c)
    out["versions"] = {"torch": torch.__version__, "transformers": transformers.__version__,
                       "accelerate": accelerate.__version__}
    errors = [r.get("error") for r in per_rank]
    if any(errors):
        e = next(x for x in errors if x)
        out["error"] = e
        out["error_ranks"] = [i for i, x in enumerate(errors) if x]
        if "units" in per_rank[0] or "groups" in per_rank[0]:
            pass
        else:
            return out
    if "units" in per_rank[0]:
        units = per_rank[0]["units"]
        for i, u in enumerate(units):
            u["rank_pad"] = [r["units"][i]["rank_pad"] for r in per_rank]
            for r in per_rank[1:]:
                o = dict(r["units"][i]); o.pop("rank_pad")
                mine = {k: v for k, v in u.items() if k != "rank_pad"}
                assert o == mine, (c["case"], o, mine)
        out["units"] = units
    if "groups" in per_rank[0]:
        groups = per_rank[0]["groups"]
        for i, g in enumerate(groups):
            g["rank_sharded_shapes"] = [r["groups"][i]["sharded_shapes"] for r in per_rank]
            g.pop("sharded_shapes")
        out["groups"] = groups
    if all("memory" in r for r in per_rank):
        out["memory"] = [r["memory"] for r in per_rank]
    return out


def dump(doc: dict) -> str:
    """One line per top-level key, and per unit, group and rank inside the lists: diffable, compact."""
    lines = []
    for k, v in doc.items():
        if isinstance(v, list) and v and isinstance(v[0], dict):
            inner = ",\n".join("  " + json.dumps(x, separators=(", ", ": ")) for x in v)
            lines.append(f" {json.dumps(k)}: [\n{inner}\n ]")
        else:
            lines.append(f" {json.dumps(k)}: {json.dumps(v, separators=(', ', ': '))}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def run_case(c: dict, timeout: float) -> dict:
    W = c["world_size"]
    tmp = tempfile.mkdtemp(prefix="oracle2-")
    store = os.path.join(tmp, "store")
    ctx = mp.get_context("fork")
    procs = []
    for r in range(W):
        p = ctx.Process(target=rank_main, args=(c, r, W, store, os.path.join(tmp, f"r{r}.json")))
        p.start()
        procs.append(p)
    deadline = time.time() + timeout
    for p in procs:
        p.join(max(0.1, deadline - time.time()))
    hung = [i for i, p in enumerate(procs) if p.is_alive()]
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
    per_rank = []
    for r in range(W):
        f = os.path.join(tmp, f"r{r}.json")
        per_rank.append(json.load(open(f)) if os.path.exists(f) else {"error": {"type": "Hang" if r in hung else "Died",
                                                                               "message": "", "stage": "?"}})
    shutil.rmtree(tmp, ignore_errors=True)
    return merge(c, per_rank)


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------

def case(model, fsdp, W, policy, **kw):
    tag = {"transformer": "tf", "size": "size", "none": "none"}[policy["kind"]]
    if policy["kind"] == "transformer" and policy.get("classes"):
        tag += "cls"
    if policy["kind"] == "size":
        tag += str(policy["min_num_params"])
    parts = [model, f"fsdp{fsdp}", tag]
    strat = kw.get("sharding_strategy")
    if strat and strat != "FULL_SHARD":
        parts.append({"SHARD_GRAD_OP": "sgo", "NO_SHARD": "noshard", "HYBRID_SHARD": "hsdp",
                      "_HYBRID_SHARD_ZERO2": "hsdp2"}[strat])
    if kw.get("use_orig_params"):
        parts.append("orig")
    if kw.get("mixed_precision", "no") != "no":
        parts.append(kw["mixed_precision"])
    if kw.get("ignored_modules"):
        parts.append("ign")
    if kw.get("frozen"):
        parts.append("frz-" + re.sub(r"[^a-z]", "", kw["frozen"])[:12])
    if kw.get("num_machines", 1) > 1:
        parts.append(f"m{kw['num_machines']}")
    if kw.get("dp_replicate", 1) > 1:
        parts.append(f"r{kw['dp_replicate']}")
    if kw.get("reshard_after_forward") is False:
        parts.append("noreshard")
    if kw.get("caller"):
        parts.append(kw["caller"])
    parts.append(f"w{W}")
    c = {"case": "-".join(parts), "model": model, "fsdp_version": fsdp, "world_size": W, "policy": policy}
    c.update(kw)
    # gloo rejects bf16/fp16 all-gathers: mixed-precision cases record the layout only.
    if kw.get("mixed_precision", "no") != "no" or kw.get("caller") == "torchtitan":
        c["step"] = False
    return c


def run_and_write(c: dict, out_dir: str, timeout: float, progress: str, versions: dict | None = None) -> None:
    """Runs one case, writes <out_dir>/<case>.json (with extra `versions`), prints one line."""
    res = run_case(c, timeout)
    res["versions"].update(versions or {})
    with open(os.path.join(out_dir, c["case"] + ".json"), "w") as f:
        f.write(dump(res))
    e = res.get("error")
    print(f"[{progress}] {c['case']}: " + (f"{e['stage']}: {e['type']}: {e['message'][:150]}" if e else "ok"),
          file=sys.stderr)


def list_cases(cases: list) -> int:
    """--list: the case names, one a line, and their count on stderr."""
    for c in cases:
        print(c["case"])
    print(len(cases), "cases", file=sys.stderr)
    return 0


def unique(cases: list) -> list:
    """Cases in order, the first of each name."""
    seen, out = set(), []
    for c in cases:
        if c["case"] not in seen:
            seen.add(c["case"])
            out.append(c)
    return out


def TF(*classes):
    return {"kind": "transformer", "classes": list(classes) or None}


def SIZE(n):
    return {"kind": "size", "min_num_params": int(n)}


NONE = {"kind": "none"}


def all_cases() -> list:
    cs = []
    dense = ["llama", "llama_tied", "mistral", "qwen2", "qwen2_tied", "qwen3", "olmo2", "granite", "gemma", "gemma2",
             "gemma3_text", "phi3", "phi", "starcoder2", "gpt_neox", "falcon", "gpt2"]
    moe = ["mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3", "gpt_oss"]
    dense += ["helium", "smollm3", "arcee", "olmo", "cohere2", "glm", "glm4", "seed_oss", "apertus", "stablelm"]
    moe += ["olmoe", "granitemoe", "phimoe", "deepseek_v2"]
    for m in dense + moe:
        cs.append(case(m, 1, 3, TF()))
        cs.append(case(m, 1, 4, TF(), use_orig_params=True))
        cs.append(case(m, 2, 3, TF()))
        cs.append(case(m, 2, 5, TF()))
    # FSDP1: strategies, use_orig_params both ways, policies, world sizes.
    for m in ("llama", "llama_tied", "qwen2", "gpt2", "mixtral", "qwen3_moe"):
        for W in (1, 2, 5, 8):
            cs.append(case(m, 1, W, TF()))
            cs.append(case(m, 1, W, TF(), use_orig_params=True))
        cs.append(case(m, 1, 4, TF(), sharding_strategy="SHARD_GRAD_OP"))
        cs.append(case(m, 1, 3, TF(), sharding_strategy="NO_SHARD"))
        cs.append(case(m, 1, 3, TF(), sharding_strategy="NO_SHARD", use_orig_params=True))
        cs.append(case(m, 1, 1, TF(), sharding_strategy="NO_SHARD", use_orig_params=True))
        cs.append(case(m, 1, 6, NONE))
        cs.append(case(m, 1, 6, NONE, use_orig_params=True))
        cs.append(case(m, 1, 3, SIZE(1000)))
        cs.append(case(m, 1, 5, SIZE(300), use_orig_params=True))
        cs.append(case(m, 1, 3, TF(), mixed_precision="bf16"))
        cs.append(case(m, 1, 3, TF(), mixed_precision="bf16", use_orig_params=True))
    # FSDP1 hybrid strategies: shard within a node, replicate across nodes.
    for m in ("llama", "qwen2", "mixtral", "gpt2"):
        cs.append(case(m, 1, 6, TF(), sharding_strategy="HYBRID_SHARD", num_machines=2))
        cs.append(case(m, 1, 6, TF(), sharding_strategy="_HYBRID_SHARD_ZERO2", num_machines=3))
        cs.append(case(m, 1, 8, TF(), sharding_strategy="HYBRID_SHARD", num_machines=2, use_orig_params=True))
    for m in ("llama", "qwen2"):
        cs.append(case(m, 1, 3, TF(), ignored_modules=r"model\.layers\.1"))
        cs.append(case(m, 1, 4, TF(), ignored_modules=r"model\.embed_tokens", use_orig_params=True))
        cs.append(case(m, 1, 7, SIZE(100), sharding_strategy="SHARD_GRAD_OP", use_orig_params=True))
    # FSDP2 through accelerate: world sizes, policies, HSDP, mixed precision, reshard.
    for m in ("llama", "llama_tied", "qwen2", "gpt2", "mixtral", "qwen3_moe", "gemma"):
        for W in (1, 2, 4, 7, 8):
            cs.append(case(m, 2, W, TF()))
        cs.append(case(m, 2, 4, TF(), dp_replicate=2))
        cs.append(case(m, 2, 6, TF(), dp_replicate=3))
        cs.append(case(m, 2, 3, NONE))
        cs.append(case(m, 2, 3, SIZE(1000)))
        cs.append(case(m, 2, 4, SIZE(100000)))
        cs.append(case(m, 2, 3, TF(), mixed_precision="bf16"))
        cs.append(case(m, 2, 3, TF(), reshard_after_forward=False))
    for m in ("llama", "qwen2"):
        cs.append(case(m, 2, 3, TF(), ignored_modules=r"model\.layers\.1"))
    # A tied weight is one Parameter: freezing or ignoring it through either name acts on both
    # (FSDP1 use_orig_params both ways, FSDP2; scripts/oracle/fuzz_oracle.py samples more).
    for m in ("llama_tied", "qwen2_tied"):
        for frozen in (r"lm_head", r"embed_tokens"):
            cs.append(case(m, 1, 3, TF(), frozen=frozen))
            cs.append(case(m, 1, 4, TF(), frozen=frozen, use_orig_params=True))
            cs.append(case(m, 1, 3, SIZE(300), frozen=frozen, use_orig_params=True))
            cs.append(case(m, 2, 3, TF(), frozen=frozen))
        cs.append(case(m, 1, 3, TF(), ignored_modules=r"lm_head"))
        cs.append(case(m, 1, 4, SIZE(300), ignored_modules=r"lm_head", use_orig_params=True))
        cs.append(case(m, 2, 3, TF(), ignored_modules=r"lm_head"))
        cs.append(case(m, 2, 4, TF(), ignored_modules=r"model\.embed_tokens"))
    # A size policy that wraps the base model (all but the 37 x 20 LM head) and nothing inside it:
    # accelerate then calls fully_shard on the embedding that group already manages.
    infos_path = os.path.join(OUT, "models", "models.json")
    if os.path.exists(infos_path):
        infos = json.load(open(infos_path))
        for m in ("llama", "qwen2", "mixtral"):
            if m in infos:
                cs.append(case(m, 2, 3, SIZE(infos[m]["num_params"] - 37 * 20 - 1)))
    # FSDP2 as torchtitan calls fully_shard (bf16 compute, fp32 reduction: layouts only).
    for m in ("llama", "llama_tied", "qwen2", "mixtral", "qwen3_moe", "gemma"):
        for W in (3, 8):
            cs.append(case(m, 2, W, TF(), caller="torchtitan"))
    # Regression models (config fields transformers reads), both FSDP versions.
    for m in ("qwen2_moe_hd", "phi_hd", "qwen3_moe_v4keys", "llama_hd", "mistral_hd", "qwen2_hd", "olmo2_hd",
              "granite_hd", "starcoder2_hd", "gpt_neox_hd", "phi3_hd", "mixtral_hd"):
        cs.append(case(m, 1, 3, TF()))
        cs.append(case(m, 2, 4, TF()))
    # A tied weight split across FSDP1 units with use_orig_params=True: which strategies fail.
    for m in ("llama_tied", "gpt2"):
        cs.append(case(m, 1, 5, SIZE(300), use_orig_params=True, sharding_strategy="SHARD_GRAD_OP"))
        cs.append(case(m, 1, 3, SIZE(300), use_orig_params=True, sharding_strategy="NO_SHARD"))
        cs.append(case(m, 1, 4, SIZE(300)))
    # More world sizes for FSDP1 and FSDP2 on the MoE and other families.
    for m in ("qwen2_moe", "deepseek_v3", "gpt_oss", "phi3", "starcoder2", "gpt_neox", "olmo2"):
        for W in (2, 7):
            cs.append(case(m, 1, W, TF(), use_orig_params=True))
            cs.append(case(m, 2, W, TF()))
    # A vision-language composite: accelerate's policy with no class list takes the union
    # _no_split_modules, which names CLIPTextEmbeddings; the block classes named explicitly wrap.
    blocks = TF("CLIPEncoderLayer", "LlamaDecoderLayer")
    cs += [case("llava", 1, 3, TF()), case("llava", 2, 3, TF()), case("llava", 1, 3, blocks),
           case("llava", 1, 4, blocks, use_orig_params=True), case("llava", 2, 3, blocks), case("llava", 2, 5, blocks),
           case("llava", 1, 3, SIZE(1000))]
    # The other composites: accelerate's default class list (the union _no_split_modules, which for
    # the CLIP/SigLIP towers names classes the model lacks), the block classes named, both FSDP versions.
    vlm_blocks = {"llava_next": TF("CLIPEncoderLayer", "LlamaDecoderLayer"),
                  "llava_onevision": TF("SiglipEncoderLayer", "Qwen2DecoderLayer"),
                  "paligemma": TF("SiglipEncoderLayer", "GemmaDecoderLayer"),
                  "gemma3": TF("SiglipEncoderLayer", "Gemma3DecoderLayer"),
                  "qwen2_vl": TF(), "qwen2_5_vl": TF(), "mllama": TF(),
                  "idefics3": TF("Idefics3EncoderLayer", "LlamaDecoderLayer"),
                  "smolvlm": TF("SmolVLMEncoderLayer", "LlamaDecoderLayer")}
    for m, b in vlm_blocks.items():
        cs += [case(m, 1, 3, TF()), case(m, 1, 3, b), case(m, 1, 4, b, use_orig_params=True), case(m, 2, 3, b),
               case(m, 2, 5, b)]
    return unique(cs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="*")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--models", action="store_true", help="(re)build the models only")
    ap.add_argument("--rebuild-models", action="store_true")
    ap.add_argument("--timeout", type=float, default=120)
    a = ap.parse_args()
    cases = [c for c in all_cases() if fnmatch.fnmatch(c["case"], a.only)]
    if a.list:
        return list_cases(cases)
    os.makedirs(os.path.join(OUT, "models"), exist_ok=True)
    needed = sorted(MODELS) if a.models or a.rebuild_models else sorted({c["model"] for c in cases})
    infos = {}
    info_path = os.path.join(OUT, "models", "models.json")
    if os.path.exists(info_path):
        infos = json.load(open(info_path))
    for m in needed:
        if a.rebuild_models or a.models or not os.path.exists(os.path.join(OUT, "models", m, "model.safetensors")):
            try:
                infos[m] = build_model(m, OUT)
                print("model", m, infos[m]["class"], infos[m]["num_params"], file=sys.stderr)
            except Exception as e:  # noqa: BLE001
                print("model", m, "FAILED:", type(e).__name__, e, file=sys.stderr)
    with open(info_path, "w") as f:
        json.dump(dict(sorted(infos.items())), f, indent=1)
        f.write("\n")
    if a.models:
        return 0
    t0 = time.time()
    for i, c in enumerate(cases):
        if c["model"] not in infos:
            continue
        run_and_write(c, OUT, a.timeout, f"{i + 1}/{len(cases)} {time.time() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
