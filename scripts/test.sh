#!/usr/bin/env bash
# Sets up, builds and runs every test: the release build, then the whole suite again under
# AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
for flavour in release asan; do
  scripts/build.sh "$flavour"
  dir=build; [[ $flavour == asan ]] && dir=build-asan
  echo "== tests ($flavour)"
  ctest --test-dir "$dir" --output-on-failure -j "$(nproc)"
done
