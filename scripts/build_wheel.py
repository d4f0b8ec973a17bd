#!/usr/bin/env python3
"""Builds a Python wheel that carries the static shardcheck CLI and its rules, for ML environments
that install tools with pip (`pip install shardcheck-*.whl`, no compiler, no network).

The binary goes to the environment's bin/ (the wheel's .data/scripts/) and the rules to
<env>/share/shardcheck/rules (.data/data/), the installed layout the binary looks for beside itself
(src/util/rules_dir.cpp); the Python helper (python/shardcheck, standard library only) goes to
site-packages, where `import shardcheck` finds it and it finds the binary in the environment's bin/. Its platform tag is manylinux_2_<N>_<arch>, N the
newest GLIBC_2.N symbol version the binary needs (PEP 600), read from the binary itself.

  build_wheel.py --binary build/shardcheck --rules rules --out dist/
"""
import argparse
import base64
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

NAME = "shardcheck"


def glibc_minor(binary):
    """The highest GLIBC_2.N version among the binary's dynamic symbols."""
    out = subprocess.run(["objdump", "-T", binary], check=True, capture_output=True, text=True).stdout
    minors = [int(m) for m in re.findall(r"GLIBC_2\.(\d+)", out)]
    if not minors:
        sys.exit(f"build_wheel: {binary} needs no GLIBC symbol version: not a dynamically linked glibc binary")
    return max(minors)


def record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", required=True, help="the built shardcheck (static CLI build)")
    ap.add_argument("--rules", required=True, help="the rules/ directory")
    ap.add_argument("--out", required=True, help="directory the .whl is written to")
    ap.add_argument("--python", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"),
                    help="the directory holding the shardcheck Python package (default: the source tree's python/)")
    args = ap.parse_args()

    version_line = subprocess.run([args.binary, "--version"], check=True, capture_output=True, text=True).stdout
    m = re.fullmatch(r"shardcheck (\d+\.\d+\.\d+)\s*", version_line)
    if not m:
        sys.exit(f"build_wheel: unexpected `{args.binary} --version` output: {version_line!r}")
    version = m.group(1)
    arch = platform.machine()
    tag = f"py3-none-manylinux_2_{glibc_minor(args.binary)}_{arch}"
    data_dir = f"{NAME}-{version}.data"
    dist_info = f"{NAME}-{version}.dist-info"

    entries = []  # (arcname, bytes, mode)
    with tempfile.TemporaryDirectory() as tmp:
        # A RelWithDebInfo binary is mostly debug info; the wheel carries the stripped program.
        stripped = os.path.join(tmp, NAME)
        shutil.copy(args.binary, stripped)
        subprocess.run(["strip", "--strip-unneeded", stripped], check=True)
        with open(stripped, "rb") as f:
            entries.append((f"{data_dir}/scripts/{NAME}", f.read(), 0o755))
    for root, dirs, files in os.walk(args.rules):
        dirs.sort()
        for fn in sorted(files):
            path = os.path.join(root, fn)
            rel = os.path.relpath(path, args.rules).replace(os.sep, "/")
            with open(path, "rb") as f:
                entries.append((f"{data_dir}/data/share/{NAME}/rules/{rel}", f.read(), 0o644))
    package = os.path.join(args.python, NAME)
    for fn in sorted(os.listdir(package)):
        if fn.endswith(".py"):
            with open(os.path.join(package, fn), "rb") as f:
                entries.append((f"{NAME}/{fn}", f.read(), 0o644))
    metadata = (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {version}\n"
        "Summary: Pre-flight checker for sharded (FSDP) training with accelerate and PyTorch\n"
        "License: see the project repository\n"
        "Requires-Python: >=3.8\n"
    )
    wheel_meta = f"Wheel-Version: 1.0\nGenerator: shardcheck scripts/build_wheel.py\nRoot-Is-Purelib: false\nTag: {tag}\n"
    entries.append((f"{dist_info}/METADATA", metadata.encode(), 0o644))
    entries.append((f"{dist_info}/WHEEL", wheel_meta.encode(), 0o644))
    record = [record_line(a, d) for a, d, _ in entries] + [f"{dist_info}/RECORD,,"]
    entries.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode(), 0o644))

    os.makedirs(args.out, exist_ok=True)
    wheel = os.path.join(args.out, f"{NAME}-{version}-{tag}.whl")
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for arcname, data, mode in entries:
            info = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))  # reproducible
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    print(wheel)


if __name__ == "__main__":
    main()
