#!/usr/bin/env python3
"""Compares a fuzz run (scripts/oracle/fuzz_oracle.py) with shardcheck and keeps what CI must hold.

  python3 scripts/oracle/fuzz_keep.py fuzz-out/seed-7 [--sample 60] [--binary build/shardcheck_tests]

Runs the unit test "fuzz oracle: a fresh run" over the directory (SHARDCHECK_FUZZ_DIR), reads which
cases failed from doctest's context lines (`name := <case>`), prints the tally, and copies every
failing case and a seeded sample of the passing ones, with their models' config.json, to
fixtures/fuzz/seed-<N>/ (model_dir rewritten). Host-side: needs the built test binary, not the chroot.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def failing_cases(binary: str, run_dir: str) -> tuple[set, str]:
    env = dict(os.environ, SHARDCHECK_FUZZ_DIR=os.path.abspath(run_dir))
    out = subprocess.run([binary, "-tc=fuzz oracle: a fresh run*"], env=env, capture_output=True, text=True)
    text = out.stdout + out.stderr
    return set(re.findall(r"name := (\S+)", text)), text


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("--sample", type=int, default=60, help="passing cases to keep")
    ap.add_argument("--binary", default=os.path.join(REPO, "build", "shardcheck_tests"))
    ap.add_argument("--dry-run", action="store_true", help="report only, copy nothing")
    ap.add_argument("--also", nargs="*", default=[], help="case names to keep as well (fixed regressions)")
    ap.add_argument("--open", nargs="*", default=[],
                    help="failing case names not to keep (not yet modelled: listed in docs/fuzzing.md instead)")
    a = ap.parse_args()
    cases_dir = os.path.join(a.run_dir, "cases")
    names = sorted(f[:-5] for f in os.listdir(cases_dir) if f.endswith(".json"))
    failed, text = failing_cases(a.binary, a.run_dir)
    tally = re.search(r"compared \d+ fuzz cases[^\n]*", text)
    print(tally.group(0) if tally else text[-2000:])
    print(f"{len(names) - len(failed)} of {len(names)} match; failing: {len(failed)}")
    for n in sorted(failed):
        print("  FAIL", n)
    if a.dry_run:
        return 0
    seed_name = os.path.basename(os.path.normpath(a.run_dir))
    dest = os.path.join(REPO, "fixtures", "fuzz", seed_name)
    passing = [n for n in names if n not in failed]
    # Besides failures and a sample: every case that freezes or ignores something (the tied-Parameter
    # semantics), loads a model with float32 modules in half precision, or replicates without sharding,
    # and the names given.
    def telling(n: str) -> bool:
        c = json.load(open(os.path.join(cases_dir, n + ".json")))
        return bool(c.get("frozen") or c.get("ignored_modules") or (c.get("load_dtype", "float32") != "float32" and
                                                                   c.get("model_type") in ("gpt_oss", "deepseek_v3"))
                    or c.get("dp_replicate", 1) == c["world_size"] > 1) or n in a.also
    chosen = {n for n in passing if telling(n)}
    rest = [n for n in passing if n not in chosen]
    chosen |= set(random.Random(seed_name).sample(rest, min(a.sample, len(rest))))
    keep = sorted(failed - set(a.open)) + sorted(chosen)
    os.makedirs(os.path.join(dest, "cases"), exist_ok=True)
    for n in keep:
        c = json.load(open(os.path.join(cases_dir, n + ".json")))
        model_src = os.path.join(a.run_dir, "models", c["model"], "config.json")
        model_dst = os.path.join(dest, "models", c["model"])
        os.makedirs(model_dst, exist_ok=True)
        shutil.copy(model_src, os.path.join(model_dst, "config.json"))
        c["model_dir"] = os.path.relpath(model_dst, REPO)
        shutil.copy(os.path.join(cases_dir, n + ".json"), os.path.join(dest, "cases", n + ".json"))
        # keep the record byte-identical except model_dir (the oracle's one-line-per-key format)
        path = os.path.join(dest, "cases", n + ".json")
        body = open(path).read()
        body = re.sub(r'"model_dir": "[^"]*"', f'"model_dir": "{c["model_dir"]}"', body)
        open(path, "w").write(body)
    print(f"kept {len(keep)} cases in {os.path.relpath(dest, REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
