#!/usr/bin/env python3
"""Quick conformance check of registry files against their transformers records, through the CLI.

  python3 scripts/check_records.py [--binary build/shardcheck] [GLOB...]   # default: every record

The same comparison as tests/unit/test_hf_records.cpp (head class, parameters with their shapes in
named_parameters() order, classes of the modules holding parameters, tied aliases,
_no_split_modules), but through `shardcheck inspect --format json` on each record's config, so that
registry files can be drafted and fixed (scripts/registry_autodraft.py) without rebuilding the unit
tests. The unit test stays the judge in CI. Prints one line per record: ok, or the first difference.
"""
import argparse
import fnmatch
import glob
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def check(binary: str, path: str, work: str) -> str | None:
    rec = json.load(open(path))
    d = os.path.join(work, rec["name"])
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(rec["config"], f)
    tv = rec["versions"]["transformers"].split("+")[0]
    p = subprocess.run([binary, "--rules", os.path.join(REPO, "rules"), "inspect", "--format", "json",
                        "--transformers-version", tv, d]
                       # from_config builds a quantised config's model unquantised (as the unit test does).
                       + (["--dequantize"] if "quantization_config" in rec["config"] else []),
                       capture_output=True, text=True)
    try:
        out = json.loads(p.stdout)
    except json.JSONDecodeError:
        return f"no tree: {(p.stderr or p.stdout).strip()[:400]}"
    errs = [x for x in out.get("diagnostics", []) if x.get("severity") == "error"]
    if errs:
        return "diagnostics: " + "; ".join(f"[{x.get('code')}] {x.get('message')}" for x in errs)[:600]
    if out["architecture"] != rec["class"]:
        return f"class {out['architecture']} != {rec['class']}"
    ours, mods = [], {}
    for m in out["modules"]:
        for p_ in m["params"]:
            full = f"{m['path']}.{p_['name']}" if m["path"] else p_["name"]
            if p_.get("buffer") or p_.get("tied_to"):
                continue
            ours.append((full, p_["shape"]))
            mods[m["path"]] = m["class"]
    theirs = [(n, s) for n, s, _ in rec["params"]]
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a[0] != b[0] or list(a[1]) != list(b[1]):
            return f"param {i}: ours {a[0]} {a[1]} vs transformers {b[0]} {b[1]}"
    if len(ours) != len(theirs):
        extra = ours[len(theirs):] or theirs[len(ours):]
        return f"{len(ours)} params vs {len(theirs)}; first extra {extra[0]}"
    their_cls = dict((p_, c) for p_, c in rec["modules"])
    for path_, c in mods.items():
        if their_cls.get(path_) != c:
            return f"module {path_}: {c} vs {their_cls.get(path_)}"
    if sorted(set(out["no_split_modules"])) != rec["no_split_modules"]:
        return f"no_split {sorted(set(out['no_split_modules']))} vs {rec['no_split_modules']}"
    if sorted(map(tuple, out.get("tied", []))) != sorted(map(tuple, rec["tied"])):
        return f"tied {out.get('tied')} vs {rec['tied']}"
    return None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(REPO, "build", "shardcheck"))
    ap.add_argument("globs", nargs="*", default=["*"])
    a = ap.parse_args()
    files = sorted(f for f in glob.glob(os.path.join(REPO, "fixtures", "hf-records", "*.json"))
                   if any(fnmatch.fnmatch(os.path.basename(f)[:-5], g) for g in a.globs))
    bad = 0
    with tempfile.TemporaryDirectory() as work:
        for f in files:
            r = check(a.binary, f, work)
            print(f"{os.path.basename(f)[:-5]}: {r or 'ok'}")
            bad += r is not None
    print(f"{len(files) - bad}/{len(files)} conform", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
