"""CLI cases: `--format sarif` of lint and check validates against SARIF 2.1.0.

The schema is tests/cli/sarif-2.1.0-subset.schema.json, the part of the official OASIS schema that
shardcheck writes (scripts/check_sarif_subset.py proves it a restriction of the official one when
given a copy). python3-jsonschema (Draft 4, as the official schema) is installed by scripts/setup.sh.
Each validation also feeds the validator three broken copies, so a schema that stopped checking
anything would fail here too."""
import copy
import json
import pathlib
import re
import shutil
import tempfile

SRC = pathlib.Path(__file__).resolve().parents[2]
SCHEMA = json.loads((SRC / "tests/cli/sarif-2.1.0-subset.schema.json").read_text())
CONFIGS = sorted(str(p) for p in (SRC / "fixtures/configs").glob("*.yaml"))
CHECKS = sorted(str(p) for p in (SRC / "fixtures/check").glob("*.yaml"))
LLAMA = "{src}/fixtures/models/llama"
DEEPSEEK = "{src}/fixtures/models/deepseek_v3"

_TMP = pathlib.Path(tempfile.mkdtemp(prefix="shardcheck-sarif-cli-"))
shutil.copy(SRC / "fixtures/configs/seed_000_flattened_fsdp_config.yaml", _TMP / "my config%.yaml")

# RFC 3986 URI reference: unreserved, sub-delims, ':', '@', '/' and percent-encoded octets.
URI_REFERENCE = re.compile(r"^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-F]{2})*$")


def schema_errors(doc):
    try:
        import jsonschema
    except ImportError:
        return ["python3-jsonschema is not installed (scripts/setup.sh installs it)"]
    validator = jsonschema.Draft4Validator(SCHEMA)
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:160]}" for e in validator.iter_errors(doc)]
    for r in doc.get("runs", [{}])[0].get("results", []):
        for loc in r.get("locations", []):
            uri = loc["physicalLocation"]["artifactLocation"]["uri"]
            if not uri or not URI_REFERENCE.match(uri):
                errors.append(f"artifactLocation.uri {uri!r} is not a URI reference")
    return errors


def broken_copies(doc):
    """Copies the schema must reject: an unknown property, a level outside the enum, line 0."""
    extra = copy.deepcopy(doc)
    extra["runs"][0]["bogus"] = True
    yield "an unknown run property", extra
    results = doc["runs"][0]["results"]
    if results:
        level = copy.deepcopy(doc)
        level["runs"][0]["results"][0]["level"] = "fatal"
        yield "level 'fatal'", level
        line = copy.deepcopy(doc)
        line["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
        yield "startLine 0", line


def valid_sarif(min_results=1, check=None):
    def run(doc):
        errors = schema_errors(doc)
        if errors:
            return "not valid SARIF 2.1.0: " + "; ".join(errors[:5])
        for what, bad in broken_copies(doc):
            if not schema_errors(bad):
                return f"the schema check accepted {what}: it checks nothing"
        results = doc["runs"][0]["results"]
        if len(results) < min_results:
            return f"{len(results)} results, expected at least {min_results}"
        return check(results) if check else None
    return run


def logical_module(module, uri_suffix):
    def check(results):
        for r in results:
            loc = r["locations"][0]
            names = [l["fullyQualifiedName"] for l in loc.get("logicalLocations", [])]
            if module in names:
                uri = loc["physicalLocation"]["artifactLocation"]["uri"]
                return None if uri.endswith(uri_suffix) else f"uri {uri!r} does not end with {uri_suffix!r}"
        return f"no result with the logical location {module!r}"
    return check


def uri_is(expected):
    def check(results):
        uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
        return None if uris == {expected} else f"uris {uris}, expected {{{expected!r}}}"
    return check


CASES = [
    {"name": f"sarif: lint of all {len(CONFIGS)} config fixtures in one call is valid SARIF 2.1.0",
     "args": ["lint", "--no-env", "--format", "sarif", "--uri-base", "{src}"] + CONFIGS,
     "exit": 10,  # the first error decides: yaml-syntax.bad.yaml's
     "json": valid_sarif(min_results=50)},
    {"name": "sarif: a clean file gives a valid log with no results",
     "args": ["lint", "--no-env", "--format", "sarif", "{src}/fixtures/configs/good_fsdp2_accelerate_config.yaml"],
     "exit": 0, "json": valid_sarif(min_results=0)},
    {"name": "sarif: a file name with a space and '%' is percent-encoded in the uri",
     "args": ["lint", "--no-env", "--format", "sarif", "--uri-base", str(_TMP), str(_TMP / "my config%.yaml")],
     "exit": 1, "json": valid_sarif(check=uri_is("my%20config%25.yaml"))},
    {"name": "sarif: check's FP8 layer error points at the model's config.json with the layer as logical location",
     "args": ["check", "--no-env", "--model", DEEPSEEK, "--world-size", "2", "--transformers-version", "4.57.6",
              "--format", "sarif", "--uri-base", "{src}"],
     "exit": 1, "json": valid_sarif(check=logical_module("model.layers.0", "fixtures/models/deepseek_v3/config.json"))},
    {"name": "sarif: check's fit error points at config.json, not at the model directory",
     "args": ["check", "--no-env", "--model", LLAMA, "--world-size", "2", "--gpu-memory", "10KiB", "--format", "sarif",
              "--uri-base", "{src}"],
     "exit": 1, "json": valid_sarif(check=uri_is("fixtures/models/llama/config.json"))},
] + [
    {"name": f"sarif: check of fixtures/check/{pathlib.Path(c).name} is valid SARIF 2.1.0",
     "args": ["check", "--no-env", "--config", c, "--model", LLAMA, "--format", "sarif", "--uri-base", "{src}"],
     "exit": (0, 1), "json": valid_sarif(min_results=0)}
    for c in CHECKS
]
