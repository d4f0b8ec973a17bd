#!/usr/bin/env python3
"""Runs tests/smoke/*_cases.py on `shardcheck smoke` (registered by cmake/smoke.cmake only when
shardcheck-smoke is built). Same case format as tests/cli/run_cli_tests.py, plus:
  setup: args of a `shardcheck` run whose stdout is saved as {work}/llama-plan-w2.json first;
  {free_port}: a port nobody listens on; {busy_port}: a port this driver holds open;
  quick: True marks the subset --quick runs (the sanitizer build).
Two multi-process faults (ranks started with different WORLD_SIZE) are run directly below.
"""
import argparse
import importlib.util
import os
import pathlib
import socket
import subprocess
import sys
import time


def load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def world_mismatch(binary, source):
    """Rank 0 started with WORLD_SIZE=2, rank 1 with WORLD_SIZE=3: both must stop with exit 23."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = str(source / "fixtures/models/llama")
    procs = []
    for rank, world in ((0, 2), (1, 3)):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen([binary, "smoke", model, "--no-sweep", "--timeout", "30"], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=60) for p in procs]
    problems = []
    for p, (out, err) in zip(procs, outs):
        if p.returncode != 23:
            problems.append(f"exit {p.returncode}, expected 23: {err[-400:]}")
        if "was started with WORLD_SIZE=3, rank 0 with WORLD_SIZE=2" not in err:
            problems.append(f"stderr lacks the mismatch: {err[-400:]}")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--quick", action="store_true",
                    help="only cases marked quick (sanitizer builds: each rank starts ~5x slower)")
    opts = ap.parse_args()
    source = pathlib.Path(opts.source)
    work = pathlib.Path(opts.work)
    work.mkdir(parents=True, exist_ok=True)
    cli = load(source / "tests" / "cli" / "run_cli_tests.py")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free_port = s.getsockname()[1]
    subst = {"src": str(source), "work": str(work), "gen": str(work.parent / "generated"),
             "free_port": str(free_port), "busy_port": str(busy.getsockname()[1])}
    passed = failed = 0
    started = time.monotonic()
    for path in sorted((source / "tests" / "smoke").glob("*_cases.py")):
        for case in load(path).CASES:
            if (opts.only and opts.only not in case["name"]) or (opts.quick and not case.get("quick")):
                continue
            if "setup" in case:
                setup = subprocess.run([opts.binary] + [a.format(**subst) for a in case["setup"]],
                                       capture_output=True, text=True)
                (work / "llama-plan-w2.json").write_text(setup.stdout)
            t0 = time.monotonic()
            problems, proc = cli.run_case(opts.binary, subst, case)
            took = time.monotonic() - t0
            if problems:
                failed += 1
                cli.print_failure(f"{case['name']} ({took:.1f} s)", problems, proc)
            else:
                passed += 1
                print(f"ok   {case['name']} ({took:.1f} s)")
    if not opts.only or opts.only in "smoke world mismatch":
        problems = world_mismatch(opts.binary, source)
        if problems:
            failed += 1
            print("FAIL smoke world mismatch\n" + "\n".join("    " + p for p in problems))
        else:
            passed += 1
            print("ok   smoke world mismatch")
    busy.close()
    print(f"{passed} passed, {failed} failed ({time.monotonic() - started:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
