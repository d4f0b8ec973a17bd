#!/usr/bin/env bash
# Installs every system package shardcheck needs on a fresh Debian 12 machine (idempotent).
# Only Debian packages are used; nothing is vendored or downloaded from elsewhere.
set -euo pipefail

need=(cmake g++ ninja-build ccache python3 clang
      libyaml-cpp-dev nlohmann-json3-dev libfmt-dev libcli11-dev doctest-dev
      libcurl4-openssl-dev nginx-light python3-jsonschema pre-commit dpkg-dev file)
# libcurl: Hub model ids; nginx: loopback Hub in tests; jsonschema: SARIF output checked against SARIF 2.1.0;
# pre-commit: the hooks of .pre-commit-hooks.yaml tested for real (tests/precommit); dpkg-dev and
# file: CPack's Debian package computes its Depends with dpkg-shlibdeps (tests/package)
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
