#!/usr/bin/env bash
# Configure and build one flavour of shardcheck. Usage: scripts/build.sh [release|asan|cli]
# cli: the shardcheck program alone in build-cli/ (no tests, benchmarks or smoke runner).
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
case "$flavour" in
  release) dir=build;      args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
  asan)    dir=build-asan; args=(-DCMAKE_BUILD_TYPE=Debug -DSHARDCHECK_SANITIZE=ON) ;;
  cli)     dir=build-cli;  args=(-DCMAKE_BUILD_TYPE=Release -DSHARDCHECK_BUILD_TESTS=OFF -DSHARDCHECK_BUILD_BENCH=OFF
                                -DSHARDCHECK_WITH_TORCH=OFF) ;;
  *) echo "unknown flavour $flavour" >&2; exit 2 ;;
esac
launcher=(); command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Unity build: the sources compile in batches of 12, so the shared headers (fmt, yaml-cpp, nlohmann,
# doctest) are parsed once per batch, not once per file. A fresh 2-core machine builds the CLI in about
# a minute instead of four (docs/development.md). SHARDCHECK_UNITY=0 compiles file by file, which rebuilds less
# after a one-file edit.
unity=(-DCMAKE_UNITY_BUILD="$([[ ${SHARDCHECK_UNITY:-1} == 0 ]] && echo OFF || echo ON)" -DCMAKE_UNITY_BUILD_BATCH_SIZE=12)
cmake -S . -B "$dir" -G Ninja "${args[@]}" "${launcher[@]}" "${unity[@]}" >/dev/null
target=(); [[ $flavour == cli ]] && target=(--target shardcheck)
cmake --build "$dir" -j "$(nproc)" "${target[@]}"
