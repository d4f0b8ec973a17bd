#!/usr/bin/env python3
"""Writes the rule and code reference under docs/ from the catalogues compiled into shardcheck
(`shardcheck rules --format json`), so the pages say exactly what `shardcheck explain` says:
  docs/rules/README.md, docs/rules/<lint-rule>.md   one page per lint rule (src/rules/)
  docs/codes.md                                      every finding code (src/codes/, src/check/)
Usage: scripts/gen_docs.py --binary build/shardcheck [--out docs] [--check]
--check writes nothing and exits 1 when a page differs (the `docs` ctest runs it)."""
import argparse
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def wrap(text, width=100):
    """Greedy at single spaces, widths in UTF-8 bytes: what `shardcheck explain` prints (cmd_rules.cpp)."""
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line.encode()) + 1 + len(word.encode()) > width:
            lines.append(line)
            line = ""
        line += (" " if line else "") + word
    if line:
        lines.append(line)
    return "\n".join(lines)


def rule_page(r):
    out = [f"# {r['id']}", "", f"**Default severity:** {r['severity']}  ", f"**Summary:** {r['summary']}", "",
           wrap(r["explanation"]), ""]
    if r["fixable"]:
        out += [f"**Fix (`--fix`):** {r['fix']}", ""]
    bad, good = f"fixtures/configs/{r['id']}.bad.yaml", f"fixtures/configs/{r['id']}.good.yaml"
    if (ROOT / bad).exists() and (ROOT / good).exists():
        out.append(f"Fixtures: `{bad}` (fires) and `{good}` (does not).")
    return "\n".join(out).rstrip("\n") + "\n"


def rules_index(rules):
    out = ["# shardcheck lint rules", "",
           "Generated from the rule definitions in `src/rules/` (`shardcheck explain RULE` prints the same text).", "",
           "| rule | default severity | summary | --fix |", "|---|---|---|---|"]
    for r in rules:
        out.append(f"| [{r['id']}]({r['id']}.md) | {r['severity']} | {r['summary']} | {'yes' if r['fixable'] else ''} |")
    out += ["", "Finding codes of `inspect`, `plan` and `check` (ST, IX, CFG, ...) are in [../codes.md](../codes.md)."]
    return "\n".join(out) + "\n"


def codes_page(codes):
    out = ["# shardcheck finding codes", "",
           "Codes reported while loading a model, resolving its module tree and planning the shards "
           "(`inspect`, `plan`, `check`). Generated from `src/codes/finding_codes_table.cpp` and the plan "
           "checks' own files in `src/check/`; "
           "`shardcheck explain CODE` prints the same text. Lint rules are in [rules/](rules/README.md).", "",
           "| code | severity | exit code | summary |", "|---|---|---|---|"]
    for c in codes:
        out.append(f"| [{c['id']}](#{c['id'].lower()}) | {c['severity']} | {c['exit_code']} | {c['summary']} |")
    for c in codes:
        out += ["", f"## {c['id']}", "", f"**Severity:** {c['severity']}, exit code {c['exit_code']}  ",
                f"**Summary:** {c['summary']}", "", wrap(c["explanation"])]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--out", default=str(ROOT / "docs"))
    ap.add_argument("--check", action="store_true")
    opts = ap.parse_args()
    entries = json.loads(subprocess.run([opts.binary, "rules", "--format", "json"], check=True,
                                        capture_output=True, text=True).stdout)
    rules = [e for e in entries if e["kind"] == "lint"]
    codes = [e for e in entries if e["kind"] == "finding"]
    out = pathlib.Path(opts.out)
    pages = {out / "rules/README.md": rules_index(rules), out / "codes.md": codes_page(codes)}
    pages.update({out / f"rules/{r['id']}.md": rule_page(r) for r in rules})
    stale = [p for p in sorted((out / "rules").glob("*.md")) if p not in pages]
    differ = [p for p, text in pages.items() if not p.exists() or p.read_text() != text]
    if opts.check:
        for p in differ:
            print(f"{p}: differs from what scripts/gen_docs.py writes")
        for p in stale:
            print(f"{p}: no rule of that name")
        print(f"{len(pages)} pages, {len(differ)} differ, {len(stale)} stale")
        return 1 if differ or stale else 0
    (out / "rules").mkdir(parents=True, exist_ok=True)
    for p in differ:
        p.write_text(pages[p])
    for p in stale:
        p.unlink()
    print(f"{len(pages)} pages, {len(differ)} written, {len(stale)} removed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
