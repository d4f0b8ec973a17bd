"""CLI cases for `shardcheck lint`, `shardcheck rules` and `shardcheck explain`.

Cases that rewrite files (--fix) work on copies made in a temporary directory when this module is
imported; they run in order: fix, fix again (no change), lint the result (clean)."""
import json
import pathlib
import shutil
import tempfile

SRC = pathlib.Path(__file__).resolve().parents[2]
CFG = "{src}/fixtures/configs"
SEED = CFG + "/seed_000_flattened_fsdp_config.yaml"

_TMP = pathlib.Path(tempfile.mkdtemp(prefix="shardcheck-lint-cli-"))
shutil.copy(SRC / "fixtures/configs/seed_000_flattened_fsdp_config.yaml", _TMP / "seed.yaml")
shutil.copy(SRC / "fixtures/configs/yaml11-implicit-type.bad.yaml", _TMP / "yaml11.yaml")
(_TMP / "hf/accelerate").mkdir(parents=True)
shutil.copy(SRC / "fixtures/configs/good_fsdp2_accelerate_config.yaml", _TMP / "hf/accelerate/default_config.yaml")
(_TMP / "xdg").mkdir()
(_TMP / "stale.env").write_text("export FSDP_TRANSFORMER_CLS_TO_WRAP=BertLayer\nFSDP_SHARDING_STRATGY=FULL_SHARD\n")
(_TMP / "big.yaml").write_text("a: " + "x" * (2 << 20) + "\n")
# Line ends PyYAML loads (accelerate opens the config in text mode: universal newlines): CR only, and
# a last line ending in CR without LF.
_CLUSTER = ["compute_environment: LOCAL_MACHINE", "distributed_type: MULTI_GPU", "mixed_precision: bf16",
            "num_machines: 1", "num_processes: 2", "use_cpu: true"]
(_TMP / "cr_only.yaml").write_bytes(("\r".join(_CLUSTER) + "\r").encode())
(_TMP / "cr_last.yaml").write_bytes(("\n".join(_CLUSTER) + "\r").encode())
TMP = str(_TMP)


def diagnostics(check):
    def run(doc):
        if "diagnostics" not in doc or not isinstance(doc["diagnostics"], list):
            return "JSON lacks a diagnostics list"
        for d in doc["diagnostics"]:
            for k in ("rule", "severity", "file", "line", "column", "message", "help", "fix"):
                if k not in d:
                    return f"diagnostic lacks {k!r}"
        return check(doc["diagnostics"])
    return run


def sarif_ok(doc):
    # No invented URLs: a default build (SHARDCHECK_DOCS_URL empty) carries the rule text only.
    if "shardcheck/shardcheck" in json.dumps(doc):
        return "SARIF points at a made-up repository URL"
    if doc.get("version") != "2.1.0":
        return "SARIF version is not 2.1.0"
    run = doc["runs"][0]
    driver = run["tool"]["driver"]
    for k in ("name", "version", "rules"):
        if k not in driver:
            return f"driver lacks {k}"
    for r in run["results"]:
        loc = r["locations"][0]["physicalLocation"]
        if loc["artifactLocation"]["uri"].startswith("/"):
            return "artifact uri is not repo-relative"
        if "startLine" not in loc["region"] or "partialFingerprints" not in r:
            return "result lacks region.startLine or partialFingerprints"
    return None


CASES = [
    {"name": "lint: the seed's flattened fsdp_config is an error at fsdp_config:, with the re-nested block",
     "args": ["lint", "--no-env", SEED], "exit": 1,
     "stdout": ["seed_000_flattened_fsdp_config.yaml:6:1: error: `fsdp_config` is empty: the 11 FSDP keys below it "
                "(lines 7-17)", "[flattened-fsdp-config]", "    6 | fsdp_config:", "      | ^~~~~~~~~~~",
                "          fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer"],
     "stderr": ["1 error, 0 warnings, 11 notes in 1 file"]},
    # accelerate v1.14.0 (utils/dataclasses.py, FullyShardedDataParallelPlugin.__post_init__) calls int() on
    # FSDP_MIN_NUM_PARAMS only under SIZE_BASED_WRAP: '1e8' beside TRANSFORMER_BASED_WRAP never fails.
    {"name": "lint: an ignored key's bad value is no error, only the warning that it is ignored",
     "args": ["lint", "--no-env", CFG + "/unread_min_num_params_1e8_transformer_wrap.yaml"], "exit": 0,
     "stdout": ["`fsdp_min_num_params` is ignored: the wrap policy is TRANSFORMER_BASED_WRAP"],
     "not_stdout": ["int(", "error:"]},
    {"name": "check: the same file plans without an error",
     "args": ["check", "--no-env", "--config", CFG + "/unread_min_num_params_1e8_transformer_wrap.yaml", "--model",
              "{src}/fixtures/models/llama", "--no-tree"], "exit": 0, "not_stdout": ["int("]},
    {"name": "lint: a CR-only file loads as PyYAML loads it (no syntax error, no wrong type)",
     "args": ["lint", "--no-env", TMP + "/cr_only.yaml"], "exit": 0, "not_stdout": ["error", "illegal"]},
    {"name": "lint: a last line ending in CR without LF is `true`, not 'true\\r'",
     "args": ["lint", "--no-env", TMP + "/cr_last.yaml"], "exit": 0, "not_stdout": ["wrong-type", "error"]},
    {"name": "lint --diff labels an absolute path as it is, as diff -u does (not a//abs/path)",
     "args": ["lint", "--no-env", "--diff", SEED], "exit": 0,
     "stdout": ["--- " + SEED + "\n+++ " + SEED + "\n"], "not_stdout": ["a//", "b//"]},
    {"name": "explain: the code list names every code, sorted within its prefix (IO004, IO005 included)",
     "args": ["explain", "NOPE001"], "exit": 2, "stderr": ["IO001-IO005"], "not_stderr": ["IO001-IO003,"]},
    {"name": "lint --diff shows the re-nesting without writing",
     "args": ["lint", "--no-env", "--diff", SEED], "exit": 0,
     "stdout": ["-fsdp_activation_checkpointing: false", "+  fsdp_activation_checkpointing: false", "@@ "]},
    {"name": "lint --fix re-nests the seed", "args": ["lint", "--no-env", "--fix", TMP + "/seed.yaml"], "exit": 0,
     "stderr": ["fixed 1 file"]},
    {"name": "lint --fix a second time changes nothing", "args": ["lint", "--no-env", "--fix", TMP + "/seed.yaml"],
     "exit": 0, "stderr": ["fixed 0 files"]},
    {"name": "lint: the fixed seed lints clean", "args": ["lint", "--no-env", "--strict", TMP + "/seed.yaml"],
     "exit": 0, "not_stdout": ["error", "warning"]},
    {"name": "lint --fix quotes mixed_precision: no and writes 1e8 out",
     "args": ["lint", "--no-env", "--fix", TMP + "/yaml11.yaml"], "exit": 0, "stderr": ["fixed 1 file"]},
    {"name": "lint: the fixed YAML-1.1 file is clean", "args": ["lint", "--no-env", "--format", "json", TMP + "/yaml11.yaml"],
     "exit": 0, "json": diagnostics(lambda ds: None if not ds else f"expected no diagnostics, got {ds}")},
    {"name": "lint: clean accelerate-config-written FSDP1 file exits 0",
     "args": ["lint", "--no-env", CFG + "/good_fsdp1_accelerate_config.yaml"], "exit": 0},
    {"name": "lint: several files in one call are all checked",
     "args": ["lint", "--no-env", "--format", "json", CFG + "/good_fsdp2_accelerate_config.yaml",
              CFG + "/renamed-key.bad.yaml", CFG + "/wrong-type.bad.yaml"], "exit": 1,
     "json": diagnostics(lambda ds: None if {d["rule"] for d in ds} == {"renamed-key", "wrong-type"}
                         else f"unexpected rules {sorted({d['rule'] for d in ds})}")},
    {"name": "lint --format json: the contract, and fixes as edits",
     "args": ["lint", "--no-env", "--format", "json", CFG + "/yaml11-implicit-type.bad.yaml"], "exit": 1,
     "json": diagnostics(lambda ds: None if ds[0]["fix"] and ds[0]["fix"][0]["text"] == "100000000"
                         and ds[0]["line"] == 18 and ds[0]["severity"] == "error" else f"unexpected {ds[0]}")},
    {"name": "lint --format sarif is SARIF 2.1.0 with repo-relative uris",
     "args": ["lint", "--no-env", "--format", "sarif", "--uri-base", "{src}", SEED], "exit": 1,
     "stdout": ['"uri":"fixtures/configs/seed_000_flattened_fsdp_config.yaml"'], "json": sarif_ok},
    {"name": "lint --format github annotations",
     "args": ["lint", "--no-env", "--format", "github", CFG + "/unknown-nested-key.bad.yaml"], "exit": 0,
     "stdout": ["::warning file=", "unknown-nested-key.bad.yaml,line=13,col=3,", "title=unknown-nested-key::"]},
    {"name": "lint --strict fails on warnings", "args": ["lint", "--no-env", "--strict", CFG + "/unknown-nested-key.bad.yaml"],
     "exit": 1, "stdout": ["did you mean `fsdp_sharding_strategy`?"]},
    {"name": "lint: unparsable YAML exits 10 with a position",
     "args": ["lint", "--no-env", CFG + "/yaml-syntax.bad.yaml"], "exit": 10,
     "stdout": ["yaml-syntax.bad.yaml:13:", "error: invalid YAML", "[yaml-syntax]"]},
    {"name": "lint: an alias bomb is refused quickly with exit 10",
     "args": ["lint", "--no-env", CFG + "/yaml-limits.bad.yaml"], "exit": 10, "timeout": 10,
     "stdout": ["more than 100000 YAML nodes", "[yaml-limits]"]},
    {"name": "lint: an oversized file is refused before parsing",
     "args": ["lint", "--no-env", TMP + "/big.yaml"], "exit": 10, "stdout": ["at most 1048576 bytes"]},
    {"name": "lint: a missing file is an I/O error (3, as check)", "args": ["lint", "--no-env", TMP + "/nope.yaml"], "exit": 3,
     "stdout": ["no such file"]},
    {"name": "lint: bad --accelerate-version is a usage error",
     "args": ["lint", "--accelerate-version", "latest", SEED], "exit": 2, "stderr": ["expected a version like 1.6.0"]},
    {"name": "lint --accelerate-version 0.34.0: the class-L bug",
     "args": ["lint", "--no-env", "--accelerate-version", "0.34.0", CFG + "/issue_accelerate_3075_class_L.yaml"],
     "exit": 1, "stdout": ["Could not find the transformer layer class L in the model.",
                           "[transformer-wrap-without-cls-0340]"]},
    {"name": "lint --accelerate-version 0.28.0: enable_cpu_affinity is unknown",
     "args": ["lint", "--no-env", "--accelerate-version", "0.28.0", CFG + "/good_fsdp1_accelerate_config.yaml"],
     "exit": 1, "stdout": ["`enable_cpu_affinity` does not exist in accelerate 0.28.0 (added in 0.29.0)",
                           "had unknown keys (['enable_cpu_affinity'])"]},
    {"name": "lint: no file argument finds $HF_HOME/accelerate/default_config.yaml and says so",
     "args": ["lint", "--no-env"], "env": {"HF_HOME": TMP + "/hf"}, "exit": 0,
     "stderr": ["checking accelerate's default config " + TMP + "/hf/accelerate/default_config.yaml"]},
    {"name": "lint: no file argument and no default config is a usage error",
     "args": ["lint", "--no-env"], "env": {"HF_HOME": TMP + "/xdg"}, "exit": 2,
     "stderr": ["does not exist"]},
    {"name": "lint --env audits the shell: a contradicting FSDP_SHARDING_STRATEGY is a note",
     "args": ["lint", "--format", "json", CFG + "/cls-list-without-transformer-wrap.good.yaml"],
     "env": {"FSDP_AUTO_WRAP_POLICY": "SIZE_BASED_WRAP", "FSDP_SHARDING_STRATEGY": "NO_SHARD"}, "exit": 0,
     "json": diagnostics(lambda ds: None if {d["rule"] for d in ds} == {"env-overridden-by-launch"}
                         else f"unexpected {[d['rule'] for d in ds]}")},
    {"name": "lint --env-file: leaks and typos point at the env file's lines",
     "args": ["lint", "--env-file", TMP + "/stale.env", CFG + "/issue_accelerate_3075_fixed_0341.yaml"], "exit": 0,
     "stdout": ["stale.env:1:1: warning: FSDP_TRANSFORMER_CLS_TO_WRAP=BertLayer in the environment applies to the job",
                "stale.env:2:1: warning: FSDP_SHARDING_STRATGY is not read by accelerate (did you mean FSDP_SHARDING_STRATEGY?)"]},
    {"name": "lint --no-env ignores the shell",
     "args": ["lint", "--no-env", CFG + "/good_fsdp1_accelerate_config.yaml"],
     "env": {"FSDP_SHARDING_STRATGY": "x"}, "exit": 0, "not_stdout": ["FSDP_SHARDING_STRATGY"]},
    {"name": "lint --python-env reads the installed accelerate version",
     "args": ["lint", "--no-env", "--python-env", CFG + "/site-packages-0.34.0", CFG + "/issue_accelerate_3075_class_L.yaml"],
     "exit": 1, "stderr": ["accelerate 0.34.0"], "stdout": ["[transformer-wrap-without-cls-0340]"]},
    {"name": "rules lists every rule", "args": ["rules"],
     "stdout": ["flattened-fsdp-config", "unknown-nested-key", "yaml11-implicit-type", "env-leaks-into-job", "[fix]"]},
    {"name": "rules --format json", "args": ["rules", "--format", "json"],
     "json": lambda d: None if len(d) >= 40 and all("id" in r for r in d) else "expected 40+ rules"},
    {"name": "explain prints the upstream explanation", "args": ["explain", "flattened-fsdp-config"],
     "stdout": ["flattened-fsdp-config (error)", "config_args.py", "Fix (--fix):"]},
    {"name": "explain an unknown rule is a usage error", "args": ["explain", "no-such-rule"], "exit": 2,
     "stderr": ["unknown rule or code 'no-such-rule'", "  flattened-fsdp-config\n", "ST001-ST022, IX001-IX016"]},
    {"name": "explain a finding code: severity, exit code and the upstream behaviour",
     "args": ["explain", "st020"], "exit": 0,
     "stdout": ["ST020 (error, exit code 6)", "MetadataIncompleteBuffer"]},
    {"name": "rules lists the lint rules and the finding codes",
     "args": ["rules"], "exit": 0,
     "stdout": ["  flattened-fsdp-config", "Finding codes", "  PLAN012  error      1  "]},
]

CASES += [
    {"name": "lint: an unknown FSDP_* variable is reported once for several files",
     "args": ["lint", "--format", "json", "{src}/fixtures/configs/good_docs_fsdp_template.yaml",
              "{src}/fixtures/check/no_policy.yaml"],
     "env": {"FSDP_SHARDING_STRATGY": "FULL_SHARD"},
     "json": lambda doc: None if sum(d["rule"] == "env-unknown-variable" for d in doc["diagnostics"]) == 1
     else "env-unknown-variable should appear exactly once"},
    {"name": "lint: parallelism_config under FSDP1 stops in accelerate's _validate_accelerator, not only with cp",
     "args": ["lint", "--no-env", CFG + "/parallelism-fsdp1-tp.yaml"], "exit": 1,
     "stdout": ["parallelism-fsdp1-tp.yaml:8:37: error: `parallelism_config_dp_shard_size: 4` with FSDP1",
                "ParallelismConfig is only compatible DistributedType.FSDP (version 2)", "[parallelism-requires-fsdp2]"]},
    {"name": "lint: accelerate 1.12's DeepSpeed SP keys are known; a cp_backend other than torch is not",
     "args": ["lint", "--no-env", CFG + "/parallelism-sp-deepspeed-keys.yaml"], "exit": 1,
     "stdout": ["parallelism-sp-deepspeed-keys.yaml:13:34: error: `parallelism_config_cp_backend: deepspeed` is not "
                "one of `torch`"],
     "not_stdout": ["unknown-key", "sp_seq_length", "sp_attn_implementation"]},
]
