#!/usr/bin/env bash
# Installs every system package shardcheck needs on a fresh Debian 12 machine (idempotent).
# Only Debian packages are used; nothing is vendored or downloaded from elsewhere.
# `setup.sh --cli`: only what building the shardcheck CLI needs (scripts/build.sh cli; the GitHub
# Action uses it), no test tools, LibTorch or browser.
set -euo pipefail

cli_only=0; [[ "${1:-}" == --cli ]] && cli_only=1
need=(cmake g++ ninja-build ccache libyaml-cpp-dev nlohmann-json3-dev libfmt-dev libcli11-dev libcurl4-openssl-dev)
if ((cli_only)); then
  SHARDCHECK_WITH_TORCH=0 SHARDCHECK_WITH_BROWSER=0
else
  need+=(python3 clang clang-format clang-tidy doctest-dev nginx-light python3-jsonschema python3-yaml pre-commit dpkg-dev file python3-venv)
fi
# libcurl: Hub model ids; nginx: loopback Hub in tests; jsonschema: SARIF output checked against SARIF 2.1.0;
# pre-commit: the hooks of .pre-commit-hooks.yaml tested for real (tests/precommit); dpkg-dev and
# file: CPack's Debian package computes its Depends with dpkg-shlibdeps (tests/package); python3-venv:
# the wheel installed into a fresh virtualenv (tests/package); python3-yaml: action.yml read by its test;
# clang-format, clang-tidy: the sources checked against .clang-format and .clang-tidy (ctest `format`
# and `tidy`, scripts/format.sh and scripts/tidy.sh)
# The smoke runner (shardcheck-smoke): LibTorch's c10d with gloo on CPU. libtorch-dev
# lacks a dependency on libgloo-dev although ProcessGroupGloo.hpp includes <gloo/...>.
# SHARDCHECK_WITH_TORCH=0 skips them (CMake then builds everything but shardcheck-smoke).
if [[ "${SHARDCHECK_WITH_TORCH:-1}" == 1 ]]; then
  need+=(libtorch-dev libgloo-dev)
fi
# The HTML plan is tested in Debian's headless Chromium (tests/html); SHARDCHECK_WITH_BROWSER=0 skips it.
if [[ "${SHARDCHECK_WITH_BROWSER:-1}" == 1 ]]; then
  need+=(chromium)
fi

missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
