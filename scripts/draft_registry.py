#!/usr/bin/env python3
"""Drafts a registry file (rules/models/<model_type>.yaml) from a transformers record.

  scripts/oracle2_run.sh python3 scripts/hf_record.py --only 'default-cohere'   # record a model first
  python3 scripts/draft_registry.py fixtures/hf-records/default-cohere.json > rules/models/cohere.yaml

The draft has what a record can give: the head class, every class with its children in
registration order, numbered children folded into `repeat:` over the config field whose value is
their count, and each parameter's shape with every dimension replaced by the config field of that
value when exactly one field has it (else the literal number, marked `# TODO`). It is a first draft
for review, never a finished file: formulas that combine fields (num_attention_heads * head_dim),
conditions (`if:`), version variants and the activation model are the reviewer's to write, against the
modeling file. tests/unit/test_hf_records.cpp then says whether the result equals the record.
"""
from __future__ import annotations

import json
import re
import sys
from collections import OrderedDict


def config_fields(config: dict) -> dict:
    """value -> [field names] for the integer fields of the config (nested text_config skipped)."""
    out: dict = {}
    for k, v in config.items():
        if isinstance(v, bool) or not isinstance(v, int) or v <= 1:
            continue
        out.setdefault(v, []).append(k)
    return out


def dim_expr(n: int, fields: dict) -> str:
    names = fields.get(n, [])
    return names[0] if len(names) == 1 else str(n)


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    rec = json.load(open(sys.argv[1]))
    config = rec["config"]
    fields = config_fields(config)
    cls_of = {path: cls for path, cls in rec["modules"]}
    children: "OrderedDict[str, list]" = OrderedDict((p, []) for p, _ in rec["modules"])
    for path, _ in rec["modules"]:
        if path:
            parent = path.rsplit(".", 1)[0] if "." in path else ""
            children[parent].append(path)
    params: dict = {}
    for name, shape, _dtype in rec["params"]:
        module, pname = name.rsplit(".", 1) if "." in name else ("", name)
        params.setdefault(module, []).append((pname, shape))

    def builtin_entry(path: str, cls: str):
        """A torch layer written in its parent with its constructor arguments (rules/models/_torch.yaml)."""
        ps = dict(params.get(path, []))
        if cls == "Linear" and "weight" in ps:
            out_f, in_f = ps["weight"]
            return (f"{{class: Linear, args: {{in_features: {dim_expr(in_f, fields)}, "
                    f"out_features: {dim_expr(out_f, fields)}, bias: {'true' if 'bias' in ps else 'false'}}}}}")
        if cls == "Embedding" and "weight" in ps:
            num, dim = ps["weight"]
            return (f"{{class: Embedding, args: {{num_embeddings: {dim_expr(num, fields)}, "
                    f"embedding_dim: {dim_expr(dim, fields)}}}}}")
        return None

    classes: "OrderedDict[str, dict]" = OrderedDict()
    for path, cls in rec["modules"]:
        if cls in classes or cls in ("ModuleList", "ModuleDict", "Linear", "Embedding"):
            continue
        spec: dict = {"children": OrderedDict(), "params": OrderedDict()}
        kids = children[path]
        for kid in kids:
            attr = kid.rsplit(".", 1)[-1]
            kcls = cls_of[kid]
            if kcls == "ModuleList":
                items = children[kid]
                count = len(items)
                item_cls = cls_of[items[0]] if items else "?"
                # A count several fields share: prefer the one that names layers or experts.
                named = [f for f in fields.get(count, []) if "layer" in f or "expert" in f]
                repeat = named[0] if len(named) == 1 else dim_expr(count, fields)
                spec["children"][attr] = {"repeat": repeat, "item": item_cls}
            else:
                spec["children"][attr] = builtin_entry(kid, kcls) or kcls
        for pname, shape in params.get(path, []):
            spec["params"][pname] = [dim_expr(d, fields) for d in shape]
        classes[cls] = spec

    out = []
    out.append(f"# Draft from {sys.argv[1]} (transformers {rec['versions']['transformers']}): review every shape")
    out.append("# against the modeling file; numbers no single config field explains are marked TODO.")
    out.append(f"model_type: {config.get('model_type')}")
    out.append(f'architectures: ["{rec["class"]}"]')
    out.append(f"no_split_modules: {json.dumps(rec['no_split_modules'])}")
    if rec["tied"]:
        out.append("tied_weights:")
        for alias, target in rec["tied"]:
            out.append(f"  {alias}: {target}")
    out.append("")
    out.append("classes:")
    for cls, spec in classes.items():
        if not spec["children"] and not spec["params"]:
            out.append(f'  "{cls}": {{}}')
            continue
        out.append(f'  "{cls}":')
        if spec["children"]:
            out.append("    children:")
            for attr, v in spec["children"].items():
                if isinstance(v, dict):
                    todo = "  # TODO: count" if re.fullmatch(r"\d+", str(v["repeat"])) else ""
                    out.append(f'      {attr}: {{repeat: {v["repeat"]}, item: "{v["item"]}"}}{todo}')
                elif v.startswith("{"):
                    todo = "  # TODO" if re.search(r": \d+[,}]", v) else ""
                    out.append(f"      {attr}: {v}{todo}")
                else:
                    out.append(f'      {attr}: "{v}"')
        if spec["params"]:
            out.append("    params:")
            for pname, dims in spec["params"].items():
                todo = "  # TODO" if any(re.fullmatch(r"\d+", d) for d in dims) else ""
                out.append(f"      {pname}: [{', '.join(dims)}]{todo}")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
