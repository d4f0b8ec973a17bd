#!/usr/bin/env python3
"""Rewrites the architecture table of docs/torch-versions.md from the repository: every registry file
(model_type, `since`), the transformers 5.12.1 records whose config is of that type
(fixtures/hf-records/) and the torch 2.14.1 FSDP cases of its tiny models (fixtures/oracle2/).

  python3 scripts/architectures_table.py
"""
import glob
import json
import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(REPO, "docs", "torch-versions.md")
HEADING = "## Architectures and the transformers release each was checked against"


def main() -> None:
    types = sorted(os.path.basename(f)[:-5] for f in glob.glob(os.path.join(REPO, "rules", "models", "*.yaml"))
                   if not os.path.basename(f).startswith("_"))
    records = {}
    for r in glob.glob(os.path.join(REPO, "fixtures", "hf-records", "*.json")):
        cfg = json.load(open(r)).get("config", {})
        for t in {cfg.get("model_type")} | {v.get("model_type") for v in cfg.values() if isinstance(v, dict)}:
            records[t] = records.get(t, 0) + 1
    cases = {}
    for c in glob.glob(os.path.join(REPO, "fixtures", "oracle2", "*.json")):
        model = json.load(open(c)).get("model", "")
        mt = json.load(open(os.path.join(REPO, "fixtures", "oracle2", "models", model, "config.json"))).get(
            "model_type") if os.path.exists(os.path.join(REPO, "fixtures", "oracle2", "models", model, "config.json")) else None
        if mt:
            cases[mt] = cases.get(mt, 0) + 1
    rows = []
    for t in types:
        since = ""
        for line in open(os.path.join(REPO, "rules", "models", t + ".yaml")):
            if line.startswith("since:"):
                since = line.split(":", 1)[1].split("#")[0].strip().strip('"')
        rows.append(f"| `{t}` | {since or '—'} | {records.get(t, 0)} | {cases.get(t, 0)} |")
    table = f"""{HEADING}

Every registry file describes transformers **5.12.1**'s module tree, checked against what real
transformers 5.12.1 builds on the meta device (`fixtures/hf-records/`, `tests/unit/test_hf_records.cpp`:
modules, classes, order, parameter shapes, tied weights, `_no_split_modules`) and, for the tiny model of
each (vision-language models trained on an image), against real FSDP1/FSDP2 (`fixtures/oracle2/`).
Older layouts (4.x attention classes, 4.x MoE experts) are read from the sources named in each file's
header and not run. `since` is the first transformers release with the model, as each file sources it.
A sub-model type (a vision tower, a composite's text model) is counted in the records and cases of the
composites that hold it. Written by `scripts/architectures_table.py`.

| model_type | since | transformers 5.12.1 records | torch 2.14.1 FSDP cases |
|---|---|---|---|
""" + "\n".join(rows) + "\n"
    doc = open(DOC).read()
    at = doc.find(HEADING)
    doc = (doc[:at] if at >= 0 else doc.rstrip("\n") + "\n\n") + table
    open(DOC, "w").write(doc)
    print(f"{len(types)} model types")


if __name__ == "__main__":
    main()
