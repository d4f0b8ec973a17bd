"""dump_model: a live torch module tree as the JSON of docs/module-tree.md (format_version 1).

Only the module API is used (named_modules, each module's _parameters, _buffers and
_non_persistent_buffers_set), so any object that has it can be dumped; nothing is imported.
"""
import importlib.metadata
import json
import math
import sys

FORMAT_VERSION = 1
_NAME_LISTS = (list, tuple, set, frozenset)


def held(value):
    """A names attribute (_no_split_modules, ...) exactly as the object holds it: its type and its
    items in the order iterating it gives (what accelerate's list(...) sees)."""
    if value is None:
        return {"type": "none", "value": None}
    if isinstance(value, str):
        return {"type": "str", "value": value}
    for kind in _NAME_LISTS:
        if isinstance(value, kind):
            return {"type": kind.__name__, "value": [str(v) for v in value]}
    return {"type": "list", "value": [str(v) for v in value]}


def _dtype_name(dtype):
    name = str(dtype)
    return name[len("torch."):] if name.startswith("torch.") else name


def _tensor(name, t):
    return {"name": name, "shape": [int(d) for d in t.shape], "dtype": _dtype_name(t.dtype)}


def _version(package):
    module = sys.modules.get(package)
    if module is not None and isinstance(getattr(module, "__version__", None), str):
        return module.__version__
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _jsonable(value):
    """The config dict made strict JSON: non-finite floats and unknown objects become strings."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _declared_string(modules):
    """The first class (of any module, in its MRO) whose own _no_split_modules is a string: transformers
    5.x post_init turns it into set(string), its characters (modeling_utils.py, 5.12.1)."""
    for _, module in modules:
        for klass in type(module).__mro__:
            value = vars(klass).get("_no_split_modules")
            if isinstance(value, str):
                return {"class": klass.__name__, "value": value}
    return None


def _path_of(target, modules):
    if target is None:
        return None
    for path, module in modules:
        if module is target:
            return path
    return None


def _call(model, method):
    fn = getattr(model, method, None)
    try:
        return fn() if callable(fn) else None
    except Exception:  # noqa: BLE001 - transformers raises NotImplementedError for models without one
        return None


def _model_fields(model, modules):
    config = getattr(model, "config", None)
    to_dict = getattr(config, "to_dict", None)
    base = getattr(model, "base_model", None)
    fields = {
        "class": type(model).__name__,
        "config": _jsonable(to_dict()) if callable(to_dict) else None,
        "base_model_path": _path_of(base, modules) if base is not model else None,
        "input_embeddings": _path_of(_call(model, "get_input_embeddings"), modules),
        "output_embeddings": _path_of(_call(model, "get_output_embeddings"), modules),
        "no_split_modules": held(getattr(model, "_no_split_modules", None)),
        "no_split_modules_declared": _declared_string(modules),
    }
    for attr in ("_keep_in_fp32_modules", "_keep_in_fp32_modules_strict"):
        value = getattr(model, attr, None)
        if value is not None:
            fields[attr[1:]] = held(value)
    for attr in ("_tp_plan", "_fsdp_plan"):
        plan = getattr(model, attr, None)
        if isinstance(plan, dict) and plan:
            fields[attr[1:]] = {str(k): str(v) for k, v in plan.items()}
    return fields


def _modules(modules):
    """Each module with its own parameters and buffers, in registration order; a Parameter met
    again under another name is recorded as tied_to its first name."""
    first_name = {}  # id(Parameter) -> the first full name it had
    out = []
    for path, module in modules:
        entry = {"path": path, "class": type(module).__name__, "parameters": [], "buffers": []}
        for name, p in getattr(module, "_parameters", {}).items():
            if p is None:
                continue
            full = f"{path}.{name}" if path else name
            record = _tensor(name, p)
            record["requires_grad"] = bool(p.requires_grad)
            if id(p) in first_name:
                record["tied_to"] = first_name[id(p)]
            else:
                first_name[id(p)] = full
            entry["parameters"].append(record)
        transient = getattr(module, "_non_persistent_buffers_set", set())
        for name, b in getattr(module, "_buffers", {}).items():
            if b is not None:
                record = _tensor(name, b)
                record["persistent"] = name not in transient
                entry["buffers"].append(record)
        out.append(entry)
    return out


def _classes(modules):
    classes = {}
    for _, module in modules:
        klass = type(module)
        if klass.__name__ not in classes:
            classes[klass.__name__] = [k.__name__ for k in klass.__mro__ if k is not object]
    return classes


def dump_model(model):
    """The module tree of `model` as it is now (its freezing, wrappers and dtypes), as a dict."""
    modules = list(model.named_modules(remove_duplicate=False))
    producer = {"shardcheck": "0.1.0", "python": sys.version.split()[0]}
    for package in ("torch", "transformers", "accelerate", "peft"):
        producer[package] = _version(package)
    return {
        "format": "shardcheck-module-tree",
        "format_version": FORMAT_VERSION,
        "producer": producer,
        "model": _model_fields(model, modules),
        "classes": _classes(modules),
        "modules": _modules(modules),
    }


def write_tree(tree, path):
    """Writes a dump as strict JSON (no NaN), one module per line."""
    with open(path, "w", encoding="utf-8") as f:
        head = {k: v for k, v in tree.items() if k != "modules"}
        text = json.dumps(head, indent=1, allow_nan=False, ensure_ascii=False)
        f.write(text[:-2] + ',\n "modules": [\n')
        f.write(",\n".join("  " + json.dumps(m, allow_nan=False, ensure_ascii=False) for m in tree["modules"]))
        f.write("\n ]\n}\n")
