#!/usr/bin/env bash
# The Python wheel as an ML environment installs it: scripts/build_wheel.py from the built CLI, then
# `pip install --no-index` into a fresh virtualenv (no network), then the virtualenv's shardcheck:
# --version, a plan of the llama fixture with hand-computed shards, and the rules it reads are the
# ones the wheel put in the virtualenv. Usage: run_wheel_test.sh SHARDCHECK_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
bin=$(realpath "$1"); src=$(realpath "$2"); work=$3
rm -rf "$work"; mkdir -p "$work"; work=$(realpath "$work")
unset SHARDCHECK_RULES PIP_INDEX_URL PIP_EXTRA_INDEX_URL
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# Debian's python3 (python3-venv brings ensurepip's bundled pip), else whatever python3 is first.
py=/usr/bin/python3; [[ -x $py ]] || py=$(command -v python3)
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

wheel=$("$py" "$src/scripts/build_wheel.py" --binary "$bin" --rules "$src/rules" --out "$work/dist")
[[ $(basename "$wheel") =~ ^shardcheck-[0-9.]+-py3-none-manylinux_2_[0-9]+_[a-z0-9_]+\.whl$ ]] && ok || bad "wheel name $(basename "$wheel")"
"$py" -m venv "$work/venv" >"$work/venv.log" 2>&1 || { cat "$work/venv.log"; echo "python3 -m venv failed (scripts/setup.sh installs python3-venv)"; exit 1; }
"$work/venv/bin/python" -m pip install --no-index "$wheel" >"$work/pip.log" 2>&1 || { cat "$work/pip.log"; exit 1; }
ok
venv_bin=$work/venv/bin/shardcheck
[[ -x $venv_bin ]] && ok || bad "pip did not install bin/shardcheck"
"$venv_bin" --version | grep -q "^shardcheck [0-9]" && ok || bad "--version: $("$venv_bin" --version 2>&1)"
# fixtures/models/llama over 2 ranks: a decoder layer is 4,360 elements, 2,180 per rank; the root
# keeps embed_tokens + norm + lm_head = 1,500, 750 per rank (tests/package/run_package_tests.sh
# has the arithmetic).
"$venv_bin" plan --no-env --world-size 2 --format json "$src/fixtures/models/llama" >"$work/plan.json"
if "$py" - "$work/plan.json" <<'PY'
import json, sys
units = json.load(open(sys.argv[1]))["units"]
got = [(u["path"], u["numel"], u["shard_numel"]) for u in units]
want = [("", 1500, 750)] + [(f"model.layers.{i}", 4360, 2180) for i in range(3)]
sys.exit(0 if got == want else f"units {got}, expected {want}")
PY
then ok; else bad "plan from the wheel's binary"; fi
# The Python helper: importable from the virtualenv, and it finds the virtualenv's binary.
if "$work/venv/bin/python" -c "import shardcheck, sys; sys.exit(shardcheck.find_binary() != sys.argv[1])" "$venv_bin"
then ok; else bad "import shardcheck / find_binary in the virtualenv"; fi
# The rules it reads are the wheel's, in the virtualenv.
rules=$work/venv/share/shardcheck/rules
[[ -f $rules/models/llama.yaml ]] && ok || bad "no rules in the virtualenv"
mv "$rules/models/llama.yaml" "$work/llama.yaml"
if "$venv_bin" inspect "$src/fixtures/models/llama" >/dev/null 2>&1; then bad "the wheel's binary read rules outside the virtualenv"; else ok; fi
mv "$work/llama.yaml" "$rules/models/llama.yaml"
"$work/venv/bin/python" -m pip uninstall -y shardcheck >/dev/null 2>&1 && [[ ! -e $venv_bin ]] && ok || bad "pip uninstall left bin/shardcheck"
echo "wheel tests: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
