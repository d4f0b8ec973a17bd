#!/usr/bin/env python3
"""The public corpus as a test (issue #37): every real accelerate config under configs/ and every
training recipe under recipes/ is run through shardcheck, and each finding is held to its judgement in
judgements.yaml (true or false, with the upstream source that says so).

Per file:
  configs/X: `lint --format json --no-env X` and, when the judgement names a model,
             `check --config X --model fixtures/models/M --format json --no-env`.
  recipes/X: `lint --format json --no-env X` (the file kind is said, not 39 unknown keys) and
             `check --training-args X --model fixtures/models/M --format json --no-env`.

The test fails on
  * a crash, a hang (10 s), an exit code outside 0-12, or an exit code that disagrees with the findings
    (0 with an error, or non-zero with neither an error nor a load failure);
  * a finding that has no judgement (judge it: true or false, and why, citing upstream);
  * an error that the judgement marks false (a false error: fix shardcheck, then the judgement);
  * a judgement for a finding that is no longer reported (stale: update judgements.yaml).
False warnings are counted and listed but do not fail the run. The last line is "N passed, M failed".
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import subprocess
import sys

import yaml

HERE = pathlib.Path(__file__).resolve().parent
TIMEOUT_S = 10
ALLOWED_EXITS = set(range(0, 13))


def run(binary, args):
    env = dict(os.environ)
    # The judgements are of shardcheck's defaults (accelerate 1.14.0, torch 2.14.1, transformers 5.12.1): an
    # active virtualenv or conda environment would make check read other releases from it.
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        env.pop(var, None)
    env["NO_COLOR"] = "1"
    env["HF_HUB_OFFLINE"] = "1"
    try:
        proc = subprocess.run([binary] + args, capture_output=True, text=True, timeout=TIMEOUT_S, env=env,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {TIMEOUT_S} s"
    return proc.returncode, proc.stdout, proc.stderr


def findings_of(stdout):
    try:
        doc = json.loads(stdout)
    except json.JSONDecodeError:
        return None
    out = []
    for d in doc.get("diagnostics", []) if isinstance(doc, dict) else []:
        out.append(d)
    return out


def commands_for(rel, judgement, binary, source):
    path = str(HERE / rel)
    cmds = [("lint", ["lint", "--format", "json", "--no-env", path])]
    model = judgement.get("model")
    if model:
        model_dir = str(source / "fixtures" / "models" / model)
        extra = [str(a) for a in judgement.get("check_args", [])]
        if rel.startswith("configs/"):
            cmds.append(("check", ["check", "--config", path, "--model", model_dir, "--format", "json", "--no-env"] + extra))
        else:
            cmds.append(("check", ["check", "--training-args", path, "--model", model_dir, "--format", "json", "--no-env"]
                         + extra))
    return cmds


def check_file(rel, judgement, binary, source):
    """Returns (problems, stats) for one corpus file."""
    problems = []
    stats = {"findings": 0, "errors": 0, "false_errors": 0, "false_warnings": [], "true": 0, "false": 0}
    judged = judgement.get("findings") or {}
    seen = set()
    for name, args in commands_for(rel, judgement, binary, source):
        code, stdout, stderr = run(binary, args)
        if code is None:
            problems.append(f"{name}: {stderr}")
            continue
        if code < 0 or code not in ALLOWED_EXITS:
            problems.append(f"{name}: exit code {code} (crash or internal error): {stderr.strip()[:300]}")
            continue
        diags = findings_of(stdout)
        if diags is None:
            problems.append(f"{name}: stdout is not JSON (exit {code}): {stderr.strip()[:300]}")
            continue
        has_error = any(d["severity"] == "error" for d in diags)
        if code == 0 and has_error:
            problems.append(f"{name}: exit 0 with an error finding")
        if code != 0 and not has_error and not stderr.strip():
            problems.append(f"{name}: exit {code} with no error finding and no message")
        for d in diags:
            key = f"{name} {d['rule']}"
            seen.add(key)
            stats["findings"] += 1
            if d["severity"] == "error":
                stats["errors"] += 1
            verdict = judged.get(key)
            if verdict is None:
                problems.append(f"not judged: {key} ({d['severity']}) at {d['line']}:{d['column']}: {d['message']}")
                continue
            ok = bool(verdict[0])
            stats["true" if ok else "false"] += 1
            if not ok and d["severity"] == "error":
                stats["false_errors"] += 1
                problems.append(f"FALSE ERROR {key} at {d['line']}:{d['column']}: {d['message']} -- judged: {verdict[1]}")
            elif not ok:
                stats["false_warnings"].append(f"{rel}: {key}: {verdict[1]}")
    for key in judged:
        if key not in seen:
            problems.append(f"stale judgement: {key} is no longer reported")
    return problems, stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--jobs", type=int, default=4)
    args = ap.parse_args()
    source = pathlib.Path(args.source)
    judgements = yaml.safe_load((HERE / "judgements.yaml").read_text(encoding="utf-8")) or {}
    files = sorted(str(p.relative_to(HERE)) for sub in ("configs", "recipes") for p in (HERE / sub).glob("*.yaml"))
    passed = failed = 0
    totals = {"findings": 0, "errors": 0, "false_errors": 0, "true": 0, "false": 0}
    false_warnings = []
    for rel in sorted(set(judgements) - set(files)):
        print(f"FAIL {rel}: judged but not in the corpus")
        failed += 1
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {rel: pool.submit(check_file, rel, judgements.get(rel) or {}, args.binary, source) for rel in files}
        for rel in files:
            problems, stats = futures[rel].result()
            for k in totals:
                totals[k] += stats[k]
            false_warnings += stats["false_warnings"]
            if problems:
                failed += 1
                print(f"FAIL {rel}")
                for p in problems:
                    print(f"  {p}")
            else:
                passed += 1
    n_configs = sum(1 for f in files if f.startswith("configs/"))
    print(f"corpus: {n_configs} accelerate configs, {len(files) - n_configs} training recipes; "
          f"{totals['findings']} findings ({totals['errors']} errors), {totals['true']} judged true, "
          f"{totals['false']} judged false; false errors: {totals['false_errors']} of {totals['errors']}")
    for w in false_warnings:
        print(f"false warning (not failing): {w}")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
