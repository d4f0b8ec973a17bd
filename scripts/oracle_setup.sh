#!/usr/bin/env bash
# Set up the FSDP1 oracle (scripts/fsdp_oracle.py): Debian's python3-torch (1.13.1) on /usr/bin/python3.
#
# Dev-time only: CI and the C++ build never need torch. The oracle's outputs are committed under
# fixtures/oracle/ and the tests read those.
#
# What it does (idempotent; safe to run again):
#   1. apt-get install python3-torch            (only if /usr/bin/python3 cannot import torch)
#   2. one-line fix so torch.distributed.fsdp imports on Python 3.11:
#      torch/distributed/_shard/sharded_tensor/metadata.py declares
#          tensor_properties: TensorProperties = field(default=TensorProperties())
#      and Python 3.11's dataclasses reject a mutable (unhashable) default with
#          "ValueError: mutable default <class 'TensorProperties'> for field tensor_properties is
#           not allowed: use default_factory".
#      We rewrite it to  field(default_factory=TensorProperties)  (same value, a fresh instance per
#      object), which is what later torch releases do.
#   3. smoke test: import FullyShardedDataParallel under /usr/bin/python3.
#
# Use /usr/bin/python3 (Debian's 3.11), NOT the pyenv python3 that comes first on PATH.
# Needs root (apt, and writing under /usr/lib/python3/dist-packages).
set -euo pipefail

PY=/usr/bin/python3

if ! "$PY" -c 'import torch' >/dev/null 2>&1; then
  echo "oracle_setup: installing python3-torch" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y python3-torch >/dev/null
fi

torch_dir=$("$PY" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
meta="$torch_dir/distributed/_shard/sharded_tensor/metadata.py"
if [ ! -f "$meta" ]; then
  echo "oracle_setup: $meta not found (unexpected torch layout)" >&2
  exit 1
fi

if grep -q 'field(default=TensorProperties())' "$meta"; then
  sed -i 's/field(default=TensorProperties())/field(default_factory=TensorProperties)/' "$meta"
  # Drop stale bytecode so the fixed source is what gets imported.
  find "$(dirname "$meta")" -name 'metadata*.pyc' -delete 2>/dev/null || true
  echo "oracle_setup: patched $meta" >&2
else
  echo "oracle_setup: $meta already patched" >&2
fi

"$PY" - <<'EOF'
import torch
from torch.distributed.fsdp import FullyShardedDataParallel, ShardingStrategy  # noqa: F401
from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy, transformer_auto_wrap_policy  # noqa: F401
print(f"oracle_setup: ok, torch {torch.__version__} (FSDP1 importable) under /usr/bin/python3")
EOF
