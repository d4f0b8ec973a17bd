"""build_model: a model directory's model built on the meta device (no weights read), as
from_pretrained would build it: its class, dtype, tied weights and float32-kept modules."""
import json
import os
import re

_AUTO_CLASSES = ("AutoModelForCausalLM", "AutoModelForImageTextToText", "AutoModelForSeq2SeqLM", "AutoModel")


def _dtype(torch, config, name):
    """from_pretrained's dtype: "auto" takes config.json's dtype (transformers 5.x default), else float32."""
    if name in (None, "", "auto"):
        name = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None) or "float32"
    if isinstance(name, str):
        name = getattr(torch, name.replace("torch.", ""))
    return name


def _model_class(transformers, config, trust_remote_code):
    auto_map = getattr(config, "auto_map", None) or {}
    if trust_remote_code and auto_map:
        for auto in _AUTO_CLASSES:
            if auto in auto_map:
                return getattr(transformers, auto)
    for arch in getattr(config, "architectures", None) or []:
        if hasattr(transformers, arch):
            return getattr(transformers, arch)
    return transformers.AutoModelForCausalLM


def _keep_in_fp32(torch, model, dtype):
    """transformers 5.x casts _keep_in_fp32_modules(_strict) parameters to float32 while loading
    (modeling_utils.py _get_dtype_plan; each pattern a glob searched in the name, core_model_loading.py)."""
    plan_fn = getattr(model, "_get_dtype_plan", None)
    plan = plan_fn(dtype) if callable(plan_fn) else {}
    if not plan:
        return
    rx = re.compile("|".join(f"({p.replace('*', '.*')})" for p in plan))
    for name, p in model.named_parameters():
        if rx.search(name) and p.dtype != torch.float32:
            p.data = p.data.to(torch.float32)


def build_model(model_dir, trust_remote_code=False, adapter=None, dtype="auto"):
    import torch
    import transformers

    config = transformers.AutoConfig.from_pretrained(model_dir, trust_remote_code=trust_remote_code)
    target = _dtype(torch, config, dtype)
    cls = _model_class(transformers, config, trust_remote_code)
    kwargs = {"trust_remote_code": True} if cls.__name__.startswith("Auto") and trust_remote_code else {}
    with torch.device("meta"):
        if cls.__name__.startswith("Auto"):
            model = cls.from_config(config, dtype=target, **kwargs)
        else:
            model = cls._from_config(config, dtype=target)
        _keep_in_fp32(torch, model, target)
        if adapter:
            model = _with_adapter(model, adapter)
    return model


def _with_adapter(model, adapter):
    """peft's get_peft_model with the adapter's own LoraConfig (adapter_config.json), as a training
    run builds it; the saved adapter weights are not read."""
    import peft

    path = adapter if adapter.endswith(".json") else os.path.join(adapter, "adapter_config.json")
    with open(path, encoding="utf-8") as f:
        config = peft.LoraConfig(**{k: v for k, v in json.load(f).items() if k in peft.LoraConfig.__dataclass_fields__})
    config.inference_mode = False
    return peft.get_peft_model(model, config)
