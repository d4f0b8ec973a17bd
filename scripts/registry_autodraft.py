#!/usr/bin/python3
"""Drafts a registry file by building the model many times with transformers and fitting formulas.

Dev-time tool; runs inside the real-stack chroot (scripts/oracle2_setup.sh):

  scripts/oracle2_run.sh python3 scripts/registry_autodraft.py TYPE [TYPE...] [--force]

For each model_type the model is built on the meta device (the head class scripts/hf_record.py
picks: *ForConditionalGeneration for encoder-decoders, else *ForCausalLM) from transformers' default
config, then once per integer config field with that field changed (x2, /2, +1, -1: the first that
builds) and once per boolean field flipped. Every parameter dimension and every ModuleList length
is then fitted to the simplest formula over the fields whose change moved it (`a`, `k * a`,
`a * b`, `a // b`, `(a + k * b) * c`, ...) that reproduces it in every build: formulas are found by
varying the fields, not copied from numbers. Presence of a parameter or module that a boolean
flips becomes its condition (a Linear's `bias:` argument); items of a ModuleList that differ by
index get a condition on `i` (a list field such as `layer_types[i]`, `i < k`, `i % k`, `i in L`).
A class whose instances differ (a norm over hidden_size here and head_dim there) gets constructor
`args`, passed by each parent, lifted as far up as they differ.

Writes rules/models/<type>.yaml (unless it exists; --force overwrites) and the two conformance
records: fixtures/hf-records/default-<type>.json and vary-<type>.json, the latter built from the
default config with the changes of the single-field builds combined (as many as still build), whose
config is kept in fixtures/hf-records/vary-configs/<type>.json so that hf_record.py records it
again. Whatever the fit could not explain is marked `# TODO` in the draft; the conformance test
(tests/unit/test_hf_records.cpp) says whether the file equals transformers' model at both configs.
"""
from __future__ import annotations

import argparse
import copy
import importlib.util
import itertools
import json
import os
import re
import sys
import warnings

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoConfig  # noqa: E402

import hf_record  # noqa: E402

transformers.logging.set_verbosity_error()
REPO = hf_record.REPO
TORCH_CLASSES = set()
for line in open(os.path.join(REPO, "rules", "models", "_torch.yaml")):
    m = re.match(r"^  ([A-Za-z_0-9]+):", line)
    if m:
        TORCH_CLASSES.add(m.group(1))
SKIP_FIELDS = re.compile(r"(_token_id|_token_ids|^chunk_size_feed_forward$|^num_labels$|seed|^transformers_version$)")


# Builds are the slow part (a full-size model on meta, seconds each on shared cores). When this folder
# exists (inside the chroot, /tmp/autodraft-cache-<checkout>), each build's record is kept there, so
# that re-drafting after a change to the fitting below costs no build. Dev-time only.
CACHE = os.path.join("/tmp", "autodraft-cache-" + os.path.basename(REPO))


def build(model_type: str, cfg_dict: dict):
    """(config dict, modules [(path, cls)], params {name: shape}) or None when transformers refuses."""
    path = None
    if os.path.isdir(CACHE):
        import hashlib
        key = hashlib.sha256(json.dumps([transformers.__version__, model_type, cfg_dict], sort_keys=True,
                                        default=str).encode()).hexdigest()[:32]
        path = os.path.join(CACHE, f"{model_type}-{key}.json")
        if os.path.exists(path):
            got = json.load(open(path))
            return got.get("rec"), got.get("err")
    try:
        rec, err = hf_record.record("x", cfg_dict), None
    except Exception as e:  # noqa: BLE001
        rec, err = None, f"{type(e).__name__}: {str(e)[:160]}"
    if path:
        with open(path + ".tmp", "w") as f:
            f.write(json.dumps({"rec": hf_record.finite(rec) if rec else None, "err": err}, default=str))
        os.rename(path + ".tmp", path)
    return rec, err


class Build:
    def __init__(self, rec: dict):
        self.rec = rec
        self.cfg = rec["config"]
        self.ints = int_fields(self.cfg)  # one dict per build: fit() memoises on its identity
        self.modules = [tuple(m) for m in rec["modules"]]
        self.cls = dict(self.modules)
        self.params = {n: s for n, s, _ in rec["params"]}
        self.param_order = [n for n, _, _ in rec["params"]]
        self.children: dict = {p: [] for p, _ in self.modules}
        for p, _ in self.modules:
            if p:
                parent = p.rsplit(".", 1)[0] if "." in p else ""
                self.children.setdefault(parent, []).append(p)
        self.own_params: dict = {}
        # Own parameters of each module; tied aliases (not in named_parameters) come from `tied`.
        for n in self.param_order:
            mod, pn = n.rsplit(".", 1) if "." in n else ("", n)
            self.own_params.setdefault(mod, []).append(pn)
        self.tied = {a: t for a, t in rec["tied"]}
        for alias in self.tied:
            mod, pn = alias.rsplit(".", 1) if "." in alias else ("", alias)
            if pn not in self.own_params.get(mod, []):
                self.own_params.setdefault(mod, []).append(pn)
                self.params[alias] = self.params.get(self.tied[alias])


def int_fields(cfg: dict) -> dict:
    return {k: v for k, v in cfg.items() if isinstance(v, int) and not isinstance(v, bool) and not SKIP_FIELDS.search(k)}


def bool_fields(cfg: dict) -> dict:
    skip = {"return_dict", "output_hidden_states", "output_attentions", "torchscript", "use_cache", "is_decoder",
            "add_cross_attention", "tie_encoder_decoder", "is_encoder_decoder", "tie_word_embeddings_", "_output_attentions"}
    return {k: v for k, v in cfg.items() if isinstance(v, bool) and k not in skip}


def perturbations(k: str, v: int):
    if re.search(r"layers|n_layer|num_experts$|n_routed|experts_per", k):
        cands = [v + 1, v - 1, v * 2]
    else:
        cands = [v * 2, v // 2, v + 1, v - 1]
    if v == 0:
        cands = [1, 2]
    return [c for c in cands if c >= 0 and c != v]


# ---------------------------------------------------------------------------------------------------
# Formula fitting


def templates(fields):
    """(source, function) pairs in order of complexity over the given field names."""
    out = []
    for a in fields:
        out.append((a, lambda c, a=a: c[a]))
    for a in fields:
        for k in range(2, 9):
            out.append((f"{k} * {a}", lambda c, a=a, k=k: k * c[a]))
            out.append((f"{a} // {k}", lambda c, a=a, k=k: c[a] // k))
    for a, b in itertools.permutations(fields, 2):
        out.append((f"{a} * {b}", lambda c, a=a, b=b: c[a] * c[b]))
        out.append((f"{a} // {b}", lambda c, a=a, b=b: c[a] // c[b] if c[b] else None))
        out.append((f"{b} * ({a} // {b})", lambda c, a=a, b=b: c[b] * (c[a] // c[b]) if c[b] else None))
        out.append((f"{a} + {b}", lambda c, a=a, b=b: c[a] + c[b]))
        out.append((f"{a} - {b}", lambda c, a=a, b=b: c[a] - c[b]))
        for k in range(2, 5):
            out.append((f"{a} + {k} * {b}", lambda c, a=a, b=b, k=k: c[a] + k * c[b]))
            out.append((f"{k} * {a} * {b}", lambda c, a=a, b=b, k=k: k * c[a] * c[b]))
            out.append((f"{a} * {b} // {k}", lambda c, a=a, b=b, k=k: c[a] * c[b] // k))
    for a, b, d in itertools.permutations(fields, 3):
        out.append((f"{b} * ({a} // {d})", lambda c, a=a, b=b, d=d: c[b] * (c[a] // c[d]) if c[d] else None))
        out.append((f"{a} * {b} * {d}", lambda c, a=a, b=b, d=d: c[a] * c[b] * c[d]))
        out.append((f"{a} * {b} // {d}", lambda c, a=a, b=b, d=d: c[a] * c[b] // c[d] if c[d] else None))
        out.append((f"{a} * {b} + {d}", lambda c, a=a, b=b, d=d: c[a] * c[b] + c[d]))
        out.append((f"{a} + {b} + {d}", lambda c, a=a, b=b, d=d: c[a] + c[b] + c[d]))
        out.append((f"({a} + {b}) * {d}", lambda c, a=a, b=b, d=d: (c[a] + c[b]) * c[d]))
        for k in range(2, 5):
            out.append((f"({a} + {k} * {b}) * {d}", lambda c, a=a, b=b, d=d, k=k: (c[a] + k * c[b]) * c[d]))
    for a, b, d, e in itertools.permutations(fields, 4):
        out.append((f"{a} * {b} + {d} * {e}", lambda c, a=a, b=b, d=d, e=e: c[a] * c[b] + c[d] * c[e]))
        out.append((f"{a} * {b} + 2 * {d} * {e}", lambda c, a=a, b=b, d=d, e=e: c[a] * c[b] + 2 * c[d] * c[e]))
        out.append((f"2 * {a} * {b} + 2 * {d} * {e}", lambda c, a=a, b=b, d=d, e=e: 2 * c[a] * c[b] + 2 * c[d] * c[e]))
        out.append((f"{a} + 2 * {b} * {d} * {e}", lambda c, a=a, b=b, d=d, e=e: c[a] + 2 * c[b] * c[d] * c[e]))
        out.append((f"2 * {a} + 2 * {b} * {d} + {e}", lambda c, a=a, b=b, d=d, e=e: 2 * c[a] + 2 * c[b] * c[d] + c[e]))
        out.append((f"{a} + 2 * {b} * {d}", lambda c, a=a, b=b, d=d, e=e: c[a] + 2 * c[b] * c[d]))
    # Mamba-2 mixers: in_proj = 2 * intermediate + 2 * n_groups * d_state + n_heads, intermediate = expand * hidden.
    for a, b, d, e, f in itertools.permutations(fields, 5):
        out.append((f"2 * {a} * {b} + 2 * {d} * {e} + {f}",
                    lambda c, a=a, b=b, d=d, e=e, f=f: 2 * c[a] * c[b] + 2 * c[d] * c[e] + c[f]))
    return out


_FIT_MEMO: dict = {}


def fit(obs, deps, prefer=()):
    """The simplest formula over the fields `deps` reproducing every (cfg, value) observation."""
    key = (tuple((id(c), v) for c, v in obs), tuple(sorted(deps)), tuple(prefer))
    if key not in _FIT_MEMO:
        _FIT_MEMO[key] = _fit(obs, deps, prefer)
    return _FIT_MEMO[key]


def _fit(obs, deps, prefer=()):
    vals = {v for _, v in obs}
    if not deps:
        return str(obs[0][1]) if len(vals) == 1 else None
    deps = sorted(deps, key=lambda f: (f not in prefer, len(f), f))
    if len(deps) > 6:
        deps = deps[:6]
    for src, fn in templates(deps):
        try:
            if all(fn(c) == v for c, v in obs):
                return src
        except (TypeError, KeyError, ZeroDivisionError):
            continue
    # A constant offset: a + k (vocab padding, extra tokens).
    for a in deps:
        ks = {v - c[a] for c, v in obs if isinstance(c.get(a), int)}
        if len(ks) == 1:
            k = ks.pop()
            return f"{a} + {k}" if k > 0 else f"{a} - {-k}"
    return None


PREFER = ("hidden_size", "d_model", "n_embd", "intermediate_size", "num_attention_heads", "num_key_value_heads",
          "head_dim", "vocab_size", "num_hidden_layers")


# ---------------------------------------------------------------------------------------------------


BASE_OVERRIDES = hf_record.DEFAULT_OVERRIDES


def reaching_fields(model_type: str, over: dict, base_cfg: dict):
    """A test whether changing a config field can reach the model: the field, or a field the config
    class derives from it (layer_types from an interval, head_dim from hidden_size), is named in the
    model's modeling file. A field no modeling code reads (max_position_embeddings of a rotary model,
    rope or dropout settings) cannot move a shape; skipping it saves a full model build (seconds on
    shared cores). Without the file nothing is skipped."""
    try:
        mod = type(AutoConfig.for_model(model_type, **over)).__module__.replace(".configuration_", ".modeling_")
        text = open(importlib.util.find_spec(mod).origin).read()
    except Exception:  # noqa: BLE001
        return lambda k, values: True
    words = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", text))
    # The config class's attribute_map: modeling code reads config.hidden_size, config.json has n_embd.
    amap = getattr(type(AutoConfig.for_model(model_type, **over)), "attribute_map", None) or {}
    words |= {real for alias, real in amap.items() if alias in words}

    def used(k, values):
        if k in words:
            return True
        for nv in values:
            try:
                cfg = AutoConfig.for_model(model_type, **over, **{k: nv}).to_dict()
            except Exception:  # noqa: BLE001
                return True
            if any(f in words for f, fv in cfg.items() if base_cfg.get(f) != fv):
                return True
        return False
    return used


def draft(model_type: str, force: bool) -> int:
    _FIT_MEMO.clear()
    over = BASE_OVERRIDES.get(model_type, {})
    base_cfg = AutoConfig.for_model(model_type, **over).to_dict()
    rec0, err = build(model_type, base_cfg)
    if rec0 is None:
        print(f"{model_type}: default build failed: {err}", file=sys.stderr)
        return 1
    base = base0 = Build(rec0)
    print(f"{model_type}: {base.rec['class']}, {len(base.modules)} modules", file=sys.stderr)
    used = reaching_fields(model_type, over, base.cfg)
    # Integer fields whose default 0 leaves modules out (Cohere2-MoE's num_shared_experts, GraniteMoE
    # shared's shared_intermediate_size): the fit starts from a build with each set to 1, so that those
    # modules are drafted from what transformers builds, and the default (0) is a flipped build whose
    # missing modules give their condition. The default record stays the default config's.
    gates = []
    for k, v in int_fields(base0.cfg).items():
        if v == 0 and used(k, [1]):
            r1, _ = build(model_type, {"model_type": model_type, **over, k: 1})
            if r1 is not None and {m for m, _ in r1["modules"]} - {m for m, _ in rec0["modules"]}:
                gates.append(k)
    gate_flips = []
    if gates:
        over = {**over, **{k: 1 for k in gates}}
        rg, err = build(model_type, {"model_type": model_type, **over})
        if rg is None:
            over, gates = BASE_OVERRIDES.get(model_type, {}), []
        else:
            base = Build(rg)
            for k in gates:
                r0, _ = build(model_type, {"model_type": model_type, **over, k: 0})
                if r0 is not None:
                    gate_flips.append((k, Build(r0)))
    ints = int_fields(base.cfg)
    builds = [("base", None, base)]
    changed = {}
    for k, v in ints.items():
        if not used(k, perturbations(k, v)[:1]):
            continue
        for nv in perturbations(k, v):
            # The defaults with one field given: the config class derives the rest (layer_types, head_dim).
            rec, err = build(model_type, {"model_type": model_type, **over, k: nv})
            if rec is not None and rec["config"].get(k) == nv:
                builds.append((k, nv, Build(rec)))
                changed[k] = nv
                break
    flips = list(gate_flips)
    for k, v in bool_fields(base.cfg).items():
        if k != "tie_word_embeddings" and not used(k, [not v]):
            continue
        rec, err = build(model_type, {"model_type": model_type, **over, k: not v})
        if rec is not None:
            flips.append((k, Build(rec)))
    # The second record: the single-field changes combined, as many as still build.
    vary_cfg = {"model_type": model_type, **over}
    # All at once first (one build); field by field only when the combination does not build.
    everything = {**vary_cfg, **changed}
    vrec, _ = build(model_type, everything)
    if vrec is not None and all(vrec["config"].get(f) == v for f, v in everything.items()):
        vary_cfg = everything
    else:
        for k, nv in changed.items():
            trial = dict(vary_cfg)
            trial[k] = nv
            rec, _ = build(model_type, trial)
            if rec is not None and all(rec["config"].get(f) == v for f, v in trial.items()):
                vary_cfg = trial
        vrec, _ = build(model_type, vary_cfg)
    vary_cfg = vrec["config"]
    vary = Build(vrec)
    builds.append(("vary", None, vary))

    # Which fields move what: a value observed per build for a key; deps = fields whose change moved it.
    def deps_of(values: dict, direct_only: bool = False) -> set:
        base_v = values.get("base")
        out = set()
        for (k, _, b) in builds[1:-1]:
            if k in values and values[k] != base_v:
                out.add(k)
                if direct_only:
                    continue
                # Fields the config derives from k (head_dim from hidden_size) moved with it.
                for f, fv in int_fields(b.cfg).items():
                    if base.cfg.get(f) != fv:
                        out.add(f)
        return out

    def fit_key(getter, prefer=PREFER):
        values, obs = {}, []
        for (k, _, b) in builds:
            v = getter(b)
            if v is None:
                continue
            values[k if k not in values else f"{k}#"] = v
            obs.append((b.ints, v))
        d = deps_of(values)
        # The fields whose own change moved the value first: the fields the config derives along with
        # them (Zamba2's attention_hidden_size with hidden_size) can crowd the few a formula may use.
        direct = deps_of(values, direct_only=True)
        f = fit(obs, direct, prefer) if direct != d and len(d) > 6 else None
        if f is None:
            f = fit(obs, d, prefer)
        if f is None:
            # Fall back to all fields (a field whose single change did not build).
            f = fit(obs, set(int_fields(base.cfg)) & (d | set(prefer)), prefer)
        return f

    used_fields: set = set()
    used_formulas: set = set()

    def formula(getter, literal):
        f = fit_key(getter)
        if f is None:
            return f"{literal}", True
        for tok in re.findall(r"[A-Za-z_][A-Za-z_0-9]*", f):
            used_fields.add(tok)
        used_formulas.add(f)
        return f, False

    # ---- instance contents (base build), keyed by module path
    todo = []

    def dim_formula(pname_full, k):
        def g(b):
            s = b.params.get(pname_full)
            if s is None or len(s) <= k:
                return None
            if b.cls.get(pname_full.rsplit(".", 1)[0] if "." in pname_full else "") != base.cls.get(
                    pname_full.rsplit(".", 1)[0] if "." in pname_full else ""):
                return None
            return s[k]
        f, bad = formula(g, base.params[pname_full][k])
        if bad:
            todo.append(f"{pname_full}[{k}]")
        return f

    def presence(path_key: str, kind: str) -> str:
        """Condition under which a param ('p') or module ('m') of the base build exists, from the flips."""
        conds = []
        for k, b in flips:
            have = (path_key in b.params) if kind == "p" else (path_key in b.cls)
            if not have:
                conds.append(k if base.cfg[k] else f"not {k}")
        return " and ".join(conds) if conds else "true"

    def extra_from_flips(path: str, kind: str):
        """Children / params of `path` present only in a flipped build: (name, cond, build)."""
        out = []
        for k, b in flips:
            if kind == "m":
                names = [c.rsplit(".", 1)[-1] for c in b.children.get(path, [])]
                have = {c.rsplit(".", 1)[-1] for c in base.children.get(path, [])}
            else:
                names = b.own_params.get(path, [])
                have = set(base.own_params.get(path, []))
            for n in names:
                if n not in have and n not in [o[0] for o in out]:
                    out.append((n, k if b.cfg[k] else f"not {k}", b))
        return out

    # content[path] = ordered list of (key, value) where keys are stable across instances of a class.
    content: dict = {}

    def child_spec(path: str) -> dict:
        return content[path]

    def contents(path: str):
        cls = base.cls[path]
        items = []
        # Own parameters (torch builtins take them as constructor args, below).
        for pn in base.own_params.get(path, []):
            full = f"{path}.{pn}" if path else pn
            shape = base.params[full]
            dims = [dim_formula(full, k) for k in range(len(shape))]
            items.append((f"param:{pn}", {"dims": dims, "if": presence(full, "p")}))
        for pn, cond, b in extra_from_flips(path, "p"):
            full = f"{path}.{pn}" if path else pn
            shape = b.params.get(full)
            items.append((f"param:{pn}", {"dims": [str(d) for d in shape], "if": cond, "flip_only": True}))
            if base.cls[path] not in ("Linear", "Embedding", "LayerNorm", "Conv1D", "Conv1d", "Conv2d"):
                todo.append(f"{full} (present only when {cond}: shape copied)")
        for c in base.children.get(path, []):
            name = c.rsplit(".", 1)[-1]
            items.append((f"child:{name}", {"path": c, "if": presence(c, "m")}))
        for n, cond, b in extra_from_flips(path, "m"):
            cp = f"{path}.{n}" if path else n
            spec = {"path": None, "cls": b.cls[cp], "if": cond}
            if b.cls[cp] in ("Linear", "Embedding", "LayerNorm"):
                # A torch layer only a flipped build has: its shape as the formulas fitted elsewhere give it.
                spec["shape"] = {pn: b.params.get(f"{cp}.{pn}") for pn in b.own_params.get(cp, [])}
                spec["cfg"] = b.cfg
            items.append((f"child:{n}", spec))
        return cls, items

    for path, _ in base.modules:
        content[path] = contents(path)

    # Repeat counts of ModuleLists.
    def count_formula(path):
        def g(b):
            if b.cls.get(path) not in ("ModuleList", "ModuleDict"):
                return None
            return len(b.children.get(path, []))
        f, bad = formula(g, len(base.children.get(path, [])))
        if bad:
            todo.append(f"{path} count")
        return f

    # Per-index structure signature of a ModuleList item (class and parameter names under it) in any build.
    def signature(b: Build, item: str):
        pre = item + "."
        return (b.cls[item], tuple(sorted(n[len(pre):] for n in b.params if n.startswith(pre))))

    def index_predicates(b: Build):
        cfg = b.cfg
        # The first block alone (RWKV's pre_ln) before any field: a field larger than every index
        # (vocab_size) would otherwise pass for it.
        out = [("i == 0", lambda c, i: i == 0)]
        for k, v in cfg.items():
            if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
                for val in sorted(set(v)):
                    out.append((f'{k}[i] == "{val}"', lambda c, i, k=k, val=val: c[k][i] == val if i < len(c[k]) else None))
            if isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
                out.append((f"i in {k}", lambda c, i, k=k: i in c[k]))
            if isinstance(v, list) and v and all(isinstance(x, bool) for x in v):
                out.append((f"{k}[i]", lambda c, i, k=k: c[k][i] if i < len(c[k]) else None))
            if isinstance(v, int) and not isinstance(v, bool) and not SKIP_FIELDS.search(k):
                out.append((f"i < {k}", lambda c, i, k=k: i < c[k]))
                out.append((f"i >= {k}", lambda c, i, k=k: i >= c[k]))
                out.append((f"i % {k} == 0", lambda c, i, k=k: c[k] > 0 and i % c[k] == 0))
                out.append((f"(i + 1) % {k} == 0", lambda c, i, k=k: c[k] > 0 and (i + 1) % c[k] == 0))
                out.append((f"i % {k} != 0", lambda c, i, k=k: c[k] > 0 and i % c[k] != 0))
        out.append(("i == 0", lambda c, i: i == 0))
        out.append(("i % 2 == 1", lambda c, i: i % 2 == 1))
        out.append(("i % 2 == 0", lambda c, i: i % 2 == 0))
        # Layer-placement fields (Jamba's attn_layer_period / attn_layer_offset, ERNIE 4.5 MoE's
        # moe_layer_interval / moe_layer_start_index / moe_layer_end_index): offsets, ranges and their
        # conjunctions, over the integer fields whose name says they place layers.
        lf = [k for k, v in cfg.items() if isinstance(v, int) and not isinstance(v, bool)
              and re.search(r"layer|interval|period|offset|step|start|end|freq|every", k) and not SKIP_FIELDS.search(k)
              and k not in ("num_hidden_layers", "n_layer", "num_layers")]
        simple = []
        for a in lf:
            simple.append((f"i <= {a}", lambda c, i, a=a: i <= c[a]))
            simple.append((f"i >= {a}", lambda c, i, a=a: i >= c[a]))
            simple.append((f"(i + 1) % {a} == 0", lambda c, i, a=a: c[a] > 0 and (i + 1) % c[a] == 0))
            simple.append((f"i % {a} == 0", lambda c, i, a=a: c[a] > 0 and i % c[a] == 0))
            for b in lf:
                if a != b:
                    out.append((f"i % {a} == {b}", lambda c, i, a=a, b=b: c[a] > 0 and i % c[a] == c[b]))
        for (s1, f1), (s2, f2) in itertools.combinations(simple, 2):
            out.append((f"{s1} and {s2}", lambda c, i, f1=f1, f2=f2: f1(c, i) and f2(c, i)))
        if len(simple) <= 24:
            for (s1, f1), (s2, f2), (s3, f3) in itertools.combinations(simple, 3):
                out.append((f"{s1} and {s2} and {s3}", lambda c, i, f1=f1, f2=f2, f3=f3: f1(c, i) and f2(c, i) and f3(c, i)))
        return out

    def find_predicate(list_path: str, in_group) -> str | None:
        """A condition on i true exactly for the items whose signature satisfies in_group, in every build."""
        preds = index_predicates(base)
        for src, fn in preds:
            ok = True
            for (_, _, b) in builds + [("f", None, fb) for _, fb in flips]:
                if b.cls.get(list_path) not in ("ModuleList", "ModuleDict"):
                    continue
                for item in b.children.get(list_path, []):
                    i = int(item.rsplit(".", 1)[-1]) if item.rsplit(".", 1)[-1].isdigit() else None
                    if i is None:
                        ok = False
                        break
                    try:
                        got = fn(b.cfg, i)
                    except (TypeError, KeyError, IndexError):
                        got = None
                    if got is None or bool(got) != in_group(b, item):
                        ok = False
                        break
                if not ok:
                    break
            if ok:
                for tok in re.findall(r"[A-Za-z_][A-Za-z_0-9]*", src):
                    if tok not in ("i", "in", "and", "or", "not"):
                        used_fields.add(tok)
                return src
        return None

    # ---- classes: merge instances; differing values become args, lifted to parents.
    by_class: dict = {}
    for path, _ in base.modules:
        by_class.setdefault(base.cls[path], []).append(path)

    builtin_args = {
        "Linear": lambda it: {"in_features": it["param:weight"]["dims"][1], "out_features": it["param:weight"]["dims"][0],
                              "bias": it["param:bias"]["if"] if "param:bias" in it else "false"},
        "Embedding": lambda it: {"num_embeddings": it["param:weight"]["dims"][0],
                                 "embedding_dim": it["param:weight"]["dims"][1]},
        "LayerNorm": lambda it: ({"normalized_shape": it["param:weight"]["dims"][0],
                                  "bias": it["param:bias"]["if"] if "param:bias" in it else "false"}
                                 if "param:weight" in it else {"normalized_shape": "null", "elementwise_affine": "false"}),
        "Conv1D": lambda it: {"nf": it["param:weight"]["dims"][1], "nx": it["param:weight"]["dims"][0]},
        "Conv1d": lambda it: ({"in_channels": it["param:weight"]["dims"][0], "out_channels": it["param:weight"]["dims"][0],
                               "kernel_size": it["param:weight"]["dims"][2], "groups": it["param:weight"]["dims"][0],
                               "bias": it["param:bias"]["if"] if "param:bias" in it else "false"}
                              if it["param:weight"]["dims"][1] == "1" else
                              {"in_channels": it["param:weight"]["dims"][1], "out_channels": it["param:weight"]["dims"][0],
                               "kernel_size": it["param:weight"]["dims"][2],
                               "bias": it["param:bias"]["if"] if "param:bias" in it else "false"}),
        "Conv2d": lambda it: {"in_channels": it["param:weight"]["dims"][1], "out_channels": it["param:weight"]["dims"][0],
                              "kernel_size": it["param:weight"]["dims"][2],
                              "bias": it["param:bias"]["if"] if "param:bias" in it else "false"},
    }

    # values[path] = {key: value} of the instance (params dims/ifs, child args/ifs), args[cls] = arg keys.
    args: dict = {c: [] for c in by_class}

    def inst_values(path):
        cls, items = content[path]
        vals = {}
        for key, spec in items:
            if key.startswith("param:"):
                for k, d in enumerate(spec["dims"]):
                    vals[f"{key}:{k}"] = d
                vals[f"{key}:if"] = spec["if"]
            else:
                if spec.get("path") and not has_params(spec["path"]):
                    continue  # parameterless (an activation module transformers shares): nothing to lift
                vals[f"{key}:if"] = spec["if"]
                if spec.get("path"):
                    cp = spec["path"]
                    ccls = base.cls[cp]
                    vals[f"{key}:class"] = ccls
                    if ccls in ("ModuleList", "ModuleDict"):
                        vals[f"{key}:count"] = count_formula(cp)
                    elif builtin_params(ccls):
                        for a, av in memo[cp].items():
                            vals[f"{key}:arg:{a}"] = av
                    else:
                        for a in args.get(ccls, []):
                            vals[f"{key}:arg:{a}"] = arg_value(cp, a)
        return vals

    memo: dict = {}
    param_prefixes = set()
    for n in base.params:
        parts = n.split(".")
        for j in range(len(parts)):
            param_prefixes.add(".".join(parts[:j]))

    def has_params(path):
        return path in param_prefixes

    def arg_value(path, a):
        return memo[path][a]

    def builtin_params(cls):
        return cls in builtin_args and builtin_args[cls] is not None

    # Bottom-up over depth: deepest modules first, so children's args are known.
    order = sorted((p for p, _ in base.modules), key=lambda p: -(p.count(".") + (1 if p else 0)))
    # Iterate to a fixed point over classes (a class can sit at several depths).
    for _ in range(6):
        memo.clear()
        inst = {}
        for p in order:
            cls = base.cls[p]
            if cls in ("ModuleList", "ModuleDict"):
                memo[p] = {}
                continue
            if builtin_params(cls):
                items = dict(content[p][1])
                bargs = builtin_args[cls](items)
                memo[p] = bargs
                inst[p] = bargs
                continue
            v = inst_values(p)
            inst[p] = v
            memo[p] = {a: v.get(a) for a in args[cls]}
        # Items of ModuleLists: values that differ by index are fine (item_args); elsewhere lift.
        new_args = {}
        for cls, paths in by_class.items():
            if cls in ("ModuleList", "ModuleDict") or builtin_params(cls):
                continue
            keys = set()
            for p in paths:
                keys |= set(inst[p])
            # A key varies when its value differs where present (a child absent in one instance is
            # its `if`, not its arguments).
            varying = [k for k in sorted(keys)
                       if len({json.dumps(inst[p].get(k)) for p in paths if inst[p].get(k) is not None}) > 1
                       or (k.endswith(":if") and len({json.dumps(inst[p].get(k, "false")) for p in paths}) > 1)]
            new_args[cls] = varying
        if all(sorted(new_args[c]) == sorted(args[c]) for c in new_args):
            break
        for c in new_args:
            args[c] = sorted(set(args[c]) | set(new_args[c]))

    # A child whose class depends on the layer index (GLM-4-MoE's dense first layers, AFMoE's
    # num_dense_layers): one entry per class, each with its condition on `i` found over every build,
    # instead of a class argument (the registry's `class:` is a name, not an expression).
    multi: dict = {}
    for cls in list(args):
        for key in [k for k in args[cls] if k.startswith("child:") and k.endswith(":class")]:
            name = key.split(":")[1]
            insts = by_class[cls]
            lists = {p.rsplit(".", 1)[0] for p in insts if "." in p}
            if len(lists) != 1 or not all(p.rsplit(".", 1)[-1].isdigit() for p in insts):
                continue
            lst = lists.pop()
            kids: dict = {}
            for p in insts:
                if f"{p}.{name}" in base.cls:
                    kids.setdefault(base.cls[f"{p}.{name}"], f"{p}.{name}")
            if len(kids) < 2:
                continue
            preds = {}
            for cc in list(kids)[1:]:
                pr = find_predicate(lst, lambda b, it, cc=cc, name=name: b.cls.get(f"{it}.{name}") == cc)
                if pr is None:
                    break
                preds[cc] = pr
            if len(preds) != len(kids) - 1:
                continue
            multi[(cls, name)] = (kids, preds)
            args[cls] = [k for k in args[cls] if not (k.startswith(f"child:{name}:") and not k.endswith(":if"))]

    # Arg names: readable where possible, unique per class.
    names_taken: dict = {}

    def arg_name(cls, key):
        if (cls, key) in names_taken:
            return names_taken[(cls, key)]
        n = _arg_name(cls, key)
        used = {v for (c, _), v in names_taken.items() if c == cls}
        k = 2
        while n in used:
            n = f"{_arg_name(cls, key)}{k}"
            k += 1
        names_taken[(cls, key)] = n
        return n

    def _arg_name(cls, key):
        parts = key.split(":")
        if parts[0] == "param" and parts[1] == "weight" and parts[2] != "if":
            n = "dim" if parts[2] == "0" else f"dim{parts[2]}"
        elif parts[0] == "param":
            n = f"{parts[1]}_dim{parts[2]}" if parts[2] != "if" else f"has_{parts[1]}"
        elif parts[-1] == "if":
            n = f"has_{parts[1]}"
        elif parts[-1] == "class":
            n = f"{parts[1]}_class"
        elif parts[-1] == "count":
            n = f"{parts[1]}_count"
        elif parts[2] == "arg" and len(parts) == 4:
            n = f"{parts[1]}_{parts[3]}"
        else:
            n = f"{parts[1]}_" + "_".join(x for x in parts[3:] if x not in ("param", "arg", "child"))
        n = re.sub(r"[^A-Za-z0-9_]", "_", n)
        if n in base.cfg:
            n = "a_" + n
        return n

    def ref(cls, key, value):
        """The expression for a key of class cls: its arg's name when it varies, else the value itself."""
        if key in args.get(cls, []):
            return arg_name(cls, key)
        return value

    known_formulas = sorted({t for t in used_formulas}, key=len)

    def match_formula(value, cfg):
        """The first formula fitted elsewhere in the model that gives `value` on cfg (a flipped build)."""
        for f in known_formulas:
            try:
                if eval(f, {}, dict(cfg)) == value:  # noqa: S307 (our own formula strings)
                    return f
            except Exception:  # noqa: BLE001
                continue
        todo.append(f"a dimension {value} of a flip-only layer")
        return str(value)

    # ---- write YAML
    out = []
    out.append(f"# {model_type}: transformers models/{model_type}/modeling_{model_type}.py, 5.12.1, as")
    out.append("# scripts/registry_autodraft.py fitted it: built on the meta device from the default config, once per")
    out.append("# integer field changed and per boolean flipped; every shape below reproduces all those builds.")
    if todo:
        out.append("# TODO (not fitted): " + "; ".join(todo[:20]))
    head = base.rec["class"]
    root = ""
    base_prefix = None
    kids = base.children.get("", [])
    for c in kids:
        if base.cls[c].endswith("Model") and c in ("model", "transformer", "gpt_neox", "backbone"):
            base_prefix = c
    out.append(f"model_type: {model_type}")
    if since_of(model_type) != "?":
        out.append(f'since: "{since_of(model_type)}"')
    out.append(f'architectures: ["{head}"' + (f', "{base.cls[base_prefix]}"' if base_prefix else "") + "]")
    if base_prefix:
        out.append(f"base_model_prefix: {base_prefix}")
        out.append(f'base_model_class: "{base.cls[base_prefix]}"')
    out.append(f"no_split_modules: {json.dumps(base.rec['no_split_modules'])}")

    class_blocks = []
    seen = set()

    def child_line(cls, items_d, key, spec, path):
        name = key.split(":", 1)[1]
        cond = ref(cls, f"{key}:if", spec["if"])
        cond_s = "" if cond == "true" else cond
        if spec.get("path") is None:
            ccls = spec["cls"]
            shape = spec.get("shape") or {}
            if ccls in ("Linear", "Embedding", "LayerNorm") and "weight" in shape:
                dims = [match_formula(d, spec["cfg"]) for d in shape["weight"]]
                bias = "true" if "bias" in shape else "false"
                a_s = {"Linear": lambda: f"in_features: {fmt(dims[1])}, out_features: {fmt(dims[0])}, bias: {bias}",
                       "Embedding": lambda: f"num_embeddings: {fmt(dims[0])}, embedding_dim: {fmt(dims[1])}",
                       "LayerNorm": lambda: f"normalized_shape: {fmt(dims[0])}, bias: {bias}"}[ccls]()
                return f"      {name}: {{class: {ccls}, args: {{{a_s}}}, if: '{cond_s}'}}", ccls, None
            return f"      {name}: {{class: \"{ccls}\", if: '{cond_s}'}}", ccls, None
        cp = spec["path"]
        ccls = base.cls[cp]
        parts = []
        if ccls in ("ModuleList", "ModuleDict"):
            itemsp = base.children.get(cp, [])
            cnt = ref(cls, f"{key}:count", count_formula(cp))
            if not itemsp:
                return f"      {name}: {{repeat: {cnt}, item: Module}}", None, None
            # Group items by signature; the first item's class is the default.
            sig0 = signature(base, itemsp[0])
            item_cls = base.cls[itemsp[0]]
            var = []
            classes_here = sorted({base.cls[x] for x in itemsp}, key=lambda c_: [base.cls[x] for x in itemsp].index(c_))
            for oc in classes_here[1:]:
                pred = find_predicate(cp, lambda b, it, oc=oc: b.cls[it] == oc)
                var.append((pred or "TODO", oc))
                if not pred:
                    todo.append(f"{cp}: index condition for {oc}")
            iargs = {}
            for icls in classes_here:
                for a in args.get(icls, []):
                    paths_i = [x for x in itemsp if base.cls[x] == icls]
                    vals = [memo[x][a] if memo[x][a] is not None or not a.endswith(":if") else "false" for x in paths_i]
                    if len({json.dumps(v) for v in vals}) == 1:
                        iargs[arg_name(icls, a)] = vals[0]
                    else:
                        # Differs by index: a boolean (presence, class choice) as a predicate on i.
                        distinct = list(dict.fromkeys(json.dumps(v) for v in vals))
                        if len(distinct) == 2:
                            v1 = json.loads(distinct[1])
                            members = {x for x in paths_i if json.dumps(memo[x][a]) == distinct[1]}
                            # Check the membership by the same (class, param names) signature in every build.
                            sig_set = {signature(base, x) for x in members}
                            other = {signature(base, x) for x in paths_i if x not in members}
                            if not sig_set & other:
                                pred = find_predicate(cp, lambda b, it, s=sig_set: signature(b, it) in s)
                            else:
                                pred = None
                            v0 = json.loads(distinct[0])
                            if pred and {v0, v1} == {"true", "false"}:
                                iargs[arg_name(icls, a)] = pred if v1 == "true" else f"not ({pred})"
                            elif pred:
                                iargs[arg_name(icls, a)] = f"({fmt(v1)} if {pred} else {fmt(v0)})"
                            else:
                                iargs[arg_name(icls, a)] = "TODO"
                                todo.append(f"{cp}: per-index {a}")
                        else:
                            iargs[arg_name(icls, a)] = "TODO"
                            todo.append(f"{cp}: per-index {a}")
            s = f"      {name}:\n        repeat: {cnt}\n        item: \"{item_cls}\""
            if var:
                s += "\n        item_variants:\n" + "\n".join(f"          - {{if: '{p}', class: \"{c}\"}}" for p, c in var)
            if iargs:
                s += "\n        item_args: {" + ", ".join(f"{k}: {fmt(v)}" for k, v in iargs.items()) + "}"
            if cond_s:
                s += f"\n        if: '{cond_s}'"
            return s, None, classes_here
        if builtin_params(ccls):
            bargs = memo[cp]
            a_s = ", ".join(f"{k}: {fmt(ref(cls, f'{key}:arg:{k}', v))}" for k, v in bargs.items())
            if cond_s:
                return f"      {name}: {{class: {ccls}, args: {{{a_s}}}, if: '{cond_s}'}}", ccls, None
            return f"      {name}: {{class: {ccls}, args: {{{a_s}}}}}", ccls, None
        if (cls, name) in multi:
            kids, preds = multi[(cls, name)]
            lines_m = []
            for n_, (cc, kp) in enumerate(kids.items()):
                c = preds[cc] if n_ else " and ".join(f"not ({preds[x]})" for x in list(kids)[1:])
                if cond_s:
                    c = f"({cond_s}) and {c}"
                if builtin_params(cc):
                    ca = memo[kp]
                else:
                    ca = {arg_name(cc, a): memo[kp][a] for a in args.get(cc, [])}
                parts = [f'class: "{cc}"'] + ([f"name: {name}"] if n_ else [])
                if ca:
                    parts.append("args: {" + ", ".join(f"{k}: {fmt(v)}" for k, v in ca.items()) + "}")
                parts.append(f"if: '{c}'")
                lines_m.append(f"      {name if not n_ else f'{name}_{n_}'}: {{{', '.join(parts)}}}")
            return "\n".join(lines_m), None, list(kids)
        cargs = {arg_name(ccls, a): ref(cls, f"{key}:arg:{a}", memo[cp][a]) for a in args.get(ccls, [])}
        cref = ref(cls, f"{key}:class", ccls)
        if cref != ccls:
            todo.append(f"{cls}.{name}: class differs between instances")
        parts = [f'class: "{ccls}"']
        if cargs:
            parts.append("args: {" + ", ".join(f"{k}: {fmt(v)}" for k, v in cargs.items()) + "}")
        if cond_s:
            parts.append(f"if: '{cond_s}'")
        if len(parts) == 1:
            return f'      {name}: "{ccls}"', ccls, None
        return f"      {name}: {{{', '.join(parts)}}}", ccls, None

    def merged_items(cls):
        """The items (children, parameters) of every instance of cls, in registration order: Bamba's
        decoder layer holds `mamba` at some indices and `self_attn` at others. An item missing from
        some instances gets its `if` from the arguments (a per-index condition where it is a list item)."""
        paths = by_class[cls]
        out = list(content[paths[0]][1])
        keys = [k for k, _ in out]
        for p in paths[1:]:
            last = -1
            for k, spec in content[p][1]:
                if k in keys:
                    last = keys.index(k)
                    continue
                last += 1
                out.insert(last, (k, spec))
                keys.insert(last, k)
        return out

    def emit_class(cls):
        if cls in seen or cls in ("ModuleList", "ModuleDict") or builtin_params(cls):
            return
        seen.add(cls)
        path = by_class[cls][0]
        items = merged_items(cls)
        lines = [f'  "{cls}":']
        if args.get(cls):
            lines.append("    args: {" + ", ".join(f"{arg_name(cls, a)}: null" for a in args[cls]) + "}")
        ch, pa = [], []
        sub = []
        for key, spec in items:
            if key.startswith("child:"):
                line, ccls, many = child_line(cls, None, key, spec, path)
                ch.append(line)
                if ccls:
                    sub.append(ccls)
                for c in many or []:
                    sub.append(c)
            else:
                pn = key.split(":", 1)[1]
                dims = [ref(cls, f"{key}:{k}", d) for k, d in enumerate(spec["dims"])]
                cond = ref(cls, f"{key}:if", spec["if"])
                if cond == "true":
                    pa.append(f"      {pn}: [{', '.join(dims)}]")
                else:
                    pa.append(f"      {pn}: {{shape: [{', '.join(dims)}], if: '{cond}'}}")
        if not ch and not pa:
            if cls in TORCH_CLASSES:
                return
            class_blocks.append(f'  "{cls}": {{}}')
        else:
            if ch:
                lines.append("    children:")
                lines.extend(ch)
            if pa:
                lines.append("    params:")
                lines.extend(pa)
            class_blocks.append("\n".join(lines))
        for c in sub:
            if c in by_class:
                emit_class(c)
            elif c not in TORCH_CLASSES and c not in seen:
                seen.add(c)
                class_blocks.append(f'  "{c}": {{}}')

    emit_class(base.cls[""])

    # config defaults / derived for the fields the formulas use.
    derived = {}
    for f in sorted(used_fields):
        if f not in base.cfg or f == "i":
            continue
        # Derived in the config class: moved when another field alone changed.
        movers = [k for (k, _, b) in builds[1:-1] if k != f and b.cfg.get(f) != base.cfg.get(f)]
        if movers and f not in ("num_hidden_layers",):
            obs = [(b.ints, b.cfg[f]) for (_, _, b) in builds if isinstance(b.cfg.get(f), int)]
            dd = set(movers)
            fx = fit(obs, dd - {f}, PREFER)
            if fx:
                derived[f] = fx
    # The config class's attribute_map: config.json may spell a field by its alias (num_hidden_layers
    # for n_layer), which the config class stores under the field's own name.
    cfg_cls = type(AutoConfig.for_model(model_type, **over))
    aliases = {v: k for k, v in (getattr(cfg_cls, "attribute_map", None) or {}).items()}
    for f in sorted(used_fields):
        if f in aliases and f in base.cfg and f not in derived:
            derived[f] = f"({aliases[f]} ?? {json.dumps(base.cfg[f])})"
    defaults = {f: base0.cfg[f] for f in sorted(used_fields) if f in base0.cfg and f not in derived}
    out.append("")
    out.append("config:")
    out.append("  # The config class's defaults (5.12.1) for the fields the formulas read.")
    out.append("  defaults:" + ("" if defaults else " {}"))
    for f, v in defaults.items():
        out.append(f"    {f}: {json.dumps(v)}")
    if derived:
        out.append("  # Set by the config class from other fields when config.json omits them.")
        out.append("  derived:")
        for f, v in derived.items():
            out.append(f"    {f}: {f} ?? {v}")
    tied = base.tied or next((b.tied for k, b in flips if k == "tie_word_embeddings"), {})
    if tied:
        out.append("")
        out.append("tied_weights:")
        for a, t in sorted(tied.items()):
            out.append(f"  {a}: {t}")
    tp = base.rec.get("tp_plan") or {}
    out.append("")
    out.append("classes:")
    out.extend(class_blocks)
    text = "\n".join(out) + "\n"
    if todo:
        print(f"{model_type}: {len(todo)} TODO: " + "; ".join(todo[:8]), file=sys.stderr)
    dst = os.path.join(REPO, "rules", "models", f"{model_type}.yaml")
    if force or not os.path.exists(dst):
        open(dst, "w").write(text)
    else:
        open(dst + ".draft", "w").write(text)
    # Records: default and vary.
    cfgdir = os.path.join(hf_record.OUT, "vary-configs")
    os.makedirs(cfgdir, exist_ok=True)
    with open(os.path.join(cfgdir, f"{model_type}.json"), "w") as fh:
        json.dump(vary_cfg, fh, indent=1, sort_keys=True)
    for name, rec in ((f"default-{model_type}", base0.rec), (f"vary-{model_type}", vary.rec)):
        rec = dict(rec)
        rec["name"] = name
        with open(os.path.join(hf_record.OUT, name + ".json"), "w") as fh:
            fh.write(hf_record.dump(rec))
    return 0


def fmt(v):
    s = str(v)
    if re.fullmatch(r"[A-Za-z_0-9.]+", s) or re.fullmatch(r"-?\d+", s):
        return s
    return "'" + s.replace("'", '"') + "'"


def since_of(model_type: str) -> str:
    """The first transformers release with the model: the docs' model page says it; else unknown."""
    try:
        p = os.path.join(os.path.dirname(transformers.__file__), "models", model_type.replace("-", "_"))
        doc = SINCE.get(model_type)
        return doc or "?"
    except Exception:  # noqa: BLE001
        return "?"


SINCE: dict = {}
try:
    SINCE = json.load(open(os.path.join(REPO, "scripts", "model_since.json")))
except FileNotFoundError:
    pass


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("types", nargs="+")
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args()
    rc = 0
    for t in a.types:
        try:
            rc |= draft(t, a.force)
        except Exception as e:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            print(f"{t}: FAILED {type(e).__name__}: {e}", file=sys.stderr)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
