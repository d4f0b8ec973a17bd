#!/usr/bin/env bash
# The installed shardcheck, as a user or a C++ project gets it: `cmake --install` into a scratch
# prefix, then (1) the installed CLI reads the rules installed beside it, not the source tree it
# was built from, and still does after the prefix is moved; (2) a tiny C++ project finds the library
# with find_package(shardcheck) and plans a fixture through it.
# Usage: run_package_tests.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build=$(realpath "$1"); src=$(realpath "$2"); work=$3
rm -rf "$work"; mkdir -p "$work"; work=$(realpath "$work")
unset SHARDCHECK_RULES
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
prefix=$work/prefix
model=$src/fixtures/models/llama

# 1. The installed CLI and its rules.
if "$prefix/bin/shardcheck" inspect "$model" >"$work/inspect.out" 2>&1; then ok; else bad "installed inspect failed: $(cat "$work/inspect.out")"; fi
grep -q "LlamaForCausalLM" "$work/inspect.out" && ok || bad "installed inspect printed no LlamaForCausalLM tree"
# Without the installed llama entry the installed binary must not know llama: it read its own rules.
mv "$prefix/share/shardcheck/rules/models/llama.yaml" "$work/llama.yaml"
if "$prefix/bin/shardcheck" inspect "$model" >"$work/no-llama.out" 2>&1; then
  bad "the installed binary found llama without its installed rules entry (it read $src/rules?)"
else ok; fi
mv "$work/llama.yaml" "$prefix/share/shardcheck/rules/models/llama.yaml"
# The Python helper installed beside the rules finds the installed binary (find_binary).
if PYTHONPATH="$prefix/share/shardcheck/python" SHARDCHECK_BINARY= PATH=/usr/bin:/bin python3 -c \
     "import shardcheck, sys; sys.exit(shardcheck.find_binary() != sys.argv[1])" "$prefix/bin/shardcheck"
then ok; else bad "the installed Python helper did not find $prefix/bin/shardcheck"; fi
# A moved prefix (an unpacked archive, a relocated virtualenv) still finds its rules.
mv "$prefix" "$work/moved"
if "$work/moved/bin/shardcheck" inspect "$model" >/dev/null 2>&1; then ok; else bad "inspect from a moved prefix failed"; fi
mv "$work/moved" "$prefix"

# 2. find_package(shardcheck) from a consumer project.
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if cmake -S "$src/tests/package/consumer" -B "$work/consumer" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
     -DCMAKE_PREFIX_PATH="$prefix" >"$work/consumer-configure.log" 2>&1 &&
   cmake --build "$work/consumer" >"$work/consumer-build.log" 2>&1; then ok
else bad "the consumer project did not configure or build:"; tail -n 30 "$work/consumer-configure.log"; tail -n 30 "$work/consumer-build.log" 2>/dev/null; fi
if [[ -x "$work/consumer/consumer" ]]; then
  "$work/consumer/consumer" "$model" 2 >"$work/consumer.out" 2>"$work/consumer.err" && ok || bad "consumer exited $?: $(cat "$work/consumer.err")"
  # By hand from fixtures/models/llama/config.json (hidden 20, intermediate 52, 4 heads of 5, 2 KV
  # heads, vocab 37, 3 layers, untied): a decoder layer is q 20*20 + k 10*20 + v 10*20 + o 20*20 +
  # gate/up/down 3*52*20 + two norms 2*20 = 4,360 elements, split over 2 ranks as 2,180 each
  # (torch.chunk, no padding); the root keeps embed_tokens 37*20 + norm 20 + lm_head 37*20 = 1,500,
  # 750 per rank.
  expected=$'(root) 1500 750\nmodel.layers.0 4360 2180\nmodel.layers.1 4360 2180\nmodel.layers.2 4360 2180'
  if [[ "$(cat "$work/consumer.out")" == "$expected" ]]; then ok
  else bad "consumer plan differs:"; diff <(echo "$expected") "$work/consumer.out" || true; fi
fi

echo "package tests: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
