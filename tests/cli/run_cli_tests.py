#!/usr/bin/env python3
"""Runs the shardcheck binary on fixtures and checks exit codes and output.

Every tests/cli/*_cases.py module exposes CASES: a list of dicts with
  name, args (list; "{src}" and "{work}" and "{gen}" are substituted), exit (expected code, or a tuple),
  stdout / stderr (substrings that must appear), not_stdout / not_stderr (must not appear),
  json (callable taking the parsed stdout JSON, returning None or an error string),
  env (extra environment variables), stdin (text).
The last line printed is "N passed, M failed", the form CI reads.
"""
import argparse
import importlib.util
import json
import os
import pathlib
import subprocess
import sys


def load_cases(cli_dir):
    cases = []
    for path in sorted(cli_dir.glob("*_cases.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for case in mod.CASES:
            case.setdefault("name", " ".join(case["args"]))
            cases.append((path.stem, case))
    return cases


def run_case(binary, subst, case):
    args = [a.format(**subst) for a in case["args"]]
    env = dict(os.environ)
    env.update({k: v.format(**subst) for k, v in case.get("env", {}).items()})
    env.setdefault("NO_COLOR", "1")
    proc = subprocess.run([binary] + args, capture_output=True, text=True, env=env, cwd=case.get("cwd", "").format(**subst) or None,
                          input=case.get("stdin"), timeout=case.get("timeout", 120))
    problems = []
    expected = case.get("exit", 0)  # a code, or a tuple of the codes that are all right
    if proc.returncode not in (expected if isinstance(expected, tuple) else (expected,)):
        problems.append(f"exit code {proc.returncode}, expected {expected}")
    for stream, text in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        for needle in case.get(stream, []):
            if needle.format(**subst) not in text:
                problems.append(f"{stream} lacks {needle!r}")
        for needle in case.get("not_" + stream, []):
            if needle.format(**subst) in text:
                problems.append(f"{stream} has unexpected {needle!r}")
    if CATALOGUE and proc.stdout.startswith("{"):
        problems += catalogue_mismatches(proc.stdout)
    if "text" in case and not problems:  # a check of the whole stdout (HTML pages), may run the binary
        err = case["text"](proc.stdout, binary, subst)
        if err:
            problems.append(err)
    if "json" in case and not problems:
        try:
            doc = json.loads(proc.stdout)
        except json.JSONDecodeError as e:
            problems.append(f"stdout is not JSON: {e}")
        else:
            err = case["json"](doc)
            if err:
                problems.append(err)
    return problems, proc


CATALOGUE = {}  # id -> `shardcheck rules --format json` entry, loaded in main()
SEVERITY_RANK = {"note": 0, "warning": 1, "error": 2}


def catalogue_mismatches(stdout):
    """Every diagnostic in a JSON output against its catalogue entry: the code is documented, no
    harsher than documented, and an error exits with the documented code."""
    try:
        doc = json.loads(stdout)
    except json.JSONDecodeError:
        return []
    problems = []
    for d in doc.get("diagnostics", []) if isinstance(doc, dict) else []:
        entry = CATALOGUE.get(d["rule"])
        if entry is None:
            problems.append(f"{d['rule']}: not in `shardcheck rules` (src/codes/ or src/rules/)")
        elif SEVERITY_RANK[d["severity"]] > SEVERITY_RANK[entry["severity"]]:
            problems.append(f"{d['rule']}: reported as {d['severity']}, documented as {entry['severity']}")
        elif entry["kind"] == "finding" and d["severity"] == "error" and d["exit_code"] != entry["exit_code"]:
            problems.append(f"{d['rule']}: exit code {d['exit_code']}, documented as {entry['exit_code']}")
    return problems


def print_failure(title, problems, proc):
    """A failed case: what was wrong, then the tail of both streams."""
    print(f"FAIL {title}")
    for p in problems:
        print(f"    {p}")
    print("    --- stdout (tail) ---\n" + "\n".join("    " + l for l in proc.stdout.splitlines()[-15:]))
    print("    --- stderr (tail) ---\n" + "\n".join("    " + l for l in proc.stderr.splitlines()[-15:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default="", help="substring filter on case names")
    opts = ap.parse_args()
    source = pathlib.Path(opts.source)
    work = pathlib.Path(opts.work)
    work.mkdir(parents=True, exist_ok=True)
    subst = {"src": str(source), "work": str(work), "gen": str(work.parent / "generated")}
    for entry in json.loads(subprocess.run([opts.binary, "rules", "--format", "json"], capture_output=True,
                                           text=True, check=True).stdout):
        CATALOGUE[entry["id"]] = entry
    passed = failed = 0
    for module, case in load_cases(source / "tests" / "cli"):
        if opts.only and opts.only not in case["name"]:
            continue
        problems, proc = run_case(opts.binary, subst, case)
        if problems:
            failed += 1
            print_failure(f"[{module}] {case['name']}", problems, proc)
        else:
            passed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
