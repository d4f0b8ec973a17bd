#!/usr/bin/env bash
# The Debian package as a user installs it: `cpack -G DEB` from the build directory, then
# `apt-get install ./shardcheck_*.deb`, then /usr/bin/shardcheck on fixtures with the rules from
# /usr/share/shardcheck/rules, then `apt-get remove`. Needs root (apt-get); skips (77) otherwise.
# Usage: run_deb_test.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build=$(realpath "$1"); src=$(realpath "$2"); work=$3
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then echo "skipped: needs root and apt-get"; exit 77; fi
if dpkg-query -W -f='${Status}' shardcheck 2>/dev/null | grep -q "install ok installed"; then
  echo "skipped: a shardcheck package is already installed on this machine; not replacing it"; exit 77
fi
if [[ -e /usr/bin/shardcheck ]]; then echo "skipped: /usr/bin/shardcheck exists and is not from the package"; exit 77; fi
rm -rf "$work"; mkdir -p "$work"; work=$(realpath "$work")
unset SHARDCHECK_RULES
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

(cd "$build" && cpack -G DEB -B "$work" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; exit 1; }
deb=$(ls "$work"/shardcheck_*.deb)
dpkg-deb -f "$deb" Depends | grep -q "libc6" && ok || bad "Depends does not name libc6: $(dpkg-deb -f "$deb" Depends)"
cleanup() { apt-get remove -y -qq shardcheck >/dev/null 2>&1 || true; }
trap cleanup EXIT
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$deb" >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; exit 1; }
[[ -x /usr/bin/shardcheck && -f /usr/share/shardcheck/rules/accelerate/schema.yaml ]] && ok || bad "the package did not install /usr/bin/shardcheck and its rules"
/usr/bin/shardcheck --version | grep -q "^shardcheck [0-9]" && ok || bad "--version"
# The same tree as the build's binary prints, from the installed rules.
if /usr/bin/shardcheck inspect "$src/fixtures/models/llama" >"$work/installed.out" 2>&1 &&
   diff -q <("$build/shardcheck" inspect "$src/fixtures/models/llama" 2>&1) "$work/installed.out" >/dev/null; then ok
else bad "installed inspect differs from the build's"; fi
# The seed's broken config (fsdp_config children without indentation) caught by the installed lint.
set +e
/usr/bin/shardcheck lint --no-env "$src/fixtures/configs/seed_000_flattened_fsdp_config.yaml" >"$work/lint.out" 2>&1
rc=$?
set -e
[[ $rc == 1 ]] && grep -q "flattened-fsdp-config" "$work/lint.out" && ok || bad "installed lint of the seed config: exit $rc, $(head -3 "$work/lint.out")"
cleanup
[[ ! -e /usr/bin/shardcheck ]] && ok || bad "apt-get remove left /usr/bin/shardcheck"
echo "deb tests: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
