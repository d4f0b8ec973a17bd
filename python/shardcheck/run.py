"""preflight: dump the live model and run `shardcheck check --module-tree` on it, before FSDP wraps it."""
import os
import shutil
import subprocess
import sys
import tempfile

from .dump import dump_model, write_tree


class PreflightError(RuntimeError):
    """shardcheck found an error the job would hit (its findings are in `findings`, its output in `report`)."""

    def __init__(self, message, findings=(), report="", exit_code=1):
        super().__init__(message)
        self.findings = list(findings)
        self.report = report
        self.exit_code = exit_code


def find_binary():
    """The shardcheck program: $SHARDCHECK_BINARY; the bin/ four levels above this package, which is
    the wheel's (<env>/lib/pythonX.Y/site-packages/shardcheck, <env>/bin) and `cmake --install`'s
    (<prefix>/share/shardcheck/python/shardcheck, <prefix>/bin); this environment's bin/; then PATH."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.environ.get("SHARDCHECK_BINARY", ""), os.path.join(here, "..", "..", "..", "..", "bin", "shardcheck"),
                  os.path.join(sys.prefix, "bin", "shardcheck")]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.normpath(path)
    found = shutil.which("shardcheck")
    if found:
        return found
    raise PreflightError("the shardcheck program was not found: install the shardcheck wheel, put shardcheck on "
                         "PATH, or set SHARDCHECK_BINARY", exit_code=3)


def _flag_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, set, frozenset)):
        return ",".join(str(v) for v in value)
    return str(value)


def _policy_name(policy):
    """accelerate's auto_wrap_policy (a name before __post_init__, the torch function after) -> --policy."""
    name = getattr(getattr(policy, "func", policy), "__name__", str(policy or "")).lower()
    if "transformer" in name:
        return "transformer"
    if "size" in name:
        return "size"
    return "none" if policy is None or "no_wrap" in name else None


def accelerator_settings(accelerator):
    """The FSDP settings an Accelerator holds (accelerate 1.x state.fsdp_plugin), as flag values."""
    out = {}
    if accelerator is None:
        return out
    num = getattr(accelerator, "num_processes", None)
    if isinstance(num, int):
        out["world_size"] = num
    plugin = getattr(getattr(accelerator, "state", None), "fsdp_plugin", None)
    if plugin is None:
        return out
    version = getattr(plugin, "fsdp_version", None)
    if version in (1, 2):
        out["fsdp_version"] = version
    policy = _policy_name(getattr(plugin, "auto_wrap_policy", None))
    if policy:
        out["policy"] = policy
    classes = getattr(plugin, "transformer_cls_names_to_wrap", None)
    if classes:
        out["wrap_cls"] = list(classes)
    strategy = getattr(plugin, "sharding_strategy", None)
    if strategy is not None and version != 2:
        out["sharding_strategy"] = getattr(strategy, "name", str(strategy))
    for attr in ("use_orig_params", "reshard_after_forward"):
        value = getattr(plugin, attr, None)
        if isinstance(value, bool) and (attr == "use_orig_params") == (version != 2):
            out[attr] = value
    return out


def _version_flags(tree):
    out = {}
    for package in ("torch", "transformers", "accelerate", "peft"):
        version = tree["producer"].get(package)
        if version:
            out[f"{package}_version"] = version.split("+")[0]  # 2.14.1+debian -> 2.14.1
    return out


def check_command(tree_path, config=None, settings=None, binary=None):
    """The `shardcheck check` command line for a dumped tree, an accelerate config and flag settings."""
    cmd = [binary or find_binary(), "check", "--module-tree", tree_path]
    if config:
        cmd += ["--config", os.fspath(config)]
    for key, value in (settings or {}).items():
        if value is not None:
            cmd += [f"--{key.replace('_', '-')}", _flag_value(value)]
    return cmd


def preflight(model, accelerator=None, config=None, binary=None, quiet=False, **settings):
    """Checks `model` as it is now, before accelerator.prepare or Trainer.train wraps it.

    `config`: the accelerate config file (default: the FSDP_* variables `accelerate launch` exported,
    which shardcheck reads from the environment). `accelerator`: its FSDP plugin and world size are
    passed as flags. `settings`: any `shardcheck check` flag, by name (world_size=8, fsdp_version=2,
    wrap_cls=["LlamaDecoderLayer"]); they win over both. Prints the findings (unless quiet) and raises
    PreflightError on an error finding. Returns shardcheck's report text.
    """
    tree = dump_model(model)
    flags = _version_flags(tree)
    flags.update(accelerator_settings(accelerator))
    flags.update(settings)
    with tempfile.TemporaryDirectory(prefix="shardcheck-") as tmp:
        path = os.path.join(tmp, "module-tree.json")
        write_tree(tree, path)
        done = subprocess.run(check_command(path, config, flags, binary), capture_output=True, text=True)
    report = done.stdout + done.stderr
    if not quiet and report:
        print(report, end="" if report.endswith("\n") else "\n", file=sys.stderr)
    if done.returncode == 0:
        return report
    errors = [line for line in report.splitlines() if ": error: " in line]
    first = errors[0] if errors else report.strip().splitlines()[-1] if report.strip() else "no output"
    raise PreflightError(f"shardcheck: the job would fail: {first}", errors, report, done.returncode)
