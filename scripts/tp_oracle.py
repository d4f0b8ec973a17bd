#!/usr/bin/python3
"""Tensor-parallel oracle: what REAL transformers tp_plan="auto" + accelerate FSDP2 build on an N-D mesh.

Dev-time tool built on scripts/torch2_oracle.py (same chroot, same fork-per-case runner, same dump
format); CI never needs torch. Writes fixtures/oracle2/tp/<case>.json:

  scripts/oracle2_run.sh python3 scripts/tp_oracle.py              # models (if missing) + every case
  scripts/oracle2_run.sh python3 scripts/tp_oracle.py --list
  scripts/oracle2_run.sh python3 scripts/tp_oracle.py --only 'llama_tp-*'
  scripts/oracle2_run.sh python3 scripts/tp_oracle.py --models     # rebuild the four TP models

Each case forks W = dp_replicate * dp_shard * tp gloo ranks (CPU). Each rank:
  1. builds the mesh as the Accelerator does: ParallelismConfig(dp_replicate_size=R, dp_shard_size=D,
     tp_size=T).build_device_mesh("cpu") (accelerate 1.14 accelerator.py: state.device_mesh =
     parallelism_config.get_device_mesh(device.type));
  2. load: AutoModelForCausalLM.from_pretrained(dir, dtype=float32, tp_plan="auto",
     device_mesh=mesh["tp"]) (MoE: experts_implementation="eager");
  3. wrap, as Accelerator.prepare does with a ParallelismConfig whose tp_size > 1:
       - mode "fsdp2": Accelerator._prepare_tp (the real method, called on a stand-in: it converts
         the non-DTensor parameters to Replicate DTensors only if some parameter already is a
         DTensor) and then accelerate's fsdp2_prepare_model on the stand-in whose torch_device_mesh
         is the full N-D mesh and parallelism_config is the ParallelismConfig above; transformer-based
         policy (the model's _no_split_modules);
       - mode "tponly" (no FSDP: Accelerator.prepare_model's tp branch, which wraps nothing and only
         requires model.tp_size == tp_size);
  4. lazy init (fsdp2), one forward + backward + AdamW step (torch2_oracle.step).
Recorded: the mesh (dims as built, coordinates and local ranks of every rank), per parameter (names
as model.named_parameters() gives them after loading) its full shape, TP style, per-rank TP-local
shape / DTensor-ness, per-rank FSDP2 local shape, placements, mesh and padded rows; the fully_shard
groups (torch2_oracle.groups_fsdp2); per-rank memory after the step; or the error (type, message,
stage: load, wrap, lazy_init, step) of every rank.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import logging
import os
import struct
import sys
import time
import traceback
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch2_oracle as o  # noqa: E402  (imports torch, transformers, accelerate; sets USE_LIBUV)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM  # noqa: E402

OUT_TP = os.path.join(o.OUT, "tp")

# --------------------------------------------------------------------------------------------
# Models: head counts that divide by 2 and 4 (so TP runs), odd vocab / intermediate sizes.
# --------------------------------------------------------------------------------------------

TP_BASE = dict(vocab_size=37, hidden_size=24, intermediate_size=52, num_hidden_layers=2, num_attention_heads=4,
               head_dim=6, num_key_value_heads=4, max_position_embeddings=64, tie_word_embeddings=False)
TP_MODELS = {
    "llama_tp": ("llama", dict(TP_BASE)),
    "qwen3_tp": ("qwen3", dict(TP_BASE)),
    "qwen3_moe_tp": ("qwen3_moe", dict(TP_BASE, moe_intermediate_size=14, num_experts=4, num_experts_per_tok=2)),
    # 2 key/value heads: tp 4 splits k_proj / v_proj (12 rows) into 3 rows, half a head of 6.
    "llama_tp_kv2": ("llama", dict(TP_BASE, num_key_value_heads=2)),
    # Experts of 16 (divisible by 4): the packed gate_up_proj loads at tp 4, where 14 does not.
    "qwen3_moe_tp_i16": ("qwen3_moe", dict(TP_BASE, moe_intermediate_size=16, num_experts=4, num_experts_per_tok=2)),
    # Parallel-residual blocks (attention and MLP read the same block input): which TP input gradients
    # a LoRA step all-reduces (scripts/tp_traffic_probe.py). GPT-NeoX without attention biases, so that
    # LoRA on query_key_value and dense runs (PLAN033).
    "cohere2_tp": ("cohere2", dict(TP_BASE)),
    "gpt_neox_tp": ("gpt_neox", dict(TP_BASE, attention_bias=False)),
}
o.MODELS.update(TP_MODELS)  # build_model reads its spec from torch2_oracle.MODELS

MOE_TYPES = ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3", "gpt_oss", "olmoe", "phimoe", "deepseek_v2",
             "granitemoe")


def model_dir(name: str) -> str:
    return os.path.join(o.OUT, "models", name)


def checkpoint_shapes(name: str) -> dict:
    """Tensor name -> shape, read from model.safetensors' header."""
    with open(os.path.join(model_dir(name), "model.safetensors"), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    return {k: v["shape"] for k, v in header.items() if k != "__metadata__"}


def load_kwargs(name: str) -> dict:
    cfg = AutoConfig.from_pretrained(model_dir(name))
    kw = {"dtype": torch.float32}
    if hasattr(cfg, "experts_implementation") or cfg.model_type in MOE_TYPES:
        kw["experts_implementation"] = "eager"
    return kw


def auto_class(name: str):
    """The auto class that loads the model: image-text-to-text for a vision-language model."""
    if hasattr(AutoConfig.from_pretrained(model_dir(name)), "vision_config"):
        from transformers import AutoModelForImageTextToText
        return AutoModelForImageTextToText
    return AutoModelForCausalLM


def with_lora(model, lora: dict):
    """peft's get_peft_model with LoraConfig(**lora) (peft from source, scripts/peft_oracle_setup.sh)."""
    sys.path.insert(0, os.environ.get("PEFT_SRC", "/opt/peft/src"))
    from peft import LoraConfig, get_peft_model
    torch.manual_seed(0)
    return get_peft_model(model, LoraConfig(**lora))


def ref_key(c: dict) -> str:
    return c["model"] + (json.dumps(c["lora"], sort_keys=True) if c.get("lora") else "")


def reference(name: str, lora: dict | None = None) -> dict:
    """What a plain (non-TP) load gives: parameter name -> full shape, plus the model's TP plan."""
    model = auto_class(name).from_pretrained(model_dir(name), **load_kwargs(name))
    full = {n: list(p.shape) for n, p in (with_lora(model, lora) if lora else model).named_parameters()}
    return {"full_shapes": full,
            "lora": bool(lora),
            "tp_plan": dict(model.tp_plan or {}), "class": type(model).__name__,
            # What model.tp_plan becomes with DistributedConfig(enable_expert_parallel=True).
            "ep_plan": dict(getattr(model, "_ep_plan", None) or {}),
            # The ForCausalLM class's own plan ({"lm_head": ...}); post_init replaces the instance's
            # _tp_plan with the merged children's plans, so this one never reaches model.tp_plan.
            "class_tp_plan": dict(type(model).__dict__.get("_tp_plan") or {}),
            "no_split_modules": sorted(model._no_split_modules or [])}


# --------------------------------------------------------------------------------------------
# One rank
# --------------------------------------------------------------------------------------------

def pc_of(c: dict):
    from accelerate.parallelism_config import ParallelismConfig
    m = c["mesh"]
    return ParallelismConfig(dp_replicate_size=m["dp_replicate"], dp_shard_size=m["dp_shard"], tp_size=m["tp"])


def mesh_info(mesh) -> dict:
    """This rank's place on the mesh: coordinate, local rank on every (also flattened) dim."""
    out = {"coordinate": list(mesh.get_coordinate() or []), "local_rank": {}}
    names = list(mesh.mesh_dim_names or [])
    for d in names + ["dp", "dp_shard_cp", "dp_cp"]:
        if d in out["local_rank"]:
            continue
        try:
            sub = mesh[d]
            out["local_rank"][d] = {"index": int(sub.get_local_rank()), "group": [int(x) for x in sub.mesh.flatten().tolist()]}
        except Exception:  # noqa: BLE001 - a dim that does not exist on this mesh
            pass
    return out


def local_shape(t) -> list:
    return list(t.to_local().shape) if hasattr(t, "to_local") else list(t.shape)


def tensor_info(t) -> dict:
    from torch.distributed.tensor import DTensor
    d = {"is_dtensor": isinstance(t, DTensor), "local_shape": local_shape(t), "dtype": str(t.dtype).replace("torch.", "")}
    if isinstance(t, DTensor):
        d["placements"] = [str(p) for p in t.placements]
        d["global_shape"] = list(t.shape)
        d["mesh_dim_names"] = list(t.device_mesh.mesh_dim_names or [])
        d["mesh"] = t.device_mesh.mesh.tolist()
    return d


def fsdp_params_by_name(model) -> dict:
    """Parameter name (before FSDP) -> its FSDPParam."""
    from torch.distributed.fsdp import FSDPModule
    names = {id(m): n for n, m in model.named_modules()}
    out = {}
    for m in model.modules():
        if not isinstance(m, FSDPModule):
            continue
        pg = m._get_fsdp_state()._fsdp_param_group
        if pg is None:
            continue
        for fp in pg.fsdp_params:
            prefix = names[id(fp._module_info.module)]
            out[(prefix + "." if prefix else "") + fp._module_info.param_name] = fp
    return out


def wrap_tp_fsdp2(model, c: dict, pc, mesh):
    """Accelerator.prepare with a tp-enabled ParallelismConfig and an FSDP2 plugin: _prepare_tp then
    (inside _prepare_fsdp2) fsdp2_prepare_model, both the real accelerate 1.14 functions, on a
    stand-in Accelerator (the Accelerator never selects FSDP on CPU)."""
    import accelerate.accelerator as acc_mod
    import accelerate.utils.fsdp_utils as fsdp_utils
    from accelerate.utils.fsdp_utils import fsdp2_prepare_model
    # accelerate's MultiProcessAdapter refuses to log without an AcceleratorState: plain loggers.
    fsdp_utils.logger = logging.getLogger("accelerate-standin")
    acc_mod.logger = logging.getLogger("accelerate-standin")
    standin = types.SimpleNamespace(
        state=types.SimpleNamespace(fsdp_plugin=o.make_plugin(c)), torch_device_mesh=mesh, parallelism_config=pc,
        mixed_precision="no", device=torch.device("cpu"), is_main_process=dist.get_rank() == 0, is_fsdp2=True,
        fp8_backend=None,
        _prepare_one=lambda obj, first_pass=False, device_placement=None: obj)
    standin._get_named_parameters = lambda *args, drop_refs=False: acc_mod.Accelerator._get_named_parameters(
        standin, *args, drop_refs=drop_refs)
    acc_mod.Accelerator._prepare_tp(standin, model)
    return fsdp2_prepare_model(standin, model)


def any_dtensor(model) -> bool:
    from torch.distributed.tensor import DTensor
    return any(isinstance(p, DTensor) for p in model.parameters())


class ReportCapture(logging.Handler):
    """Keeps transformers' load report (logged as a warning just before from_pretrained raises on a
    size mismatch) so the error record can say which keys mismatched."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.rows = []

    def emit(self, record):
        import re
        text = re.sub(r"\x1b\[[0-9;]*m", "", record.getMessage())
        for line in text.splitlines():
            if "MISMATCH" in line and "|" in line or "CONVERSION" in line and "|" in line:
                self.rows.append(" ".join(line.split()))


def tp_rank_main(c: dict, rank: int, W: int, store: str, result: str) -> None:
    o.rank_prologue(rank, W)
    rec, stage = {"rank": rank}, "init"
    capture = None
    try:
        dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=W)
        pc = pc_of(c)
        mesh = pc.build_device_mesh("cpu")
        rec["mesh_dim_names"] = list(mesh.mesh_dim_names)
        rec["mesh_shape"] = list(mesh.mesh.shape)
        rec.update(mesh_info(mesh))
        stage = "load"
        mu_logger = logging.getLogger("transformers.modeling_utils")
        capture = ReportCapture()
        mu_logger.addHandler(capture)
        mu_logger.setLevel(logging.WARNING)
        kwargs = load_kwargs(c["model"])
        if c.get("expert_parallel"):
            # Expert parallelism: the EP plan replaces the TP plan; the experts run transformers' default
            # grouped_mm (its eager loop does not handle a rank's share of the experts).
            from transformers.distributed import DistributedConfig
            kwargs = {"dtype": torch.float32, "distributed_config": DistributedConfig(enable_expert_parallel=True)}
        model = auto_class(c["model"]).from_pretrained(model_dir(c["model"]), tp_plan="auto", device_mesh=mesh["tp"],
                                                       **kwargs)
        rec["model_tp_size"] = getattr(model, "tp_size", None)
        if c.get("lora"):
            # PEFT after the TP load, as a Trainer with a peft_config does before accelerate prepares it.
            stage = "peft"
            model = with_lora(model, c["lora"])
            # Which plan each parameter's module got (transformers add_tensor_parallel_hooks_to_module
            # sets _hf_tp_plan on the loaded layers; peft on the adapters it gives one).
            owners = dict(model.named_modules())
            rec["hf_tp_plan"] = {n: getattr(owners[n.rsplit(".", 1)[0]], "_hf_tp_plan", None)
                                 for n, _ in model.named_parameters()}
            stage = "load"
        rec["tp"] = {n: tensor_info(p) for n, p in model.named_parameters()}
        # nn.Linear / nn.Embedding attributes transformers rewrites after sharding (update_module_attributes).
        rec["module_attrs"] = {n: {a: int(getattr(m, a)) for a in ("in_features", "out_features", "num_embeddings")
                                   if hasattr(m, a)}
                               for n, m in model.named_modules() if getattr(m, "_hf_tp_plan", None)}
        stage = "wrap"
        if c["mode"] == "fsdp2":
            rec["fsdp_mesh_dim_names"] = list(pc.fsdp_dim_names)
            # Accelerator._prepare_tp turns the plain parameters into Replicate DTensors on mesh["tp"]
            # only when the model already has a DTensor parameter; otherwise it logs and skips.
            rec["prepare_tp"] = "converted" if any_dtensor(model) else "skipped (no DTensor parameter)"
            model = wrap_tp_fsdp2(model, c, pc, mesh)
            stage = "lazy_init"
            o.lazy_init(model, c)
            fps = fsdp_params_by_name(model)
            rec["fsdp"] = {}
            for n, p in model.named_parameters():
                d = tensor_info(p)
                fp = fps.get(n)
                if fp is not None:
                    d["sharded_size"] = list(fp.sharded_size)
                    d["padded_rows"] = int(fp.padded_sharded_param_size[0]) if len(fp._orig_size) else 0
                    d["orig_size"] = list(fp._orig_size)
                rec["fsdp"][n] = d
            rec["groups"] = o.groups_fsdp2(model)
        else:
            # Accelerator.prepare_model, tp branch: nothing wrapped, the model's TP size must match.
            if model.tp_size != pc.tp_size:
                raise ValueError(f"tp_size in the plugin {pc.tp_size} should be same as model's tp size {model.tp_size}")
        stage = "step"
        rec["memory"] = o.step(model, c)
    except BaseException as e:  # noqa: BLE001 - every failure is a result here
        msg = repr(e) if isinstance(e, KeyError) else str(e)
        rec["error"] = {"type": type(e).__name__, "message": msg, "stage": stage}
        if stage == "load" and capture is not None and capture.rows:
            rec["error"]["load_report"] = capture.rows
        if os.environ.get("ORACLE_TRACE"):
            traceback.print_exc()
    with open(result, "w") as f:
        json.dump(rec, f)
    os._exit(0)


# --------------------------------------------------------------------------------------------
# Merging the ranks
# --------------------------------------------------------------------------------------------

REF: dict = {}  # model name -> reference(name), filled in the parent before forking


def tp_merge(c: dict, per_rank: list) -> dict:
    ref = REF[ref_key(c)]
    ckpt = checkpoint_shapes(c["model"])
    W = c["world_size"]
    out = {k: v for k, v in c.items() if k not in ("fsdp_version", "step")}
    out["versions"] = {"torch": torch.__version__, "transformers": o.transformers.__version__,
                       "accelerate": o.accelerate.__version__}
    r0 = next((r for r in per_rank if "mesh_dim_names" in r), {})
    out["mesh"] = dict(c["mesh"], cp=1, dim_names=r0.get("mesh_dim_names"), shape=r0.get("mesh_shape"),
                       fsdp_dims=(list(pc_of(c).fsdp_dim_names) if c["mode"] == "fsdp2" else None))
    errors = [r.get("error") for r in per_rank]
    if any(errors):
        out["error"] = next(x for x in errors if x)
        out["error_ranks"] = [i for i, x in enumerate(errors) if x]
        distinct = []
        for x in errors:
            if x and x not in distinct:
                distinct.append(x)
        if len(distinct) > 1:
            out["errors_distinct"] = distinct
    plan = ref["ep_plan"] if c.get("expert_parallel") else ref["tp_plan"]
    out["tp_plan"] = plan
    out["class_tp_plan"] = ref["class_tp_plan"]
    out["no_split_modules"] = ref["no_split_modules"]

    def per(key, n, field, default=None):
        return [r.get(key, {}).get(n, {}).get(field, default) if key in r else None for r in per_rank]

    params = []
    for n, full in ref["full_shapes"].items():
        from transformers.integrations.tensor_parallel import _get_parameter_tp_plan
        style = _get_parameter_tp_plan(n, plan, is_weight=True)
        if ref["lora"]:  # PEFT names: the plan each parameter's module carries after get_peft_model
            style = next((r["hf_tp_plan"].get(n) for r in per_rank if "hf_tp_plan" in r), None)
        p = {"name": n, "full_shape": full, "checkpoint_shape": ckpt.get(n), "tp_style": style}
        p["tp_is_dtensor"] = per("tp", n, "is_dtensor")
        p["tp_local_shape"] = per("tp", n, "local_shape")
        if any(p["tp_is_dtensor"]):
            p["tp_placements"] = per("tp", n, "placements")
        if any("fsdp" in r for r in per_rank):  # absent where no rank got through wrap and lazy init
            p["fsdp_is_dtensor"] = per("fsdp", n, "is_dtensor")
            p["fsdp_local_shape"] = per("fsdp", n, "local_shape")
            p["fsdp_sharded_size"] = per("fsdp", n, "sharded_size")
            p["fsdp_padded_rows"] = per("fsdp", n, "padded_rows")
            p["fsdp_orig_size"] = per("fsdp", n, "orig_size")
            p["fsdp_global_shape"] = per("fsdp", n, "global_shape")
            p["fsdp_placements"] = per("fsdp", n, "placements")
            p["fsdp_mesh_dim_names"] = per("fsdp", n, "mesh_dim_names")
            p["fsdp_mesh"] = per("fsdp", n, "mesh")
        params.append(p)
    out["params"] = params
    out["module_attrs"] = [{"module": m, "attrs": [r.get("module_attrs", {}).get(m) for r in per_rank]}
                           for m in sorted({m for r in per_rank for m in r.get("module_attrs", {})})]
    if all("groups" in r for r in per_rank):
        groups = [dict(g) for g in per_rank[0]["groups"]]
        for i, g in enumerate(groups):
            g["rank_sharded_shapes"] = [r["groups"][i]["sharded_shapes"] for r in per_rank]
            g.pop("sharded_shapes")
        out["groups"] = groups
    ranks = []
    for r in per_rank:
        ranks.append({k: r.get(k) for k in ("rank", "coordinate", "local_rank", "model_tp_size", "prepare_tp", "memory",
                                            "error")
                      if k in r})
    out["ranks"] = ranks
    assert len(ranks) == W
    return out


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------

def tp_case(model: str, D: int, T: int, R: int = 1, mode: str = "fsdp2", ep: bool = False,
            lora: dict | None = None) -> dict:
    W = R * D * T
    if mode == "fsdp2":
        name = f"{model}-fsdp2-tf" + (f"-r{R}" if R > 1 else "") + f"-d{D}-t{T}-w{W}"
    else:
        name = f"{model}-tponly-t{T}-w{W}"
    c = {"case": name + ("-ep" if ep else ""), "model": model, "mode": mode, "world_size": W, "fsdp_version": 2,
         "policy": o.TF(), "mesh": {"dp_replicate": R, "dp_shard": D, "tp": T}}
    if ep:
        c["expert_parallel"] = True
    if lora:
        c["case"] += "-lora"
        c["lora"] = lora
    return c


def all_cases() -> list:
    cs = []
    meshes = [(1, 2), (2, 2), (1, 4), (2, 4), (4, 2), (3, 2)]
    for m in ("llama_tp", "qwen3_tp"):
        for D, T in meshes:
            cs.append(tp_case(m, D, T))
        cs.append(tp_case(m, 2, 2, R=2))
    cs.append(tp_case("llama_tp", 1, 8))
    for D, T in ((2, 2), (1, 4)):
        cs.append(tp_case("qwen3_moe_tp", D, T))
    for D, T in ((1, 4), (2, 4)):
        cs.append(tp_case("llama_tp_kv2", D, T))
    cs.append(tp_case("qwen3_moe_tp_i16", 2, 4))
    # Pure TP (no FSDP): what the same loads do in forward/backward when accelerate wraps nothing.
    for m, T in (("llama_tp", 2), ("llama_tp", 4), ("llama_tp", 8), ("qwen3_tp", 2), ("qwen3_tp", 4),
                 ("qwen3_moe_tp", 2), ("qwen3_moe_tp", 4), ("llama_tp_kv2", 4),
                 ("qwen3_moe_tp_i16", 4)):
        cs.append(tp_case(m, 1, T, mode="tponly"))
    # Expert parallelism: whole experts per TP rank (base_model_ep_plan), attention whole.
    cs.append(tp_case("qwen3_moe_tp_i16", 1, 2, mode="tponly", ep=True))
    cs.append(tp_case("qwen3_moe_tp_i16", 2, 2, ep=True))
    # Vision-language models: the plan post_init gathers from the language model (no plan of their own).
    for m in ("llava", "llava_next", "llava_onevision", "qwen2_vl", "qwen2_5_vl", "mllama", "idefics3", "smolvlm",
              "paligemma", "gemma3"):
        cs.append(tp_case(m, 1, 2, mode="tponly"))
    # PEFT LoRA on the TP load (peft gives the adapters of colwise/rowwise layers their plans).
    lora = {"r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj", "o_proj", "down_proj"]}
    for D, T in ((2, 2), (1, 4), (2, 4)):
        cs.append(tp_case("llama_tp", D, T, lora=lora))
    cs.append(tp_case("qwen3_tp", 2, 2, lora=dict(lora, target_modules="all-linear")))
    return o.unique(cs)


def run_and_write(c: dict, timeout: float, progress: str) -> dict:
    res = o.run_case(c, timeout)  # forks o.rank_main (= tp_rank_main) per rank, merges with o.merge (= tp_merge)
    with open(os.path.join(OUT_TP, c["case"] + ".json"), "w") as f:
        f.write(o.dump(res))
    e = res.get("error")
    print(f"[{progress}] {c['case']}: " + (f"{e['stage']}: {e['type']}: {e['message'][:200]}" if e else "ok"),
          file=sys.stderr, flush=True)
    return res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="*")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--models", action="store_true", help="(re)build the TP models only")
    ap.add_argument("--timeout", type=float, default=240)
    a = ap.parse_args()
    cases = [c for c in all_cases() if fnmatch.fnmatch(c["case"], a.only)]
    if a.list:
        return o.list_cases(cases)
    os.makedirs(OUT_TP, exist_ok=True)
    info_path = os.path.join(o.OUT, "models", "models.json")
    infos = json.load(open(info_path)) if os.path.exists(info_path) else {}
    needed = sorted(TP_MODELS) if a.models else sorted({c["model"] for c in cases})
    for m in needed:
        if a.models or not os.path.exists(os.path.join(model_dir(m), "model.safetensors")):
            infos[m] = o.build_model(m, o.OUT)
            print("model", m, infos[m]["class"], infos[m]["num_params"], file=sys.stderr)
    with open(info_path, "w") as f:
        json.dump(dict(sorted(infos.items())), f, indent=1)
        f.write("\n")
    if a.models:
        return 0
    for c in cases:
        if ref_key(c) not in REF:
            REF[ref_key(c)] = reference(c["model"], c.get("lora"))
    o.rank_main = tp_rank_main
    o.merge = tp_merge
    t0 = time.time()
    for i, c in enumerate(cases):
        run_and_write(c, a.timeout * (2 if c["world_size"] > 4 else 1), f"{i + 1}/{len(cases)} {time.time() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
