#!/usr/bin/env bash
# Records what eager attention keeps beside SDPA (scripts/activation_probe.py with ATTN eager and sdpa)
# for tiny models of fixtures/oracle2/models, into OUT (default fixtures/oracle2/eager): per model
# float32 and bfloat16 on one rank, each with both implementations, 16 tokens; and float32 on two
# tensor-parallel ranks for the TP models given with --tp.
#   scripts/eager_oracle.sh [OUT] MODEL... [--tp MODEL...]
# Runs inside the torch 2.x chroot (scripts/oracle2_run.sh); tests/unit/test_eager_attention.cpp
# compares each pair with the registry's `eager_attention` model.
set -euo pipefail
cd "$(dirname "$0")/.."
out=fixtures/oracle2/eager
if [[ ${1:-} == */* || ${1:-} == build* ]]; then out=$1; shift; fi
mkdir -p "$out"
tp=1
for model in "$@"; do
  if [[ $model == --tp ]]; then tp=2; continue; fi
  cfgs=("1 float32" "1 bfloat16"); [[ $tp == 2 ]] && cfgs=("2 float32")
  for cfg in "${cfgs[@]}"; do
    set -- $cfg
    for attn in sdpa eager; do
      scripts/oracle2_run.sh python3 scripts/activation_probe.py "$model" "$1" 16 "$2" "/repo/$out/$model-tp$1-$2-$attn.json" "$attn" \
        2>/dev/null | grep '^{' >/dev/null || echo "eager_oracle: $model tp $1 $2 $attn: no record (see the probe's output)" >&2
    done
  done
done
