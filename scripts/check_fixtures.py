#!/usr/bin/env python3
"""Re-reads the fixtures written by gen_fixtures.py with a tiny reader of its own and checks them.

    check_fixtures.py [--tiny fixtures/models] [--sparse /tmp/sparse]

Standard library only, and deliberately NOT importing gen_fixtures.py: the reader, the
checkpoint-only rules and the closed-form parameter counts below are written separately, so a bug
in the generator shows up as a failure here.

Checked per model directory (any directory holding a config.json):
  * safetensors: 8-byte LE length N (N % 8 == 0, N <= 100,000,000), UTF-8 JSON header starting
    with '{' and padded with spaces only, optional string->string __metadata__, every tensor's
    dtype known, data_offsets contiguous from 0, length == numel * dtype size, file size ==
    8 + N + data length, header keys in data order, data order == the official writer's
    (dtype descending, then name);
  * index: shard names model-XXXXX-of-YYYY(Y), weight_map == the union of the shard headers with
    the right file for every name, no tensor in two shards, metadata.total_size == data bytes;
  * EXPECTED.json: num_tensors, dtypes, total_size, checkpoint_numel, files, checkpoint-only numel
    re-derived, num_params + checkpoint_only_numel == checkpoint_numel;
  * tied embeddings (no head tensor) vs untied (head present) from config.json + class defaults;
  * FP8 (quantization_config fp8): every F8_E4M3 weight has an F32 weight_scale_inv of shape
    [ceil(out/128), ceil(in/128)] and vice versa; embeddings, norms, router gate, heads not FP8;
  * closed-form parameter counts for llama and deepseek_v3 configs;
  * tiny: data present (not all zero); sparse: data region is a hole (few blocks on disk).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import struct
import sys
from pathlib import Path

SIZES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "I16": 2, "U16": 2,
         "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8}
# the safetensors Dtype enum order (increasing alignment); the writer sorts descending
ENUM = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "I16", "U16", "F16", "BF16", "I32",
        "U32", "F32", "F64", "I64", "U64"]
# effective tie_word_embeddings when config.json lacks the key (hf-architectures.md §1)
TIE_DEFAULT = {"gemma": True, "gemma2": True, "gemma3_text": True, "gpt2": True, "falcon": True}
HEAD_NAMES = ("lm_head.weight", "embed_out.weight")

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print(f"  FAIL: {what}")
    return cond


class Tensor:
    __slots__ = ("name", "dtype", "shape", "begin", "end", "file")

    def __init__(self, name, info, file):
        self.name, self.file = name, file
        self.dtype, self.shape = info["dtype"], info["shape"]
        self.begin, self.end = info["data_offsets"]

    @property
    def numel(self):
        return math.prod(self.shape)


def read_safetensors(path: Path, sparse: bool):
    """Returns (tensors in header order, data length). Records failures."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        check(n % 8 == 0, f"{path.name}: header length {n} not a multiple of 8")
        check(n <= 100_000_000, f"{path.name}: header too large")
        raw = f.read(n)
        text = raw.decode("utf-8")
        check(text.startswith("{"), f"{path.name}: header does not start with '{{'")
        body = text.rstrip(" ")
        check(body.endswith("}") and len(text) - len(body) < 8, f"{path.name}: bad header padding")
        hdr = json.loads(text)
        meta = hdr.pop("__metadata__", None)
        if meta is not None:
            check(isinstance(meta, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in meta.items()), f"{path.name}: bad __metadata__")
        tensors = [Tensor(k, v, path.name) for k, v in hdr.items()]
        pos = 0
        for t in sorted(tensors, key=lambda t: (t.begin, t.end)):
            check(t.dtype in SIZES, f"{t.name}: unknown dtype {t.dtype}")
            check(all(isinstance(d, int) and d >= 0 for d in t.shape), f"{t.name}: bad shape")
            check(t.begin == pos, f"{t.name}: offsets not contiguous ({t.begin} != {pos})")
            check(t.end - t.begin == t.numel * SIZES.get(t.dtype, 0), f"{t.name}: byte length != numel*size")
            pos = t.end
        check(size == 8 + n + pos, f"{path.name}: file size {size} != 8+{n}+{pos}")
        check([t.begin for t in tensors] == sorted(t.begin for t in tensors),
              f"{path.name}: header keys not in data order")
        want = sorted(tensors, key=lambda t: (-ENUM.index(t.dtype), t.name.encode()))
        check([t.name for t in want] == [t.name for t in tensors],
              f"{path.name}: data order is not (dtype desc, name)")
        if sparse:
            check(path.stat().st_blocks * 512 <= 8 + n + (1 << 20),
                  f"{path.name}: data region is not sparse ({path.stat().st_blocks * 512} B on disk)")
        else:
            data = f.read()
            check(len(data) == pos and (pos == 0 or any(data)), f"{path.name}: data missing or all zero")
    return tensors, pos


def read_checkpoint(d: Path, sparse: bool):
    """All tensors of a model directory (sharded or single file), checking the index."""
    idx_path = d / "model.safetensors.index.json"
    on_disk = sorted(p.name for p in d.glob("*.safetensors"))
    if not idx_path.exists():
        check(on_disk == ["model.safetensors"], f"{d.name}: expected model.safetensors, found {on_disk}")
        tensors, data = read_safetensors(d / "model.safetensors", sparse)
        return tensors, data, ["model.safetensors"]
    index = json.loads(idx_path.read_text())
    wm = index["weight_map"]
    files = sorted(set(wm.values()))
    check(files == on_disk, f"{d.name}: weight_map files != shard files on disk")
    n = len(files)
    for k, fn in enumerate(files):
        m = re.fullmatch(r"model-(\d{5})-of-(\d{5,6})\.safetensors", fn)
        check(m and int(m.group(1)) == k + 1 and int(m.group(2)) == n, f"{d.name}: bad shard name {fn}")
    tensors, data = [], 0
    seen = {}
    for fn in files:
        ts, dl = read_safetensors(d / fn, sparse)
        data += dl
        for t in ts:
            check(t.name not in seen, f"{t.name} in two shards")
            seen[t.name] = fn
            check(wm.get(t.name) == fn, f"{t.name}: weight_map says {wm.get(t.name)}, found in {fn}")
        tensors += ts
    check(set(wm) == set(seen), f"{d.name}: weight_map names != tensors in shards")
    check(index["metadata"]["total_size"] == data, f"{d.name}: total_size {index['metadata']['total_size']} != {data}")
    return tensors, data, files


def checkpoint_only(cfg, t: Tensor) -> bool:
    """Checkpoint tensors that are not parameters of the instantiated model."""
    mt = cfg["model_type"]
    if mt == "gpt2":
        P = cfg["n_positions"]
        if re.fullmatch(r"h\.\d+\.attn\.bias", t.name):
            check(t.shape == [1, 1, P, P], f"{t.name}: causal mask shape {t.shape}")
            return True
    if mt == "deepseek_v3":
        m = re.match(r"model\.layers\.(\d+)\.", t.name)
        if m and int(m.group(1)) >= cfg["num_hidden_layers"]:
            return True
        return t.name.endswith(".e_score_correction_bias") or t.name.endswith(".weight_scale_inv")
    return False


def check_fp8(cfg, by_name):
    qc = cfg.get("quantization_config") or {}
    if qc.get("quant_method") != "fp8":
        check(not any(t.dtype == "F8_E4M3" for t in by_name.values()), "FP8 tensor without fp8 config")
        return
    bo, bi = qc["weight_block_size"]
    for name, t in by_name.items():
        if t.dtype == "F8_E4M3":
            s = by_name.get(name[: -len("weight")] + "weight_scale_inv")
            if check(s is not None, f"{name}: FP8 weight without weight_scale_inv"):
                check(s.dtype == "F32" and s.shape == [-(-t.shape[0] // bo), -(-t.shape[1] // bi)],
                      f"{s.name}: {s.dtype} {s.shape} for weight {t.shape}")
        if name.endswith(".weight_scale_inv"):
            w = by_name.get(name[: -len("_scale_inv")])
            check(w is not None and w.dtype == "F8_E4M3", f"{name}: companion weight missing or not FP8")
        if re.search(r"(embed_tokens|norm|layernorm|mlp\.gate|lm_head|shared_head\.head|eh_proj)\.weight$", name):
            check(t.dtype != "F8_E4M3", f"{name}: should not be quantized")
    quantized = {re.sub(r"model\.layers\.\d+\.", "", n).split(".weight")[0]
                 for n, t in by_name.items() if t.dtype == "F8_E4M3"}
    quantized = {re.sub(r"experts\.\d+", "experts.*", q) for q in quantized}
    check(quantized == {"self_attn.q_a_proj", "self_attn.q_b_proj", "self_attn.kv_a_proj_with_mqa",
                        "self_attn.kv_b_proj", "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj",
                        "mlp.down_proj", "mlp.experts.*.gate_proj", "mlp.experts.*.up_proj",
                        "mlp.experts.*.down_proj", "mlp.shared_experts.gate_proj",
                        "mlp.shared_experts.up_proj", "mlp.shared_experts.down_proj"},
          f"set of quantized projections: {sorted(quantized)}")


def closed_form_params(cfg):
    """Parameter counts by formula (not by enumerating tensors) for llama and deepseek_v3."""
    mt = cfg["model_type"]
    H, V, L = cfg.get("hidden_size"), cfg.get("vocab_size"), cfg.get("num_hidden_layers")
    if mt == "llama" and not cfg.get("attention_bias") and not cfg.get("mlp_bias"):
        nH, nKV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
        hd = cfg.get("head_dim") or H // nH
        layer = 2 * H * nH * hd + 2 * H * nKV * hd + 3 * H * cfg["intermediate_size"] + 2 * H
        return V * H * (1 if cfg.get("tie_word_embeddings") else 2) + L * layer + H
    if mt == "deepseek_v3":
        nH, qr, kr = cfg["num_attention_heads"], cfg["q_lora_rank"], cfg["kv_lora_rank"]
        nope, rope, vh = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
        attn = (H * qr + qr + qr * nH * (nope + rope) + H * (kr + rope) + kr
                + kr * nH * (nope + vh) + nH * vh * H)
        dense = 3 * H * cfg["intermediate_size"]
        E, mI, S = cfg["n_routed_experts"], cfg["moe_intermediate_size"], cfg["n_shared_experts"]
        moe = E * H + (E + S) * 3 * H * mI
        k = cfg["first_k_dense_replace"]
        return 2 * V * H + H + L * (attn + 2 * H) + k * dense + (L - k) * moe
    return None


def check_model(d: Path, sparse: bool):
    print(f"{d}:")
    before = failures
    cfg = json.loads((d / "config.json").read_text())
    exp = json.loads((d / "EXPECTED.json").read_text())
    tensors, data, files = read_checkpoint(d, sparse)
    by_name = {t.name: t for t in tensors}
    dtypes = {}
    for t in tensors:
        dtypes[t.dtype] = dtypes.get(t.dtype, 0) + t.numel
    total = sum(t.numel for t in tensors)
    only = sum(t.numel for t in tensors if checkpoint_only(cfg, t))
    check(exp["num_tensors"] == len(tensors), f"num_tensors {exp['num_tensors']} != {len(tensors)}")
    check(exp["dtypes"] == dtypes, f"dtypes {exp['dtypes']} != {dtypes}")
    check(exp["total_size"] == data, "total_size")
    check(exp["checkpoint_numel"] == total, "checkpoint_numel")
    check(exp["files"] == files, "files")
    check(exp["checkpoint_only_numel"] == only, f"checkpoint_only_numel {exp['checkpoint_only_numel']} != {only}")
    check(sum(exp["checkpoint_only_breakdown"].values()) == only, "checkpoint_only_breakdown sum")
    check(exp["num_params"] + only == total, "num_params + checkpoint_only_numel != checkpoint numel")
    check(exp["model_type"] == cfg["model_type"], "model_type")
    if cfg["model_type"] != "toyformer":
        tied = cfg.get("tie_word_embeddings", TIE_DEFAULT.get(cfg["model_type"], False))
        heads = [h for h in HEAD_NAMES if h in by_name]
        check(heads == [] if tied else len(heads) == 1, f"tie_word_embeddings={tied} but heads {heads}")
    check_fp8(cfg, by_name)
    cf = closed_form_params(cfg)
    if cf is not None:
        check(cf == exp["num_params"], f"closed-form params {cf:,} != EXPECTED {exp['num_params']:,}")
    if sparse and cfg["model_type"] == "deepseek_v3":
        last = files[-1]
        L = cfg["num_hidden_layers"]
        for s in ("enorm", "hnorm", "eh_proj", "embed_tokens", "shared_head.norm", "shared_head.head"):
            check(by_name[f"model.layers.{L}.{s}.weight"].file == last, f"MTP {s} not in the last shard")
    # layer order: a shard never holds a lower layer than an earlier shard
    if len(files) > 1:
        top = -1
        for fn in files:
            layers = [int(m.group(1)) for t in tensors if t.file == fn
                      for m in [re.search(r"layers\.(\d+)\.", t.name)] if m]
            if layers:
                check(min(layers) >= top, f"{fn}: layers out of order")
                top = max(layers)
    print(f"  {len(tensors):,} tensors in {len(files)} file(s), num_params {exp['num_params']:,}"
          + (f" (closed form agrees)" if cf is not None else "")
          + f", checkpoint-only {only:,} -> {'ok' if failures == before else 'FAILED'}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tiny", type=Path, default=Path(__file__).resolve().parent.parent / "fixtures/models")
    ap.add_argument("--sparse", type=Path)
    args = ap.parse_args()
    for root, sparse in ((args.tiny, False), (args.sparse, True)):
        if root is None:
            continue
        dirs = sorted(p.parent for p in root.glob("*/config.json"))
        check(dirs, f"no fixtures under {root}")
        for d in dirs:
            check_model(d, sparse)
    if args.sparse:
        llama = json.loads((args.sparse / "llama-3.1-405b/EXPECTED.json").read_text())
        check(llama["num_params"] == 405_853_388_800, f"Llama-3.1-405B params {llama['num_params']:,}")
        ds = json.loads((args.sparse / "deepseek-v3/EXPECTED.json").read_text())
        check(670.5e9 < ds["num_params"] < 671.5e9, f"DeepSeek-V3 main params {ds['num_params']:,} not ~671B")
    print("ALL OK" if failures == 0 else f"{failures} FAILURE(S)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
