#!/usr/bin/python3
"""Probe: which accelerate-file parallelism settings the real ParallelismConfig refuses.

  scripts/oracle2_run.sh python3 scripts/parallelism_config_probe.py [OUT.json]

For each case (the `parallelism_config:` keys of an accelerate file), sets the environment as
`accelerate launch` does (accelerate 1.14.0 utils/launch.py prepare_extend_env_parallelism_config:
every PARALLELISM_CONFIG_* size and backend, defaulted as the launcher's arguments are) and builds
ParallelismConfig() as Accelerator.__init__ does under ACCELERATE_USE_PARALLELISM_CONFIG, recording
the exception it raises (its __post_init__ checks) or none. What needs a device or an Accelerator
(_validate_accelerator, build_device_mesh) is not run here: CPU processes never become FSDP in
AcceleratorState. tests/unit/test_parallelism_config_oracle.cpp lints the same keys and requires an
error finding exactly where accelerate raised.
"""
import json, os, sys

CASES = {
    "dp-shard-tp": {"dp_shard_size": 2, "tp_size": 2},
    "hsdp-tp": {"dp_replicate_size": 2, "dp_shard_size": 2, "tp_size": 2},
    "replicate-tp": {"dp_replicate_size": 2, "tp_size": 2},
    "replicate-cp": {"dp_replicate_size": 2, "cp_size": 2},
    "cp-sp": {"dp_shard_size": 2, "cp_size": 2, "sp_size": 2},
    "dp-shard-cp": {"dp_shard_size": 2, "cp_size": 2},
    "sp": {"sp_size": 2},
    "tp-zero": {"dp_shard_size": 2, "tp_size": 0},
    "cp-backend-bad": {"dp_shard_size": 2, "cp_size": 2, "cp_backend": "ring"},
    "sp-backend-bad": {"sp_size": 2, "sp_backend": "ulysses"},
}
# accelerate launch's argument defaults (commands/launch.py): sizes 1, cp_backend torch, sp_backend deepspeed.
DEFAULTS = {"dp_replicate_size": 1, "dp_shard_size": 1, "tp_size": 1, "cp_size": 1, "cp_backend": "torch",
            "sp_size": 1, "sp_backend": "deepspeed"}


def main() -> int:
    import accelerate
    from accelerate.parallelism_config import ParallelismConfig
    out = sys.argv[1] if len(sys.argv) > 1 else ""
    records = []
    for name, keys in CASES.items():
        for k in list(os.environ):
            if k.startswith("PARALLELISM_CONFIG_"):
                del os.environ[k]
        os.environ["ACCELERATE_USE_PARALLELISM_CONFIG"] = "true"
        for k, v in dict(DEFAULTS, **keys).items():
            os.environ["PARALLELISM_CONFIG_" + k.upper()] = str(v)
        rec = {"case": name, "parallelism_config": keys}
        try:
            ParallelismConfig()
            rec["error"] = None
        except Exception as e:  # noqa: BLE001
            rec["error"] = {"type": type(e).__name__, "message": str(e)}
        records.append(rec)
        print(name, rec["error"]["message"][:90] if rec["error"] else "ok")
    res = {"versions": {"accelerate": accelerate.__version__}, "cases": records}
    if out:
        with open(out, "w") as f:
            json.dump(res, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
