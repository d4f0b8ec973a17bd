#!/usr/bin/env bash
# Records what autograd really saves per decoder layer (scripts/activation_probe.py) for the tiny models
# of fixtures/oracle2/models, into OUT (default fixtures/oracle2/activations): per model float32 and
# bfloat16 on one rank, and float32 on 2 tensor-parallel ranks (gloo has no bfloat16 all-reduce).
#   scripts/activation_oracle.sh [OUT] MODEL...
# TOKENS (default 16) and EXPERTS (the probe's experts implementation, default eager) pass through: the
# mixture-of-experts records are taken with TOKENS=13 EXPERTS=grouped_mm (EXPERTS=default for Granite-MoE,
# whose experts take no implementation), e.g.
#   TOKENS=13 EXPERTS=grouped_mm scripts/activation_oracle.sh mixtral_i16 phimoe_i16
# SDPA=kernel and DROPOUT=cuda (the probe's stand-ins for what CUDA keeps where CPU keeps other tensors,
# docs/activations.md) pass through too:
#   TOKENS=11 EXPERTS=grouped_mm SDPA=kernel scripts/activation_oracle.sh deepseek_v3_w deepseek_v3_w_lite deepseek_v2_w
#   SDPA=kernel DROPOUT=cuda scripts/activation_oracle.sh gpt2 seed_oss   (one rank: they have no TP plan)
# Runs inside the torch 2.x chroot (scripts/oracle2_run.sh); tests/unit/test_activation_oracle.cpp
# compares each record with the registry's activation model.
set -euo pipefail
cd "$(dirname "$0")/.."
out=fixtures/oracle2/activations
if [[ ${1:-} == */* || ${1:-} == build* ]]; then out=$1; shift; fi
mkdir -p "$out"
for model in "$@"; do
  for cfg in "1 float32" "1 bfloat16" "2 float32"; do
    set -- $cfg
    scripts/oracle2_run.sh env EXPERTS="${EXPERTS:-eager}" SDPA="${SDPA:-}" DROPOUT="${DROPOUT:-}" python3 scripts/activation_probe.py "$model" "$1" "${TOKENS:-16}" "$2" "/repo/$out/$model-tp$1-$2.json" \
      2>/dev/null | grep '^{' || echo "activation_oracle: $model tp $1 $2: no record (see the probe's output)" >&2
  done
done
