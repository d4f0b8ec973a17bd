#!/usr/bin/env bash
# Sets up, builds and runs every test: the release build, the whole suite again under
# AddressSanitizer + UndefinedBehaviorSanitizer, then every libFuzzer harness for a bounded time
# (FUZZ_SECONDS per harness, default 10; 0 skips fuzzing). Each stage ends with one line
# "== stage NAME: Ns" (and a summary of all of them at the end), so a slow stage shows in every CI log.
set -euo pipefail
cd "$(dirname "$0")/.."
summary=()
stage() {  # stage NAME COMMAND...: runs it, prints and records its wall time
  local name=$1 start=$SECONDS
  shift
  "$@"
  local took=$((SECONDS - start))
  echo "== stage $name: ${took}s"
  summary+=("$name ${took}s")
}
stage setup scripts/setup.sh
for flavour in release asan; do
  dir=build; [[ $flavour == asan ]] && dir=build-asan
  stage "build-$flavour" scripts/build.sh "$flavour"
  echo "== tests ($flavour)"
  stage "tests-$flavour" ctest --test-dir "$dir" --output-on-failure -j "$(nproc)"
done
if [[ "${FUZZ_SECONDS:-10}" != 0 ]]; then
  echo "== fuzz (${FUZZ_SECONDS:-10}s per harness)"
  stage fuzz scripts/fuzz.sh "${FUZZ_SECONDS:-10}"
fi
echo "== all stages passed in ${SECONDS}s: ${summary[*]}"
