#!/usr/bin/env python3
"""Checks that tests/cli/sarif-2.1.0-subset.schema.json is a restriction of the official SARIF 2.1.0
schema, so that output the tests validate against the subset is valid SARIF 2.1.0.

The official schema is not shipped by Debian and the CI machine cannot download it; give a copy:
  scripts/check_sarif_subset.py OFFICIAL_SCHEMA.json [SARIF_FILE...]
(oasis-tcs/sarif-spec: sarif-2.1/schema/sarif-schema-2.1.0.json). With SARIF files, each is also
validated against the official schema itself (python3-jsonschema, Draft 4). Exit 0 when all holds.

Per definition the subset may only narrow: every property it allows exists there with the same type,
$ref and items; its enums are subsets, its minimums no lower, uniqueItems kept where the official sets
it; its required list meets the official `required` and one alternative of an official `anyOf`."""
import json
import pathlib
import sys

SUBSET = pathlib.Path(__file__).resolve().parents[1] / "tests/cli/sarif-2.1.0-subset.schema.json"


def narrows(sub, off, where, problems):
    if "type" in off:
        allowed = off["type"] if isinstance(off["type"], list) else [off["type"]]
        if sub.get("type") not in allowed:
            problems.append(f"{where}: type {sub.get('type')!r}, official {off['type']!r}")
    for key in ("$ref", "format"):
        if key in off and sub.get(key) != off[key]:
            problems.append(f"{where}: {key} {sub.get(key)!r}, official {off[key]!r}")
    if "enum" in sub and "enum" in off and not set(sub["enum"]) <= set(off["enum"]):
        problems.append(f"{where}: enum {sub['enum']} is not within {off['enum']}")
    if "enum" in off and "enum" not in sub:
        problems.append(f"{where}: the official schema restricts this to {off['enum']}")
    if "minimum" in off and sub.get("minimum", float("-inf")) < off["minimum"]:
        problems.append(f"{where}: minimum {sub.get('minimum')} below the official {off['minimum']}")
    if off.get("uniqueItems") and not sub.get("uniqueItems"):
        problems.append(f"{where}: the official schema requires unique items")
    if "items" in off:
        narrows(sub.get("items", {}), off["items"], where + "[]", problems)
    if isinstance(off.get("additionalProperties"), dict):
        narrows(sub.get("additionalProperties") or {}, off["additionalProperties"], where + "{*}", problems)


def check_object(sub, off, where, problems):
    if sub.get("additionalProperties") is not False:
        problems.append(f"{where}: the subset must set additionalProperties false")
    for name, prop in sub.get("properties", {}).items():
        if name not in off.get("properties", {}):
            problems.append(f"{where}.{name}: not a property in the official schema")
        else:
            narrows(prop, off["properties"][name], f"{where}.{name}", problems)
    required = set(sub.get("required", []))
    missing = set(off.get("required", [])) - required
    if missing:
        problems.append(f"{where}: the official schema also requires {sorted(missing)}")
    if "anyOf" in off and not any(set(alt.get("required", [])) <= required for alt in off["anyOf"]):
        problems.append(f"{where}: meets none of the official alternatives {off['anyOf']}")


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    official = json.loads(pathlib.Path(argv[1]).read_text())
    subset = json.loads(SUBSET.read_text())
    problems = []
    check_object(subset, official, "sarifLog", problems)
    for name, definition in subset["definitions"].items():
        if name not in official["definitions"]:
            problems.append(f"{name}: no such definition in the official schema")
        else:
            check_object(definition, official["definitions"][name], name, problems)
    for p in problems:
        print(f"{SUBSET.name}: {p}")
    print(f"subset: {len(subset['definitions']) + 1} objects checked, {len(problems)} problems")

    if len(argv) > 2:
        import jsonschema
        validator = jsonschema.Draft4Validator(official)
        for path in argv[2:]:
            errors = list(validator.iter_errors(json.loads(pathlib.Path(path).read_text())))
            for e in errors[:5]:
                print(f"{path}: {'/'.join(map(str, e.absolute_path))}: {e.message[:200]}")
            print(f"{path}: {'valid' if not errors else f'{len(errors)} errors'} against the official schema")
            problems += errors
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
