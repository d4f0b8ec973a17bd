"""CLI cases: `--format gitlab` of lint and check is a GitLab Code Quality report.

GitLab reads a JSON array of issues and needs, per issue (docs.gitlab.com, ci/testing/code_quality,
"Code Quality report format"): description, check_name, fingerprint, severity (one of info, minor,
major, critical, blocker), location.path (relative to the repository) and location.lines.begin.
SCHEMA below writes those requirements down; each validation also feeds it broken copies, so a
schema that stopped checking would fail here too."""
import copy
import pathlib

SRC = pathlib.Path(__file__).resolve().parents[2]
SEED = "{src}/fixtures/configs/seed_000_flattened_fsdp_config.yaml"
CHECKS = sorted(str(p) for p in (SRC / "fixtures/check").glob("*.yaml"))
LLAMA = "{src}/fixtures/models/llama"

SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "type": {"enum": ["issue"]},
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "categories": {"type": "array", "items": {"type": "string"}},
            "location": {
                "type": "object",
                "required": ["path", "lines"],
                "properties": {
                    "path": {"type": "string", "minLength": 1, "not": {"pattern": "^/"}},
                    "lines": {"type": "object", "required": ["begin"],
                              "properties": {"begin": {"type": "integer", "minimum": 1}}},
                },
            },
        },
    },
}


def schema_errors(doc):
    try:
        import jsonschema
    except ImportError:
        return ["python3-jsonschema is not installed (scripts/setup.sh installs it)"]
    v = jsonschema.Draft4Validator(SCHEMA)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:160]}" for e in v.iter_errors(doc)]


def broken_copies(doc):
    if not doc:
        yield "an object in place of the array", {"issues": []}
        return
    for what, edit in [("severity 'error'", lambda i: i.__setitem__("severity", "error")),
                       ("no fingerprint", lambda i: i.pop("fingerprint")),
                       ("lines.begin 0", lambda i: i["location"]["lines"].__setitem__("begin", 0)),
                       ("an absolute path", lambda i: i["location"].__setitem__("path", "/etc/x.yaml"))]:
        bad = copy.deepcopy(doc)
        edit(bad[0])
        yield what, bad


def valid_report(min_issues=1, check=None):
    def run(doc):
        errors = schema_errors(doc)
        if errors:
            return "not a valid Code Quality report: " + "; ".join(errors[:5])
        for what, bad in broken_copies(doc):
            if not schema_errors(bad):
                return f"the schema accepted {what}: it checks nothing"
        fingerprints = [i["fingerprint"] for i in doc]
        if len(set(fingerprints)) != len(fingerprints):
            return "two issues share a fingerprint: GitLab would show one of them"
        if len(doc) < min_issues:
            return f"{len(doc)} issues, expected at least {min_issues}"
        return check(doc) if check else None
    return run


def seed_issue(doc):
    # The seed's `fsdp_config:` is on line 6 of the file; its children (lines 7-17) lost their indentation.
    first = doc[0]
    want = ("flattened-fsdp-config", "critical", "fixtures/configs/seed_000_flattened_fsdp_config.yaml", 6)
    got = (first["check_name"], first["severity"], first["location"]["path"], first["location"]["lines"]["begin"])
    return None if got == want else f"first issue {got}, expected {want}"


def fit_issue(doc):
    fit = [i for i in doc if i["check_name"] == "FIT001"]
    if not fit:
        return "no FIT001 issue"
    return None if fit[0]["location"]["path"] == "fixtures/models/llama/config.json" else f"FIT001 at {fit[0]['location']}"


CASES = [
    {"name": "gitlab: lint of the seed config is a Code Quality report with the error at line 6",
     "args": ["lint", "--no-env", "--format", "gitlab", "--uri-base", "{src}", SEED], "exit": 1,
     "json": valid_report(check=seed_issue)},
    {"name": "gitlab: a clean file gives an empty report",
     "args": ["lint", "--no-env", "--format", "gitlab", "{src}/fixtures/configs/good_fsdp2_accelerate_config.yaml"],
     "exit": 0, "json": valid_report(min_issues=0, check=lambda d: None if d == [] else f"{len(d)} issues")},
    {"name": "gitlab: check's fit error points at the model's config.json",
     "args": ["check", "--no-env", "--model", LLAMA, "--world-size", "2", "--gpu-memory", "10KiB", "--format", "gitlab",
              "--uri-base", "{src}"],
     "exit": 1, "json": valid_report(check=fit_issue)},
] + [
    {"name": f"gitlab: check of fixtures/check/{pathlib.Path(c).name} is a valid report",
     "args": ["check", "--no-env", "--config", c, "--model", LLAMA, "--format", "gitlab", "--uri-base", "{src}"],
     "exit": (0, 1), "json": valid_report(min_issues=0)}
    for c in CHECKS
]
