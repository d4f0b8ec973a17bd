#!/usr/bin/env python3
"""`plan --format html` in a real browser: Debian's headless Chromium opens each page from disk (no
network), runs its script, and the DOM it dumps must hold the JSON plan's numbers (every setting row,
each rank's total) with no console error, within a second of page time for the 671B DeepSeek-V3.

  run_html_tests.py --binary build/shardcheck --source . --work build/html-work --generated build/generated
"""
import argparse
import json
import html
import pathlib
import re
import shutil
import subprocess
import sys
import time

PAGES = [
    ("llama", ["fixtures/models/llama", "--world-size", "3"]),
    ("llama3-8b", ["fixtures/corpus-configs/meta-llama__Meta-Llama-3-8B.json", "--world-size", "8", "--mixed-precision",
                   "bf16", "--seq-len", "4096", "--micro-batch", "2", "--activation-checkpointing", "true"]),
    ("deepseek-v3", ["{generated}/deepseek-v3", "--world-size", "64", "--dequantize", "--mixed-precision", "bf16"]),
    ("llama-fsdp2", ["fixtures/models/llama", "--world-size", "2", "--fsdp-version", "2"]),
]

# Settings FSDP2 never reads (accelerate utils/dataclasses.py, v1.14.0: FullyShardedDataParallelPlugin
# takes reshard_after_forward instead of sharding_strategy, warns "use_orig_params is obsolete in FSDP2"
# and sets backward_prefetch to None, "not supported in FSDP2"): an FSDP2 page must not list them.
FSDP1_ONLY = {"sharding_strategy", "use_orig_params", "backward_prefetch"}


def readable(dom, want):
    """What a reader sees without hovering: sizes, a scale, plain words and values."""
    problems = []
    parts = re.findall(r'<div class="parts">(.*?)</div>', dom)
    segments = len(re.findall(r'<span class="seg"', dom))
    shown = sum(len(re.findall(r"<span data-part=", p)) for p in parts)
    if not parts or shown != segments:
        problems.append(f"{shown} segment sizes printed for {segments} segments")
    elif any(not re.search(r"[0-9] (B|KiB|MiB|GiB|TiB)", re.sub(r"<[^>]+>", "", p)) for p in parts):
        problems.append("a row of segment sizes has no size in it")
    if len(re.findall(r'<span class="tick"', dom)) != 5:
        problems.append("the bar has no scale (0 .. 100% of it, five ticks)")
    verdict = re.search(r'id="verdict">([^<]*)<', dom)
    if not verdict or "_" in verdict.group(1):
        problems.append(f"the verdict badge reads {verdict.group(1) if verdict else None!r}, not words")
    if re.search(r'<tr><td>[a-z0-9_]+</td><td>"', dom):
        problems.append("a setting's value is JSON-quoted")
    # The replayed step's peak (docs/step-peak.md) is shown with its moment, as the JSON gives it.
    step = want.get("memory", {}).get("step", {})
    if step.get("replayed"):
        shown_peak = re.search(r'<p id="step-peak">[^<]*<b>[^<]*</b> at ([^<]*) \(rank', dom)
        if not shown_peak or shown_peak.group(1) != html.escape(step["peak"]["moment"], quote=False):
            problems.append("the step's peak and its moment are not shown")
    fsdp2 = want["settings"].get("fsdp_version", {}).get("value") == 2
    return problems, [k for k in want["settings"] if not (fsdp2 and k in FSDP1_ONLY)]


def main() -> int:
    ap = argparse.ArgumentParser()
    for a in ("--binary", "--source", "--work", "--generated"):
        ap.add_argument(a, required=True)
    o = ap.parse_args()
    browser = shutil.which("chromium")
    if not browser:
        print("run_html_tests: chromium is not installed (scripts/setup.sh installs it)", file=sys.stderr)
        return 1
    work = pathlib.Path(o.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    failed = 0
    for name, args in PAGES:
        args = [a.format(generated=o.generated) for a in args]
        base = [o.binary, "plan", "--no-env"] + args
        page = work / f"{name}.html"
        p = subprocess.run(base + ["--format", "html"], capture_output=True, text=True, cwd=o.source)
        page.write_text(p.stdout)
        want = json.loads(subprocess.run(base + ["--format", "json"], capture_output=True, text=True,
                                         cwd=o.source).stdout)
        t0 = time.monotonic()
        b = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                            f"--user-data-dir={work / 'profile'}", "--enable-logging=stderr", "--v=0",
                            "--dump-dom", page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
        elapsed = time.monotonic() - t0
        dom, log = b.stdout, b.stderr
        problems = []
        console = [line for line in log.splitlines() if "CONSOLE" in line or "Uncaught" in line]
        if console:
            problems.append(f"console messages: {console[:3]}")
        more, expected_rows = readable(dom, want)
        problems += more
        rows = re.findall(r"<tr><td>([a-z0-9_]+)</td><td>", dom)
        if rows != expected_rows:
            problems.append(f"settings rows {rows}, expected {expected_rows}")
        for r in want["memory"]["ranks"]:
            if f'data-total="{r["total"]}"' not in dom:
                problems.append(f"rank {r['rank']}'s total {r['total']} is not on the page")
                break
        rendered = re.search(r'data-rendered-ms="([0-9.]+)"', dom)
        if not rendered:
            problems.append("the page's script did not finish")
        elif float(rendered.group(1)) > 1000:
            problems.append(f"page took {rendered.group(1)} ms to render")
        status = "ok  " if not problems else "FAIL"
        print(f"{status} {name}: {len(p.stdout)} bytes, rendered in "
              f"{rendered.group(1) if rendered else '?'} ms of page time ({elapsed:.1f} s with browser start)")
        for pr in problems:
            print("     " + pr)
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
