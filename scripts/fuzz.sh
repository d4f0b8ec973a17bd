#!/usr/bin/env bash
# Builds the libFuzzer harnesses with clang (ASan + UBSan) and runs each for a bounded time on a
# seed corpus taken from fixtures/. Usage: scripts/fuzz.sh [SECONDS_PER_HARNESS]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
launcher=(); command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
  -DSHARDCHECK_BUILD_FUZZ=ON -DSHARDCHECK_BUILD_TESTS=OFF -DSHARDCHECK_BUILD_BENCH=OFF "${launcher[@]}" \
  -DCMAKE_UNITY_BUILD="$([[ ${SHARDCHECK_UNITY:-1} == 0 ]] && echo OFF || echo ON)" -DCMAKE_UNITY_BUILD_BATCH_SIZE=12 >/dev/null
cmake --build build-fuzz -j "$(nproc)"

seed_dir() {  # harness name -> directory of seed inputs
  case "$1" in
    fuzz_safetensors) echo fixtures/broken fixtures/models ;;
    fuzz_index) echo fixtures/models fixtures/broken ;;
    fuzz_model_config) echo fixtures/broken-configs fixtures/corpus-configs fuzz/corpus/model_config ;;
    fuzz_accelerate_yaml) echo fixtures/configs ;;
    fuzz_registry) echo rules/models ;;
    fuzz_expr) echo fuzz/corpus/expr ;;
    fuzz_hub_text) echo fuzz/corpus/hub_text ;;
    fuzz_small_inputs) echo fuzz/corpus/small_inputs ;;
    fuzz_settings) echo fuzz/corpus/settings ;;
    fuzz_adapter) echo fixtures/adapters fixtures/peft-oracle/adapters ;;
    fuzz_training_args) echo fixtures/training-args ;;
    fuzz_module_tree) echo fixtures/module-trees fuzz/corpus/module_tree ;;
    *) echo fuzz/corpus ;;
  esac
}
status=0
for bin in build-fuzz/fuzz_*; do
  [[ -x $bin ]] || continue
  name=$(basename "$bin")
  work=build-fuzz/corpus-$name; mkdir -p "$work"
  seeds=()
  for d in $(seed_dir "$name"); do
    [[ -d $d ]] || continue
    while IFS= read -r -d '' f; do seeds+=("$f"); done < <(find "$d" -type f -size -1024k \
        \( -name '*.json' -o -name '*.yaml' -o -name '*.yml' -o -name '*.safetensors' -o -path '*corpus*' \) -print0)
  done
  ((${#seeds[@]})) && cp -f "${seeds[@]}" "$work/" 2>/dev/null || true
  echo "== $name: ${secs}s"
  rm -f "build-fuzz/finding-$name-"*
  if ! "$bin" "$work" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=0 -artifact_prefix="build-fuzz/finding-$name-" 2>"build-fuzz/$name.log"; then
    echo "FAILED: $name (see build-fuzz/$name.log)"; grep -m1 -A3 -E 'ERROR|deadly' "build-fuzz/$name.log" || true
    # The input itself, so that a finding in a CI log can be replayed: printf with these bytes | harness.
    for f in "build-fuzz/finding-$name-"*; do
      [[ -f $f ]] && { echo "input $f ($(stat -c %s "$f") bytes):"; head -c 2048 "$f" | od -An -c; }
    done
    status=1
  fi
done
exit $status
