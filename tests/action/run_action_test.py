#!/usr/bin/env python3
"""action.yml (the composite GitHub Action) run step by step as a GitHub runner runs it, without GitHub.

Each `run:` step goes to `bash --noprofile --norc -eo pipefail` with the runner's environment
(GITHUB_ACTION_PATH, GITHUB_WORKSPACE, GITHUB_OUTPUT, GITHUB_PATH) and its `env:` after expression
substitution; `if:` conditions are evaluated (success() unless always() is named); step outputs are
read back from GITHUB_OUTPUT; `uses:` steps are recorded, not run. The expression language covered
is what action.yml uses (inputs.*, steps.*.outputs.*, always(), ==, !=, &&, ||, quoted strings):
anything else fails this test rather than being guessed.

  run_action_test.py --binary build/shardcheck --source . --work DIR
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import yaml

EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
TOKEN = re.compile(r"\s*(?:(?P<str>'[^']*')|(?P<op>==|!=|&&|\|\||\(|\))|(?P<call>always\(\)|success\(\))|"
                   r"(?P<ref>(?:inputs|steps)\.[A-Za-z0-9_.-]+))")


class Runner:
    def __init__(self, action, inputs, env, workspace, work):
        self.action, self.env, self.workspace, self.work = action, env, workspace, work
        self.inputs = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
        unknown = set(inputs) - set(self.inputs)
        if unknown:
            raise SystemExit(f"inputs not declared by action.yml: {unknown}")
        missing = [k for k, v in action["inputs"].items() if v.get("required") and k not in inputs]
        if missing:
            raise SystemExit(f"required inputs missing: {missing}")
        self.inputs.update(inputs)
        self.outputs = {}       # step id -> {name: value}
        self.failed = False
        self.log = []           # (step name, "ran"/"skipped"/"uses", exit code or `with`)
        self.stdout = ""

    def ref(self, name):
        parts = name.split(".")
        if parts[0] == "inputs" and len(parts) == 2:
            return self.inputs[parts[1]]
        if parts[0] == "steps" and len(parts) == 4 and parts[2] == "outputs":
            return self.outputs.get(parts[1], {}).get(parts[3], "")
        raise SystemExit(f"unsupported expression reference {name}")

    def evaluate(self, expr):
        py, pos = [], 0
        while pos < len(expr):
            m = TOKEN.match(expr, pos)
            if not m or m.end() == pos:
                raise SystemExit(f"unsupported expression {expr!r} at {expr[pos:]!r}")
            pos = m.end()
            if m.group("str") is not None:
                py.append(repr(m.group("str")[1:-1]))
            elif m.group("op"):
                py.append({"&&": " and ", "||": " or "}.get(m.group("op"), m.group("op")))
            elif m.group("call"):
                py.append("True" if m.group("call") == "always()" else repr(not self.failed))
            else:
                py.append(repr(self.ref(m.group("ref"))))
        return eval("".join(py), {"__builtins__": {}}, {})

    def substitute(self, text):
        return EXPR.sub(lambda m: str(self.evaluate(m.group(1))), str(text))

    def condition(self, step):
        cond = step.get("if")
        if cond is None:
            return not self.failed
        cond = EXPR.sub(lambda m: m.group(1), str(cond)).strip()
        value = bool(self.evaluate(cond))
        # GitHub adds success() to a condition that names no status function.
        return value if re.search(r"always\(\)|success\(\)|failure\(\)", cond) else value and not self.failed

    def run(self):
        for i, step in enumerate(self.action["runs"]["steps"]):
            name = step.get("name", f"step {i}")
            if not self.condition(step):
                self.log.append((name, "skipped", None))
                continue
            if "uses" in step:
                self.log.append((name, "uses", {k: self.substitute(v) for k, v in step.get("with", {}).items()}))
                continue
            if step.get("shell") != "bash":
                raise SystemExit(f"step {name}: shell {step.get('shell')!r}, the test runs bash steps only")
            output = pathlib.Path(self.work, f"output-{i}")
            output.write_text("")
            env = dict(self.env, GITHUB_OUTPUT=str(output))
            env.update({k: self.substitute(v) for k, v in step.get("env", {}).items()})
            script = pathlib.Path(self.work, f"step-{i}.sh")
            script.write_text(self.substitute(step["run"]))
            p = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], env=env,
                               cwd=self.workspace, capture_output=True, text=True)
            self.stdout += p.stdout + p.stderr
            if "id" in step:
                self.outputs[step["id"]] = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
            self.log.append((name, "ran", p.returncode))
            if p.returncode != 0:
                self.failed = True
        return self


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    src = pathlib.Path(a.source).resolve()
    work = pathlib.Path(a.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    action = yaml.safe_load((src / "action.yml").read_text())
    sys.path.insert(0, str(src / "tests/cli"))
    import sarif_cases  # the SARIF 2.1.0 schema check of the CLI tests

    bindir = work / "bin"
    bindir.mkdir(exist_ok=True)
    link = bindir / "shardcheck"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(pathlib.Path(a.binary).resolve())
    # A runner's environment without this machine's FSDP_*/ACCELERATE_* variables.
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("FSDP_", "ACCELERATE_", "GITHUB_"))}
    base_env["PATH"] = f"{bindir}:{base_env.get('PATH', '/usr/bin:/bin')}"

    failures, passed = [], 0

    def run_case(label, inputs):
        case_work = pathlib.Path(tempfile.mkdtemp(prefix="case-", dir=work))
        env = dict(base_env, GITHUB_ACTION_PATH=str(src), GITHUB_WORKSPACE=str(src),
                   GITHUB_PATH=str(case_work / "github_path"))
        inputs = dict(inputs, **{"sarif-file": str(case_work / "shardcheck.sarif")})
        return Runner(action, inputs, env, src, case_work).run()

    def expect(label, ok, detail=""):
        nonlocal passed
        if ok:
            passed += 1
        else:
            failures.append(f"{label}: {detail}")

    def status(r, name):
        return next((s for s in r.log if s[0] == name), (name, "missing", None))

    llama = "fixtures/models/llama"
    # 1. A wrong layer class: findings, annotations, a valid SARIF report, the step fails with 1.
    r = run_case("bad", {"config": "fixtures/check/wrong_cls.yaml", "model": llama, "args": "--world-size 2"})
    expect("bad: exit-code output", r.outputs["check"].get("exit-code") == "1", r.outputs)
    expect("bad: annotation on the config line", "::error file=fixtures/check/wrong_cls.yaml,line=7,col=1,title=PLAN012::"
           in r.stdout, r.stdout[-2000:])
    sarif = json.loads(pathlib.Path(r.outputs["check"]["sarif-file"]).read_text())
    errors = sarif_cases.schema_errors(sarif)
    expect("bad: SARIF 2.1.0", not errors, errors[:3])
    uris = {res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for res in sarif["runs"][0]["results"]}
    expect("bad: SARIF uri relative to the workspace", "fixtures/check/wrong_cls.yaml" in uris, uris)
    upload = status(r, "Upload SARIF to code scanning")
    expect("bad: SARIF uploaded", upload[1] == "uses" and upload[2].get("sarif_file") == r.outputs["check"]["sarif-file"], upload)
    expect("bad: the action fails with check's exit code", status(r, "Fail on findings")[1:] == ("ran", 1) and r.failed, r.log)
    expect("bad: shardcheck on PATH is used, not rebuilt", "using " in r.stdout and "setup:" not in r.stdout, r.stdout[:500])
    # 2. A config that is fine for this model: success, no failing step.
    r = run_case("good", {"config": "fixtures/check/activation_checkpointing.yaml", "model": llama, "args": "--world-size 2"})
    expect("good: exit-code 0", r.outputs["check"].get("exit-code") == "0", r.outputs)
    expect("good: action succeeds", not r.failed and status(r, "Fail on findings")[1] == "skipped", r.log)
    # 3. fail-on-findings: false reports and passes.
    r = run_case("report-only", {"config": "fixtures/check/wrong_cls.yaml", "model": llama, "fail-on-findings": "false"})
    expect("report-only: exit-code 1, action passes", r.outputs["check"].get("exit-code") == "1" and not r.failed, r.log)
    # 4. upload-sarif: false skips the upload.
    r = run_case("no-upload", {"config": "fixtures/check/activation_checkpointing.yaml", "model": llama,
                               "upload-sarif": "false"})
    expect("no-upload: upload skipped", status(r, "Upload SARIF to code scanning")[1] == "skipped", r.log)
    # 5. Inputs are data, not script: a command substitution in args reaches shardcheck as text.
    marker = work / "injected"
    r = run_case("injection", {"config": "fixtures/check/activation_checkpointing.yaml", "model": llama,
                               "args": f"--world-size 2 $(touch {marker})"})
    expect("injection: nothing executed", not marker.exists(), "the args input ran a command")
    expect("injection: a usage error (exit 2)", r.outputs["check"].get("exit-code") == "2", r.outputs)

    for f in failures:
        print("FAIL:", f)
    print(f"action tests: {passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
