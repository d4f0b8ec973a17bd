#!/usr/bin/env python3
"""Scaffolds a new lint rule, as clang-tidy's add_new_check.py and ruff's add_rule.py do.

    scripts/add_rule.py RULE-ID --severity error|warning|note --title "One line: what is wrong"

Writes, and refuses to overwrite:
  src/rules/<rule_id>.cpp                the Rule (id, severity, title, doc, fix) and its check()
  fixtures/configs/<RULE-ID>.bad.yaml    a config the rule must flag   (+ .bad.expect)
  fixtures/configs/<RULE-ID>.good.yaml   a config it must leave alone  (+ .good.expect)
and registers the rule: one line, SHARDCHECK_RULE(kName), at the end of src/rules/all_rules.def.

Then: write the doc (what accelerate or torch does, with the upstream file and version) and the
check, make the bad fixture trip it and list its findings in .bad.expect (`<rule-id> LINE:COL
severity`, one per line), build, and run `scripts/gen_docs.py --binary build/shardcheck` to write
docs/rules/<RULE-ID>.md; the `docs` and `unit` tests keep all three in step.
"""
from __future__ import annotations

import argparse
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SOURCE = """\
// {rule_id}: {title_lower}
#include <fmt/format.h>

#include "rules/rule_util.hpp"

namespace shardcheck::rules {{
namespace {snake} {{
void check(LintContext& ctx);
}}

extern const Rule {const};
const Rule {const}{{
    .id = "{rule_id}",
    .severity = Severity::{severity},
    .summary = "{title}",
    .explanation =
        "TODO: what accelerate (or torch) does with such a config, citing the upstream file and release, and the "
        "error or silent behaviour the user meets.",
    .fix = "",
    .check = {snake}::check,
}};

namespace {snake} {{
void check(LintContext& ctx) {{
  // TODO: inspect ctx (ctx.top, ctx.section_map, ctx.fsdp, ctx.version()) and ctx.report({const}, ...).
  (void)ctx;
}}
}}  // namespace {snake}

}}  // namespace shardcheck::rules
"""

FIXTURE = """\
# {kind} fixture for {rule_id}: TODO make it {what}.
compute_environment: LOCAL_MACHINE
distributed_type: FSDP
fsdp_config:
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer
  fsdp_version: 2
machine_rank: 0
mixed_precision: bf16
num_machines: 1
num_processes: 8
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rule_id", help="kebab-case id, e.g. parallelism-cp-sp-exclusive")
    ap.add_argument("--severity", required=True, choices=["error", "warning", "note"])
    ap.add_argument("--title", required=True)
    ap.add_argument("--repo", default=REPO, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", a.rule_id):
        print(f"add_rule: '{a.rule_id}' is not a kebab-case id (lowercase words joined by '-')", file=sys.stderr)
        return 2
    snake = a.rule_id.replace("-", "_")
    const = "k" + "".join(w[:1].upper() + w[1:] for w in a.rule_id.split("-"))
    source = os.path.join(a.repo, "src", "rules", snake + ".cpp")
    fixtures = {kind: os.path.join(a.repo, "fixtures", "configs", f"{a.rule_id}.{kind}.yaml") for kind in ("bad", "good")}
    registry = os.path.join(a.repo, "src", "rules", "all_rules.def")
    for path in (source, *fixtures.values()):
        if os.path.exists(path):
            print(f"add_rule: {os.path.relpath(path, a.repo)} exists; nothing written", file=sys.stderr)
            return 1
    line = f"SHARDCHECK_RULE({const})\n"
    reg = open(registry).read()
    if line in reg:
        print(f"add_rule: {const} is already registered", file=sys.stderr)
        return 1

    title = a.title.rstrip(".")
    with open(source, "w") as f:
        f.write(SOURCE.format(rule_id=a.rule_id, title=title, title_lower=title[:1].lower() + title[1:],
                              severity=a.severity, snake=snake, const=const))
    for kind, path in fixtures.items():
        with open(path, "w") as f:
            f.write(FIXTURE.format(kind=kind.capitalize(), rule_id=a.rule_id,
                                   what="trip the rule" if kind == "bad" else "the nearest config the rule accepts"))
        with open(path[:-5] + ".expect", "w") as f:
            f.write(f"{a.rule_id} LINE:COL {a.severity}\n" if kind == "bad" else "")
    with open(registry, "a") as f:
        f.write(line)
    for path in (source, *fixtures.values()):
        print("wrote", os.path.relpath(path, a.repo))
    print("registered", const, "in src/rules/all_rules.def")
    return 0


if __name__ == "__main__":
    sys.exit(main())
