#!/usr/bin/env bash
# src/platform/ buys speed and must not change a result: inspect, plan, check and lint print the same
# bytes with SHARDCHECK_NO_TUNING=1 (plain malloc, files copied, no huge pages or prefaulting) as without.
#   run_tuning_test.sh SHARDCHECK SOURCE_DIR GENERATED_DIR
set -uo pipefail
bin=$1 src=$2 gen=$3
fail=0
compare() {  # compare NAME ARGS...
  local name=$1; shift
  local a b
  a=$("$bin" "$@" 2>&1; echo "exit $?")
  b=$(SHARDCHECK_NO_TUNING=1 "$bin" "$@" 2>&1; echo "exit $?")
  if [[ "$a" != "$b" ]]; then
    echo "FAIL $name: output differs with SHARDCHECK_NO_TUNING=1"
    diff <(echo "$a") <(echo "$b") | head -n 20
    fail=1
  else
    echo "ok   $name"
  fi
}
compare "inspect deepseek-v3 (sparse, index + 163 shards)" inspect --format json "$gen/deepseek-v3"
compare "plan llama-3.1-405b config-only, tp 8" plan --format json --no-env --config-only --world-size 512 \
  --fsdp-version 2 --tp-size 8 "$gen/llama-3.1-405b"
compare "plan llama fixture" plan --no-env --world-size 4 "$src/fixtures/models/llama"
compare "check the seed config" check --no-env --config "$src/fixtures/configs/seed_000_flattened_fsdp_config.yaml" \
  --model "$src/fixtures/models/llama"
compare "lint the config fixtures" lint --no-env --format json "$src"/fixtures/configs/*.yaml
exit $fail
