#!/usr/bin/env bash
# Sets up, builds and runs every test: the release build, the whole suite again under
# AddressSanitizer + UndefinedBehaviorSanitizer, then every libFuzzer harness for a bounded time
# (FUZZ_SECONDS per harness, default 10; 0 skips fuzzing).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
for flavour in release asan; do
  scripts/build.sh "$flavour"
  dir=build; [[ $flavour == asan ]] && dir=build-asan
  echo "== tests ($flavour)"
  ctest --test-dir "$dir" --output-on-failure -j "$(nproc)"
done
if [[ "${FUZZ_SECONDS:-10}" != 0 ]]; then
  echo "== fuzz (${FUZZ_SECONDS:-10}s per harness)"
  scripts/fuzz.sh "${FUZZ_SECONDS:-10}"
fi
