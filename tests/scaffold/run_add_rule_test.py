#!/usr/bin/env python3
"""scripts/add_rule.py on a scratch copy of the rule sources: the files it promises, the registry's
line, a source that compiles against the real headers, and a refusal to overwrite.

    run_add_rule_test.py --source REPO --work DIR
"""
import argparse
import os
import shutil
import subprocess
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(os.path.join(a.work, "src", "rules"))
    os.makedirs(os.path.join(a.work, "fixtures", "configs"))
    shutil.copy(os.path.join(a.source, "src", "rules", "all_rules.def"), os.path.join(a.work, "src", "rules"))
    script = os.path.join(a.source, "scripts", "add_rule.py")
    cmd = [sys.executable, script, "example-new-rule", "--severity", "warning", "--title", "An example",
           "--repo", a.work]
    problems = []
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        problems.append(f"add_rule exited {r.returncode}: {r.stderr}")
    for rel in ("src/rules/example_new_rule.cpp", "fixtures/configs/example-new-rule.bad.yaml",
                "fixtures/configs/example-new-rule.bad.expect", "fixtures/configs/example-new-rule.good.yaml",
                "fixtures/configs/example-new-rule.good.expect"):
        if not os.path.isfile(os.path.join(a.work, rel)):
            problems.append(f"missing {rel}")
    reg = open(os.path.join(a.work, "src", "rules", "all_rules.def")).read()
    if not reg.endswith("SHARDCHECK_RULE(kExampleNewRule)\n") or reg.count("kExampleNewRule") != 1:
        problems.append("all_rules.def does not end with the one line SHARDCHECK_RULE(kExampleNewRule)")
    source = os.path.join(a.work, "src", "rules", "example_new_rule.cpp")
    if os.path.isfile(source):
        text = open(source).read()
        for want in ('.id = "example-new-rule"', ".severity = Severity::warning", '.summary = "An example"',
                     "namespace example_new_rule {"):
            if want not in text:
                problems.append(f"the source lacks {want!r}")
        # It compiles as written, against the project's own headers.
        cc = subprocess.run(["g++", "-std=c++20", "-fsyntax-only", "-I", os.path.join(a.source, "include"),
                             "-I", os.path.join(a.source, "src"), source], capture_output=True, text=True)
        if cc.returncode != 0:
            problems.append("the scaffolded source does not compile:\n" + cc.stderr[-2000:])
    again = subprocess.run(cmd, capture_output=True, text=True)
    if again.returncode == 0 or "exists" not in again.stderr:
        problems.append(f"a second run must refuse to overwrite (exit {again.returncode}: {again.stderr})")
    bad = subprocess.run([sys.executable, script, "Not_Kebab", "--severity", "error", "--title", "x", "--repo", a.work],
                         capture_output=True, text=True)
    if bad.returncode != 2:
        problems.append(f"a non-kebab id must exit 2, got {bad.returncode}")
    for p in problems:
        print("FAIL", p)
    print(f"add_rule: {'ok' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
