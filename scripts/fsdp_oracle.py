#!/usr/bin/python3
"""FSDP1 oracle: expected auto-wrap units, flat-parameter layouts and sharding from REAL PyTorch.

Dev-time tool (CI never needs torch). It runs Debian's python3-torch 1.13.1 FSDP1 on CPU with gloo
and writes the expected values that shardcheck's simulator must reproduce to fixtures/oracle/.

  scripts/oracle_setup.sh                 # once: install python3-torch, fix metadata.py for 3.11
  scripts/build.sh release                # the oracle reads module trees from build/shardcheck
  /usr/bin/python3 scripts/fsdp_oracle.py # regenerate everything (about 30 s on 2 busy cores)

Options: --list (print the cases), --only GLOB (regenerate matching cases only; others are kept),
--shardcheck PATH, --rules DIR (passed to shardcheck), --out DIR, --start-method fork|spawn.
Exit status 1 when a fixture model was skipped (its old files are then kept, not deleted).

How it works
  * Module trees. A fixture model's tree is `shardcheck inspect DIR --format json` (pre-order,
    children and parameters in registration order, `tied_to` for aliases, `buffer` for buffers).
    Toy trees are written in the same format below (with two extensions: `requires_grad` on a
    parameter and `same_as` on a module that is the same object as an earlier one). Every tree
    that was used is saved to fixtures/oracle/trees/<name>.json so a test can see what the oracle
    saw.
  * The tree is rebuilt as torch modules: one Python class per class name (`type(name, bases, {})`,
    bases from the tree's optional `class_chains`, else nn.Module; class "ModuleList"/"ModuleDict"
    are the real torch containers; "MultiheadAttention" and "BatchNorm*" derive from the torch
    classes so that the size policy's force-leaf check and the BN override see them). Children,
    parameters and buffers are registered in the tree's order. A tied parameter is the SAME
    nn.Parameter object. Parameters are float32 unless the case says `param_dtype: "as_tree"`.
  * Each world size W runs once: torch.multiprocessing.start_processes of W processes (fork by
    default, spawn on request: identical results), gloo, a free port;
    every process runs all cases of that W in order, wraps a fresh model with FSDP and writes
    what it sees per unit; the parent merges the ranks (asserting they agree) and writes
    fixtures/oracle/<case>.json. Fields are documented in fixtures/oracle/README.md.
"""
from __future__ import annotations

import argparse
import fnmatch
import functools
import json
import os
import socket
import re
import subprocess
import sys
import tempfile
import time
import warnings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_VERSION = "1.13.1"  # Debian python3-torch 1.13.1+dfsg-4 (torch.__version__ says 1.13.0a0)

# Fixture models used for cases: (tree name, fixtures/models/<dir>, extra `shardcheck inspect`
# arguments, full case set?). A model whose inspect fails or falls back to guessed classes is
# skipped (stderr says why). The 4.x variants of the MoE models have ModuleList experts (5.x fuses
# them). DeepSeek-V3 is read --config-only: its fixture checkpoint stores per-expert FP8 scales
# that the registry's fused layout does not match yet (inspect exit 9), and the tree is the same.
FIXTURE_MODELS = [
    ("llama", "llama", [], True),
    ("gpt2", "gpt2", [], True),
    ("qwen2", "qwen2", [], True),
    ("mixtral", "mixtral", [], True),
    ("mixtral@4.46.0", "mixtral", ["--transformers-version", "4.46.0"], False),
    ("qwen3_moe", "qwen3_moe", [], True),
    ("qwen3_moe@4.57.0", "qwen3_moe", ["--transformers-version", "4.57.0"], False),
    ("deepseek_v3", "deepseek_v3", ["--config-only"], True),
]

STRATEGY_TAG = {"FULL_SHARD": "full", "SHARD_GRAD_OP": "sgo", "NO_SHARD": "noshard"}


# --------------------------------------------------------------------------------------------
# Trees
# --------------------------------------------------------------------------------------------

def inspect_tree(name: str, model: str, extra: list, shardcheck: str, rules: str | None) -> dict:
    cmd = [shardcheck]
    if rules:
        cmd += ["--rules", rules]
    cmd += ["inspect", os.path.join("fixtures", "models", model), "--format", "json"] + list(extra)
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if res.returncode != 0:
        # Exit 9 etc.: the registry and the checkpoint disagree, so the tree is not the model's.
        raise RuntimeError(f"{' '.join(cmd)} exited {res.returncode}: {res.stderr.strip()[:300]}")
    doc = json.loads(res.stdout)
    fallback = [d["message"] for d in doc.get("diagnostics", []) if d.get("rule") in ("ARCH001", "ARCH003")]
    if fallback:
        # The registry does not describe this architecture (guessed classes or another
        # architecture's layout): not a tree worth freezing as an oracle input.
        raise RuntimeError(f"{' '.join(cmd)}: {fallback[0]}")
    modules = []
    for m in doc["modules"]:
        params = []
        for p in m["params"]:
            q = {"name": p["name"], "shape": p["shape"], "dtype": p["dtype"]}
            if p.get("tied_to"):
                q["tied_to"] = p["tied_to"]
            if p.get("buffer"):
                q["buffer"] = True
            params.append(q)
        modules.append({"path": m["path"], "class": m["class"], "params": params})
    return {
        "name": name,
        "source": "shardcheck " + " ".join(cmd[cmd.index("inspect"):]),
        "transformers_version": doc.get("transformers_version"),
        "architecture": doc.get("architecture"),
        "model_type": doc.get("model_type"),
        "classes_guessed": doc.get("classes_guessed"),
        "no_split_modules": doc.get("no_split_modules", []),
        "tied": doc.get("tied", []),
        "modules": modules,
    }


def P(name, shape, dtype="F32", tied_to=None, requires_grad=None, buffer=False):
    p = {"name": name, "shape": list(shape), "dtype": dtype}
    if tied_to:
        p["tied_to"] = tied_to
    if requires_grad is not None:
        p["requires_grad"] = requires_grad
    if buffer:
        p["buffer"] = True
    return p


def M(path, cls, *params, same_as=None):
    m = {"path": path, "class": cls, "params": list(params)}
    if same_as is not None:
        m["same_as"] = same_as
    return m


def lin(path, out_f, in_f, bias=True, cls="Linear", dtype="F32", rg=None):
    ps = [P("weight", (out_f, in_f), dtype, requires_grad=rg)]
    if bias:
        ps.append(P("bias", (out_f,), dtype, requires_grad=rg))
    return M(path, cls, *ps)


def toy(name, doc, modules, class_chains=None):
    t = {"name": name, "source": "toy (scripts/fsdp_oracle.py)", "doc": doc, "modules": modules}
    if class_chains:
        t["class_chains"] = class_chains
    return t


def toy_trees() -> dict:
    T = {}

    # Nested matching classes: a Block inside a Block, and SubBlock (a subclass of Block).
    mods = [M("", "ToyNet"), M("emb", "Embedding", P("weight", (11, 5))), M("blocks", "ModuleList")]
    for i in range(2):
        b = f"blocks.{i}"
        mods += [M(b, "Block"), lin(f"{b}.lin", 8, 8), M(f"{b}.inner", "SubBlock"),
                 lin(f"{b}.inner.lin", 6, 6), M(f"{b}.inner.norm", "Norm", P("weight", (5,)))]
    mods += [M("norm", "Norm", P("weight", (5,))), lin("head", 11, 5, bias=False)]
    T["toy_nested"] = toy("toy_nested", "Block contains SubBlock (class chain SubBlock -> Block): "
                          "nested matching classes, inner unit first", mods,
                          {"SubBlock": ["SubBlock", "Block"]})

    # A shared module registered twice under the SAME parent (root.a is root.b).
    T["toy_shared_module"] = toy("toy_shared_module", "one Block object registered as root.a and "
                                 "root.b (same parent)", [
        M("", "ToyNet"), M("a", "Block"), M("a.lin", "Linear", P("weight", (13, 5))),
        M("b", "Block", same_as="a"), lin("head", 4, 5)])

    # A shared module registered under two DIFFERENT parents (x.blk is y.blk).
    T["toy_shared_module_xparent"] = toy("toy_shared_module_xparent", "one Block object registered "
                                         "as x.blk and y.blk (different parents)", [
        M("", "ToyNet"), M("x", "Holder"), M("x.blk", "Block"),
        M("x.blk.lin", "Linear", P("weight", (13, 5))), M("y", "Holder"),
        M("y.blk", "Block", same_as="x.blk"), lin("head", 4, 5)])

    # Tied embedding / head.
    def tied_model(name, doc):
        mods = [M("", "ToyLM"), M("emb", "Embedding", P("weight", (11, 5))), M("layers", "ModuleList")]
        for i in range(2):
            mods += [M(f"layers.{i}", "Block"), lin(f"layers.{i}.lin", 5, 5),
                     M(f"layers.{i}.norm", "Norm", P("weight", (5,)))]
        mods += [M("norm", "Norm", P("weight", (5,))),
                 M("head", "LMHead", P("weight", (11, 5), tied_to="emb.weight"))]
        return toy(name, doc, mods)
    T["toy_tied"] = tied_model("toy_tied", "emb.weight is head.weight (same nn.Parameter)")

    # A parameter registered twice on the same module (weight and weight_alias are one object).
    T["toy_tied_same_module"] = toy("toy_tied_same_module", "m.weight_alias is m.weight", [
        M("", "ToyNet"), M("m", "Proj", P("weight", (7, 3)), P("weight_alias", (7, 3), tied_to="m.weight"),
                           P("bias", (7,))),
        M("n", "Norm", P("weight", (7,)))])

    # Size policy: nesting, remainders pushed to the parent, ModuleList never a unit.
    mods = [M("", "ToyNet"), M("embed", "Embedding", P("weight", (100, 4))), M("layers", "ModuleList")]
    for i in range(3):
        L = f"layers.{i}"
        mods += [M(L, "Layer"), M(f"{L}.attn", "Attn"), lin(f"{L}.attn.q", 10, 10), lin(f"{L}.attn.o", 10, 10),
                 M(f"{L}.mlp", "MLP"), lin(f"{L}.mlp.up", 30, 10, bias=False), lin(f"{L}.mlp.down", 10, 30, bias=False),
                 M(f"{L}.norm1", "Norm", P("weight", (10,))), M(f"{L}.norm2", "Norm", P("weight", (10,)))]
    mods += [M("final_norm", "Norm", P("weight", (10,))), lin("head", 100, 10, bias=False)]
    T["toy_size"] = toy("toy_size", "embed 400; 3 x Layer 840 (attn 220 = q 110 + o 110, mlp 600 = "
                        "up 300 + down 300, norms 10+10); final_norm 10; head 1000; total 3930", mods)

    # Containers under the size policy: ModuleList / ModuleDict are never units, a plain Module is.
    mods = [M("", "ToyNet"), M("experts", "ModuleList")]
    for i in range(4):
        mods += [lin(f"experts.{i}", 10, 9)]          # 100 each
    mods += [M("heads", "ModuleDict"), lin("heads.a", 15, 9), lin("heads.b", 15, 9)]   # 150 each
    mods += [M("group", "ExpertGroup")]
    for i in range(4):
        mods += [lin(f"group.{i}", 10, 9)]
    mods += [M("norm", "Norm", P("weight", (9,)))]
    T["toy_containers"] = toy("toy_containers", "experts: ModuleList of 4 x 100; heads: ModuleDict "
                              "{a: 150, b: 150}; group: plain Module with 4 x 100; norm 9", mods)

    # MultiheadAttention (force leaf for the size policy), optionally with a BatchNorm.
    mha = [M("mha", "MultiheadAttention", P("in_proj_weight", (48, 16)), P("in_proj_bias", (48,))),
           lin("mha.out_proj", 16, 16, cls="NonDynamicallyQuantizableLinear")]
    T["toy_mha"] = toy("toy_mha", "mha = MultiheadAttention(16, 2) (1088: in_proj 816 + out_proj 272), "
                       "lin 272", [M("", "ToyNet")] + mha + [lin("lin", 16, 16)])
    T["toy_mha_bn"] = toy("toy_mha_bn", "toy_mha plus bn = BatchNorm1d(16) (weight, bias; buffers)",
                          [M("", "ToyNet")] + mha + [
                              M("bn", "BatchNorm1d", P("weight", (16,)), P("bias", (16,)),
                                P("running_mean", (16,), buffer=True), P("running_var", (16,), buffer=True),
                                P("num_batches_tracked", (), "I64", buffer=True)),
                              lin("lin", 16, 16)])

    # Modules without parameters, units that own nothing, the root owning nothing.
    mods = [M("", "ToyNet"), M("blocks", "ModuleList")]
    for i in range(2):
        mods += [M(f"blocks.{i}", "Block"), lin(f"blocks.{i}.lin", 4, 4), M(f"blocks.{i}.act", "Act")]
    mods += [M("empty", "EmptyBlock"), M("empty.act", "Act")]
    T["toy_zero_param"] = toy("toy_zero_param", "2 x Block(lin 20, act: Act without params); "
                              "empty: EmptyBlock (a Block) holding only an Act; the root owns no parameter",
                              mods, {"EmptyBlock": ["EmptyBlock", "Block"]})

    # Frozen parameters.
    mods = [M("", "ToyNet"), M("emb", "Embedding", P("weight", (11, 5), requires_grad=False)),
            M("layers", "ModuleList")]
    for i in range(2):
        mods += [M(f"layers.{i}", "Block"), lin(f"layers.{i}.lin", 5, 5)]
    mods += [M("mixblock", "MixBlock"), lin("mixblock.lin", 5, 5),
             M("mixblock.norm", "Norm", P("weight", (5,), requires_grad=False)),
             lin("head", 3, 5, bias=False)]
    T["toy_frozen"] = toy("toy_frozen", "emb frozen; 2 x Block trainable; mixblock: trainable lin + "
                          "frozen norm; head trainable", mods)

    # Mixed dtypes.
    mods = [M("", "ToyNet"), M("emb", "Embedding", P("weight", (11, 5))), M("layers", "ModuleList")]
    for i in range(2):
        mods += [M(f"layers.{i}", "Block"), lin(f"layers.{i}.lin", 5, 5, dtype="BF16")]
    mods += [M("f64block", "F64Block"), lin("f64block.a", 5, 5), lin("f64block.b", 5, 5, dtype="F64"),
             lin("head", 3, 5, bias=False)]
    T["toy_mixed_dtype"] = toy("toy_mixed_dtype", "emb F32; 2 x Block with BF16 lin; f64block: F32 a "
                               "then F64 b; head F32", mods)
    T["toy_int_param"] = toy("toy_int_param", "first parameter is an int64 (frozen) tensor", [
        M("", "ToyNet"), M("table", "Table", P("index", (4,), "I64", requires_grad=False)),
        lin("lin", 3, 4)])

    # Padding arithmetic: units of exactly 65, 55, 6 and 1 elements.
    T["toy_padding"] = toy("toy_padding", "four Piece units with 65, 55, 6 and 1 elements", [
        M("", "ToyNet"), M("a", "Piece", P("weight", (13, 5))), M("b", "Piece", P("weight", (11, 5))),
        M("c", "Piece", P("weight", (3, 2))), M("d", "Piece", P("weight", (1,)))])
    return T


def subtree_numel(tree: dict, path: str) -> int:
    pre = path + "." if path else ""
    seen, n = set(), 0
    for m in tree["modules"]:
        if m["path"] == path or m["path"].startswith(pre):
            for p in m["params"]:
                if p.get("buffer") or p.get("tied_to"):
                    continue
                key = (m["path"], p["name"])
                if key not in seen:
                    seen.add(key)
                    k = 1
                    for d in p["shape"]:
                        k *= d
                    n += k
    return n


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------

def case(name, model, tree, W, policy, strategy="FULL_SHARD", param_dtype="float32", mixed_precision=None,
         note=None, ignored_modules=None):
    c = {"case": name, "model": model, "tree": tree, "world_size": W, "policy": policy,
         "sharding_strategy": strategy, "param_dtype": param_dtype}
    if ignored_modules:
        c["ignored_modules"] = ignored_modules
    if mixed_precision:
        c["mixed_precision"] = mixed_precision
    if note:
        c["note"] = note
    return c


def tf(*classes):
    return {"kind": "transformer", "classes": list(classes)}


def size(n):
    return {"kind": "size", "min_num_params": int(n)}


NONE = {"kind": "none"}


def model_cases(name: str, tree: dict, full: bool = True) -> list:
    """A covering subset per fixture model. Thresholds are derived from the tree so that the size
    cases nest (layer-sized: every layer a unit; sub-layer-sized: attention/MLP units with the
    layer remainder pushed up; leaf-sized: many small units)."""
    model = tree["fixture"]
    nsm = tree["no_split_modules"]
    mods = tree["modules"]
    layer = next((m for m in mods if m["class"] in nsm), None)
    cs = []
    if not nsm or layer is None:
        return cs
    cls = nsm[0]
    cs.append(case(f"{name}-tf-full-w3", model, name, 3, tf(*nsm)))
    if full:
        cs += [case(f"{name}-tf-full-w2", model, name, 2, tf(*nsm)),
               case(f"{name}-tf-sgo-w4", model, name, 4, tf(*nsm), "SHARD_GRAD_OP"),
               case(f"{name}-tf-noshard-w2", model, name, 2, tf(*nsm), "NO_SHARD"),
               case(f"{name}-none-full-w7", model, name, 7, NONE)]
    # Two classes: the decoder layer and its attention module.
    lp = layer["path"]
    kids = [m for m in mods if m["path"].startswith(lp + ".") and "." not in m["path"][len(lp) + 1:]]
    attn = next((k for k in kids if "attn" in k["path"].rsplit(".", 1)[-1].lower()
                 or "attention" in k["class"].lower()), None)
    if attn is not None and attn["class"] not in (cls, "Module"):
        cs.append(case(f"{name}-tf2-full-w3", model, name, 3, tf(cls, attn["class"])))
    # MoE with a ModuleList of expert modules: also wrap each expert (units nested in a ModuleList).
    ex = next((m for m in mods if m["path"].startswith(lp + ".") and m["path"].endswith(".experts.0")), None)
    if ex is not None and ex["class"] not in (cls, "Module"):
        cs.append(case(f"{name}-tfexperts-full-w5", model, name, 5, tf(cls, ex["class"])))
    # Size thresholds.
    n_layer = subtree_numel(tree, lp)
    kid_numels = sorted((subtree_numel(tree, k["path"]) for k in kids), reverse=True)
    leaves = sorted(subtree_numel(tree, m["path"]) for m in mods
                    if m["path"].startswith(lp + ".") and m["params"] and
                    not any(o["path"].startswith(m["path"] + ".") for o in mods))
    cs.append(case(f"{name}-size-layer-full-w5", model, name, 5, size(n_layer),
                   note="min_num_params = numel of one decoder layer"))
    if len(kid_numels) >= 2 and kid_numels[1] > 0:
        cs.append(case(f"{name}-size-sub-full-w3", model, name, 3, size(kid_numels[1]),
                       note="min_num_params = numel of the 2nd largest child of a decoder layer"))
    if leaves:
        cs.append(case(f"{name}-size-leaf-sgo-w6", model, name, 6, size(leaves[len(leaves) // 2]),
                       "SHARD_GRAD_OP", note="min_num_params = median leaf-module numel in a decoder layer"))
    return cs


def extra_model_cases(trees: dict) -> list:
    cs = []
    if "llama" in trees:
        nsm = trees["llama"]["no_split_modules"]
        cs += [case("llama-tf-full-w1", "fixtures/models/llama", "llama", 1, tf(*nsm),
                    note="world size 1: 1.13 silently clamps to NO_SHARD"),
               case("llama-tf-full-w8", "fixtures/models/llama", "llama", 8, tf(*nsm)),
               # accelerate's fsdp_ignored_modules: a regex re.fullmatch-ed against module names.
               case("llama-tf-ignore-embed-w3", "fixtures/models/llama", "llama", 3, tf(*nsm),
                    ignored_modules=r"model\.embed_tokens"),
               case("llama-tf-ignore-layer1-w3", "fixtures/models/llama", "llama", 3, tf(*nsm),
                    ignored_modules=r"model\.layers\.1"),
               case("llama-size-ignore-mlps-w5", "fixtures/models/llama", "llama", 5, size(1000),
                    ignored_modules=r"model\.layers\.\d+\.mlp"),
               case("llama-size-layer-noshard-w3", "fixtures/models/llama", "llama", 3,
                    size(subtree_numel(trees["llama"], next(m["path"] for m in trees["llama"]["modules"]
                                                             if m["class"] in nsm))), "NO_SHARD")]
    for n in ("deepseek_v3", "mixtral"):
        if n in trees and trees[n]["no_split_modules"]:
            cs.append(case(f"{n}-tf-full-w8", f"fixtures/models/{n}", n, 8, tf(*trees[n]["no_split_modules"])))
    return cs


def toy_cases() -> list:
    C = []
    t = lambda n: n  # tree name == model name for toys
    C += [case("toy_nested-tf-full-w3", "toy_nested", t("toy_nested"), 3, tf("Block")),
          case("toy_nested-tf-sgo-w4", "toy_nested", "toy_nested", 4, tf("Block"), "SHARD_GRAD_OP"),
          case("toy_nested-tfsub-full-w3", "toy_nested", "toy_nested", 3, tf("SubBlock")),
          case("toy_nested-tfemb-full-w2", "toy_nested", "toy_nested", 2, tf("Block", "Embedding")),
          case("toy_shared_module-tf-full-w3", "toy_shared_module", "toy_shared_module", 3, tf("Block")),
          case("toy_shared_module_xparent-tf-full-w3", "toy_shared_module_xparent",
               "toy_shared_module_xparent", 3, tf("Block")),
          case("toy_tied-tf-full-w7", "toy_tied", "toy_tied", 7, tf("Block"),
               note="tie inside the root unit"),
          case("toy_tied-none-full-w3", "toy_tied", "toy_tied", 3, NONE),
          case("toy_tied-tfemb-full-w3", "toy_tied", "toy_tied", 3, tf("Block", "Embedding"),
               note="emb is a unit, head stays in the root: the tied weight is flattened twice"),
          case("toy_tied-tfhead-full-w3", "toy_tied", "toy_tied", 3, tf("Block", "LMHead"),
               note="head is a unit, emb stays in the root: the tied weight is flattened twice"),
          case("toy_tied-tfemb-noshard-w2", "toy_tied", "toy_tied", 2, tf("Embedding"), "NO_SHARD"),
          case("toy_tied_same_module-none-full-w2", "toy_tied_same_module", "toy_tied_same_module", 2, NONE),
          case("toy_tied_same_module-tf-full-w3", "toy_tied_same_module", "toy_tied_same_module", 3, tf("Proj"))]
    for n, s, W in ((840, "FULL_SHARD", 3), (600, "FULL_SHARD", 4), (200, "FULL_SHARD", 5),
                    (200, "SHARD_GRAD_OP", 2), (3930, "FULL_SHARD", 3), (3931, "FULL_SHARD", 2),
                    (839, "NO_SHARD", 3), (1, "FULL_SHARD", 6)):
        C.append(case(f"toy_size-size{n}-{STRATEGY_TAG[s]}-w{W}", "toy_size", "toy_size", W, size(n), s))
    C += [case("toy_size-none-full-w5", "toy_size", "toy_size", 5, NONE),
          case("toy_size-tf-full-w3", "toy_size", "toy_size", 3, tf("Layer", "MLP"))]
    C += [case("toy_containers-size120-full-w3", "toy_containers", "toy_containers", 3, size(120)),
          case("toy_containers-size90-full-w4", "toy_containers", "toy_containers", 4, size(90)),
          case("toy_containers-tf-full-w3", "toy_containers", "toy_containers", 3, tf("ModuleList", "ModuleDict"),
               note="the transformer policy does wrap containers when asked to")]
    C += [case("toy_mha-size100-full-w2", "toy_mha", "toy_mha", 2, size(100)),
          case("toy_mha-size1088-full-w3", "toy_mha", "toy_mha", 3, size(1088)),
          case("toy_mha-tf-full-w3", "toy_mha", "toy_mha", 3, tf("MultiheadAttention"),
               note="the transformer policy may wrap MultiheadAttention"),
          case("toy_mha_bn-size100-full-w2", "toy_mha_bn", "toy_mha_bn", 2, size(100)),
          case("toy_mha_bn-size100-mp-full-w2", "toy_mha_bn", "toy_mha_bn", 2, size(100),
               mixed_precision={"param_dtype": "bfloat16", "reduce_dtype": "bfloat16",
                                "buffer_dtype": "bfloat16"},
               note="1.13: mixed precision + a _BatchNorm => OR(_wrap_batchnorm_individually, policy); "
                    "the OR always recurses, so the force-leaf MultiheadAttention is entered"),
          case("toy_mha_bn-tf-mp-full-w3", "toy_mha_bn", "toy_mha_bn", 3, tf("NonDynamicallyQuantizableLinear"),
               mixed_precision={"param_dtype": "bfloat16"})]
    C += [case("toy_zero_param-tf-full-w2", "toy_zero_param", "toy_zero_param", 2, tf("Block", "Act")),
          case("toy_zero_param-tfblock-full-w3", "toy_zero_param", "toy_zero_param", 3, tf("Block")),
          case("toy_zero_param-size1-full-w3", "toy_zero_param", "toy_zero_param", 3, size(1))]
    C += [case("toy_frozen-tf-full-w2", "toy_frozen", "toy_frozen", 2, tf("Block"),
               note="root holds frozen emb and trainable head/mixblock"),
          case("toy_frozen-tfemb-full-w2", "toy_frozen", "toy_frozen", 2, tf("Block", "Embedding", "MixBlock"),
               note="mixblock mixes frozen and trainable inside one unit"),
          case("toy_frozen-tfok-full-w3", "toy_frozen", "toy_frozen", 3, tf("Block", "Embedding", "Norm"),
               note="every unit is uniformly frozen or trainable")]
    C += [case("toy_mixed_dtype-tf-full-w2", "toy_mixed_dtype", "toy_mixed_dtype", 2, tf("Block", "Linear"),
               param_dtype="as_tree", note="every unit uniform: BF16 units next to F32 and F64 units"),
          case("toy_mixed_dtype-tfblock-full-w2", "toy_mixed_dtype", "toy_mixed_dtype", 2, tf("Block", "F64Block"),
               param_dtype="as_tree", note="f64block mixes F32 and F64"),
          case("toy_mixed_dtype-none-full-w2", "toy_mixed_dtype", "toy_mixed_dtype", 2, NONE,
               param_dtype="as_tree", note="the root mixes F32 and BF16"),
          case("toy_int_param-none-full-w2", "toy_int_param", "toy_int_param", 2, NONE, param_dtype="as_tree")]
    for W in range(1, 9):
        C.append(case(f"toy_padding-tf-full-w{W}", "toy_padding", "toy_padding", W, tf("Piece")))
    C += [case("toy_padding-tf-sgo-w3", "toy_padding", "toy_padding", 3, tf("Piece"), "SHARD_GRAD_OP"),
          case("toy_padding-tf-noshard-w3", "toy_padding", "toy_padding", 3, tf("Piece"), "NO_SHARD"),
          case("toy_padding-none-full-w8", "toy_padding", "toy_padding", 8, NONE)]
    return C


# --------------------------------------------------------------------------------------------
# Worker side (runs in every spawned process; imports torch)
# --------------------------------------------------------------------------------------------

DTYPES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "F64": "float64", "I64": "int64",
          "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool"}


def build_model(tree: dict, param_dtype: str):
    import torch
    import torch.nn as nn

    special = {"ModuleList": nn.ModuleList, "ModuleDict": nn.ModuleDict}
    torch_bases = {"MultiheadAttention": nn.MultiheadAttention, "BatchNorm1d": nn.BatchNorm1d,
                   "BatchNorm2d": nn.BatchNorm2d, "BatchNorm3d": nn.BatchNorm3d,
                   "SyncBatchNorm": nn.SyncBatchNorm}
    chains = tree.get("class_chains", {})
    classes: dict = {}

    def plain_init(self):
        nn.Module.__init__(self)

    def cls_for(name):
        if name in special:
            return special[name]
        if name in classes:
            return classes[name]
        chain = chains.get(name, [name])
        if len(chain) > 1:
            base = cls_for(chain[1])
        else:
            base = torch_bases.get(name, nn.Module)
        if base in special.values():
            c = type(name, (base,), {})
        else:
            c = type(name, (base,), {"__init__": plain_init, "forward": lambda self, *a, **k: None})
        classes[name] = c
        return c

    def tensor_for(p):
        dt = getattr(torch, DTYPES[p["dtype"]]) if (param_dtype == "as_tree" or p.get("buffer")) \
            else getattr(torch, param_dtype)
        return torch.zeros(p["shape"], dtype=dt)

    mods = tree["modules"]
    # Pass 1: every parameter with its own storage.
    storage = {}
    for m in mods:
        for p in m["params"]:
            if p.get("buffer") or p.get("tied_to"):
                continue
            fq = f"{m['path']}.{p['name']}" if m["path"] else p["name"]
            t = tensor_for(p)
            rg = p.get("requires_grad", True) and t.is_floating_point()
            storage[fq] = nn.Parameter(t, requires_grad=rg)

    def resolve(fq, depth=0):
        if fq in storage:
            return storage[fq]
        for m in mods:
            for p in m["params"]:
                if (f"{m['path']}.{p['name']}" if m["path"] else p["name"]) == fq and p.get("tied_to") and depth < 16:
                    return resolve(p["tied_to"], depth + 1)
        raise KeyError(f"tied_to target {fq} not found")

    # Pass 2: modules in pre-order; attach each to its parent in order (registration order).
    objs = {}
    for m in mods:
        path = m["path"]
        if "same_as" in m:
            obj = objs[m["same_as"]]
        else:
            obj = cls_for(m["class"])()
            for p in m["params"]:
                if p.get("buffer"):
                    obj.register_buffer(p["name"], tensor_for(p))
                elif p.get("tied_to"):
                    obj.register_parameter(p["name"], resolve(p["tied_to"]))
                else:
                    obj.register_parameter(p["name"], storage[f"{path}.{p['name']}" if path else p["name"]])
        objs[path] = obj
        if path:
            parent, _, name = path.rpartition(".")
            objs[parent].add_module(name, obj)
    return objs[""], classes, cls_for


WRAPPER_PARTS = ("_fsdp_wrapped_module", "_fpw_module")


def clean(name: str) -> str:
    return ".".join(x for x in name.split(".") if x and x not in WRAPPER_PARTS)


def join(a, b):
    return f"{a}.{b}" if a and b else (a or b)


def run_case(c: dict, trees: dict) -> dict:
    import torch
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy, MixedPrecision
    from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy, transformer_auto_wrap_policy

    root, classes, cls_for = build_model(trees[c["tree"]], c["param_dtype"])
    pol = c["policy"]
    if pol["kind"] == "transformer":
        missing = [n for n in pol["classes"] if n not in classes and n not in ("ModuleList", "ModuleDict")]
        if missing:
            raise RuntimeError(f"case {c['case']}: classes {missing} not in the model")
        policy = functools.partial(transformer_auto_wrap_policy,
                                   transformer_layer_cls={cls_for(n) for n in pol["classes"]})
    elif pol["kind"] == "size":
        policy = functools.partial(size_based_auto_wrap_policy, min_num_params=pol["min_num_params"])
    else:
        policy = None
    ignored = None
    if c.get("ignored_modules"):  # accelerate utils/dataclasses.py: re.fullmatch over named_modules()
        ignored = [m for n, m in root.named_modules() if re.fullmatch(c["ignored_modules"], n)]
    mp = None
    if c.get("mixed_precision"):
        mp = MixedPrecision(**{k: getattr(torch, v) for k, v in c["mixed_precision"].items()})
    out: dict = {}
    # Which unit's construction raised: the innermost FSDP.__init__ that sees the exception.
    path_of = {id(m): n for n, m in root.named_modules()}
    failing: list = []
    orig_init = FSDP.__init__

    def init_spy(self, module, *a, **k):
        try:
            orig_init(self, module, *a, **k)
        except Exception:
            if not failing:
                failing.append(module)
            raise

    FSDP.__init__ = init_spy
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fsdp = FSDP(root, auto_wrap_policy=policy, sharding_strategy=ShardingStrategy[c["sharding_strategy"]],
                        mixed_precision=mp, ignored_modules=ignored)
        except Exception as e:  # the oracle records FSDP's own error
            out["error"] = str(e)
            out["error_type"] = type(e).__name__
            if failing:
                out["error_unit"] = path_of.get(id(failing[0]))
            fsdp = None
        finally:
            FSDP.__init__ = orig_init
    # FSDP warnings, deduplicated, without the CPU-only artifact ("Module is put on CPU ...", raised
    # because the oracle runs without a GPU; a real run passes device_id).
    ws = []
    for w in caught:
        msg = str(w.message)
        if "fsdp" in (w.filename or "").replace("\\", "/") and not msg.startswith("Module is put on CPU") \
                and msg not in ws:
            ws.append(msg)
    if ws:
        out["warnings"] = ws
    if fsdp is None:
        return out
    out["effective_sharding_strategy"] = fsdp.sharding_strategy.name
    units = []
    for name, m in fsdp.named_modules():
        if not isinstance(m, FSDP):
            continue
        path = clean(name)
        u = {"path": path, "class": type(m.module).__name__}
        if m.params:
            assert len(m.params) == 1
            fp = m.params[0]
            n_u = fp._unpadded_unsharded_size.numel()
            sharded = m.sharding_strategy != ShardingStrategy.NO_SHARD
            u.update({
                "numel": n_u,
                "shard_numel": fp.numel(),
                "padded_numel": m.world_size * fp.numel() if sharded else n_u,
                "params": [clean(join(path, x)) for x in fp._prefixed_param_names],
                "param_numels": list(fp._numels),
                "param_shapes": [list(s) for s in fp._shapes],
                "dtype": str(fp.dtype).replace("torch.", ""),
                "requires_grad": fp.requires_grad,
                "pad": getattr(fp, "_shard_numel_padded", 0) if sharded else 0,
            })
            shared = [[clean(join(path, join(s.module_name, s.param_name))),
                       clean(join(path, join(s.prim_module_name, s.prim_param_name)))]
                      for s in fp._shared_param_infos]
            if shared:
                u["shared_params"] = shared
            if sharded:
                u["shard_param_offsets"] = [list(x) for x in fp._shard_param_offsets]
                u["shard_indices"] = list(fp._shard_indices)
        else:
            u.update({"numel": 0, "shard_numel": 0, "padded_numel": 0, "params": [], "param_numels": [],
                      "param_shapes": [], "pad": 0})
        units.append(u)
    out["units"] = units
    return out


def worker(rank: int, W: int, cases: list, trees: dict, tmpdir: str, port: int):
    import datetime
    import torch
    import torch.distributed as dist
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    torch.set_num_threads(1)
    # FSDP1's parameter swapping makes c10 warn when the previous case's model is freed; harmless.
    warnings.filterwarnings("ignore", message="Deallocating Tensor that still has live PyObject")
    # 1.13 picks torch.cuda.current_device() as the compute device; this is a CPU-only machine.
    FSDP._get_compute_device = lambda self, *a, **k: torch.device("cpu")
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=W, timeout=datetime.timedelta(seconds=120))
    for c in cases:
        res = run_case(c, trees)
        with open(os.path.join(tmpdir, f"{c['case']}.rank{rank}.json"), "w") as f:
            json.dump(res, f)
        dist.barrier()
    dist.destroy_process_group()


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


RANK_KEYS = ("pad", "shard_param_offsets", "shard_indices")  # legitimately differ between ranks


def merge(c: dict, per_rank: list, trees: dict) -> dict:
    W = c["world_size"]
    r0 = per_rank[0]
    out = {"case": c["case"], "model": c["model"], "tree": f"trees/{c['tree']}.json"}
    if "inspect_args" in trees[c["tree"]]:
        out["inspect_args"] = trees[c["tree"]]["inspect_args"]
    out.update({"torch_version": TORCH_VERSION, "world_size": W})
    pol = dict(c["policy"])
    pol.setdefault("classes", [])
    pol.setdefault("min_num_params", None)
    out["policy"] = {"kind": pol["kind"], "classes": pol["classes"], "min_num_params": pol["min_num_params"]}
    out["sharding_strategy"] = c["sharding_strategy"]
    out["use_orig_params"] = False
    out["param_dtype"] = c["param_dtype"]
    out["mixed_precision"] = c.get("mixed_precision")
    if c.get("ignored_modules"):
        out["ignored_modules"] = c["ignored_modules"]
    if c.get("note"):
        out["note"] = c["note"]
    for r, res in enumerate(per_rank):
        a = {k: v for k, v in res.items() if k != "warnings"}
        b = {k: v for k, v in r0.items() if k != "warnings"}
        if "units" in a:
            a["units"] = [{k: v for k, v in u.items() if k not in RANK_KEYS} for u in a["units"]]
            b["units"] = [{k: v for k, v in u.items() if k not in RANK_KEYS} for u in b["units"]]
        if a != b:
            raise AssertionError(f"{c['case']}: rank {r} disagrees with rank 0:\n{json.dumps(a)}\n{json.dumps(b)}")
    ws = []
    for res in per_rank:
        ws += [w for w in res.get("warnings", []) if w not in ws]
    if ws:
        out["warnings"] = ws
    if "error" in r0:
        out["error"] = r0["error"]
        out["error_type"] = r0["error_type"]
        if "error_unit" in r0:
            out["error_unit"] = r0["error_unit"]
        return out
    out["effective_sharding_strategy"] = r0["effective_sharding_strategy"]
    units = []
    for i, u in enumerate(r0["units"]):
        v = {"path": u["path"], "class": u["class"], "numel": u["numel"], "padded_numel": u["padded_numel"],
             "shard_numel": u["shard_numel"], "params": u["params"], "param_numels": u["param_numels"],
             "param_shapes": u["param_shapes"]}
        for k in ("dtype", "requires_grad", "shared_params"):
            if k in u:
                v[k] = u[k]
        v["rank_pad"] = [res["units"][i]["pad"] for res in per_rank]
        if "shard_param_offsets" in u:
            v["rank_shard_indices"] = [res["units"][i]["shard_indices"] for res in per_rank]
            v["rank_shard_param_offsets"] = [res["units"][i]["shard_param_offsets"] for res in per_rank]
        # Cross-check against fsdp-semantics.md §2.5 (the oracle's own sanity; never silences torch).
        n, s = v["numel"], v["shard_numel"]
        if n and out["effective_sharding_strategy"] != "NO_SHARD":
            assert s == -(-n // W), (c["case"], v["path"], n, s)
            assert v["rank_pad"] == [s - min(max(n - r * s, 0), s) for r in range(W)], (c["case"], v["path"])
            offs, o = [], 0
            for k in v["param_numels"]:
                offs.append(o)
                o += k
            for r in range(W):
                want = [[max(o_i, r * s) - o_i, min(o_i + k - 1, (r + 1) * s - 1) - o_i]
                        for o_i, k in zip(offs, v["param_numels"])
                        if max(o_i, r * s) <= min(o_i + k - 1, (r + 1) * s - 1)]
                assert v["rank_shard_param_offsets"][r] == want, (c["case"], v["path"], r)
        assert sum(v["param_numels"]) == n, (c["case"], v["path"])
        units.append(v)
    out["units"] = units
    return out


def compact_dump(obj, f):
    """JSON with one unit per line: small diffs, still valid JSON."""
    if "units" not in obj:
        json.dump(obj, f, indent=1)
        f.write("\n")
        return
    head = {k: v for k, v in obj.items() if k != "units"}
    s = json.dumps(head, indent=1)
    s = s[:-2] + ',\n "units": [\n' + ",\n".join("  " + json.dumps(u) for u in obj["units"]) + "\n ]\n}\n"
    f.write(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shardcheck", default=os.path.join(REPO, "build", "shardcheck"))
    ap.add_argument("--rules", default=None, help="rules directory passed to shardcheck --rules")
    ap.add_argument("--out", default=os.path.join(REPO, "fixtures", "oracle"))
    ap.add_argument("--only", default=None, help="glob over case names; other fixtures are left alone")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--start-method", default="fork", choices=["fork", "spawn"],
                    help="torch.multiprocessing start method (spawn re-imports torch per process: slower)")
    args = ap.parse_args()

    t0 = time.time()
    trees = dict(toy_trees())
    models_ok, skipped = [], []
    cases = []
    for name, d, extra, full in FIXTURE_MODELS:
        try:
            trees[name] = inspect_tree(name, d, extra, args.shardcheck, args.rules)
            trees[name]["fixture"] = f"fixtures/models/{d}"
            trees[name]["inspect_args"] = list(extra)
            models_ok.append(name)
            cases += model_cases(name, trees[name], full)
        except Exception as e:  # noqa: BLE001
            print(f"oracle: skipping fixture model {name}: {e}", file=sys.stderr)
            skipped.append(name)
    cases += extra_model_cases({n: trees[n] for n in models_ok})
    cases += toy_cases()
    names = [c["case"] for c in cases]
    assert len(names) == len(set(names)), "duplicate case names"
    if args.only:
        cases = [c for c in cases if fnmatch.fnmatch(c["case"], args.only)]
    if args.list:
        for c in cases:
            p = c["policy"]
            ps = p["kind"] + (f" {','.join(p['classes'])}" if p.get("classes") else "") + \
                (f" min={p['min_num_params']}" if p.get("min_num_params") is not None else "")
            print(f"{c['case']:45s} W={c['world_size']} {c['sharding_strategy']:13s} {ps}")
        return

    import torch  # noqa: F401  (imported once here; forked workers inherit it)
    import torch.distributed.fsdp  # noqa: F401
    import torch.multiprocessing as mp

    os.makedirs(os.path.join(args.out, "trees"), exist_ok=True)
    used = sorted({c["tree"] for c in cases})
    for t in used:
        with open(os.path.join(args.out, "trees", f"{t}.json"), "w") as f:
            head = {k: v for k, v in trees[t].items() if k != "modules"}
            s = json.dumps(head, indent=1)
            f.write(s[:-2] + ',\n "modules": [\n' +
                    ",\n".join("  " + json.dumps(m) for m in trees[t]["modules"]) + "\n ]\n}\n")
    by_w: dict = {}
    for c in cases:
        by_w.setdefault(c["world_size"], []).append(c)
    written = []
    with tempfile.TemporaryDirectory(prefix="fsdp_oracle_") as tmp:
        for W in sorted(by_w):
            tw = time.time()
            sub = {c["tree"]: trees[c["tree"]] for c in by_w[W]}
            # fork: the parent has imported torch once (no process group), so workers start fast.
            mp.start_processes(worker, args=(W, by_w[W], sub, tmp, free_port()), nprocs=W, join=True,
                               start_method=args.start_method)
            for c in by_w[W]:
                per_rank = []
                for r in range(W):
                    with open(os.path.join(tmp, f"{c['case']}.rank{r}.json")) as f:
                        per_rank.append(json.load(f))
                res = merge(c, per_rank, trees)
                with open(os.path.join(args.out, f"{c['case']}.json"), "w") as f:
                    compact_dump(res, f)
                written.append(c["case"])
            print(f"oracle: W={W}: {len(by_w[W])} cases in {time.time() - tw:.1f}s", file=sys.stderr)
    if not args.only:
        # Stale files go, except those of a skipped fixture model (a broken build or registry
        # must not silently delete its expectations).
        keep = set(written)
        for fn in os.listdir(args.out):
            if fn.endswith(".json") and fn[:-5] not in keep and \
                    not any(fn.startswith(f"{n}-") for n in skipped):
                os.remove(os.path.join(args.out, fn))
        keep_t = set(used) | set(skipped)
        for fn in os.listdir(os.path.join(args.out, "trees")):
            if fn.endswith(".json") and fn[:-5] not in keep_t:
                os.remove(os.path.join(args.out, "trees", fn))
    print(f"oracle: {len(written)} cases written to {os.path.relpath(args.out, REPO)} in {time.time() - t0:.1f}s",
          file=sys.stderr)
    if skipped:
        print(f"oracle: SKIPPED fixture models (old files kept): {', '.join(skipped)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
