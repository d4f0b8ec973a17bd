#!/usr/bin/env bash
# Put peft's source beside the torch 2.x oracle chroot (scripts/oracle2_setup.sh) for
# scripts/peft_oracle.py: Debian does not package peft, and its pure-Python src/peft runs there
# with nothing else to install. The source goes into the chroot (/opt/peft/src), never into this
# repository.
#   scripts/peft_oracle_setup.sh PEFT_CHECKOUT [--root DIR]     # a git clone of huggingface/peft
set -euo pipefail
src=${1:?usage: peft_oracle_setup.sh PEFT_CHECKOUT [--root DIR]}
dir=/var/tmp/shardcheck-sid
if [[ ${2:-} == --root ]]; then dir=$3; fi
[[ -x $dir/usr/bin/python3 ]] || { echo "peft_oracle_setup: no chroot at $dir; run scripts/oracle2_setup.sh" >&2; exit 2; }
rm -rf "$dir/opt/peft"
mkdir -p "$dir/opt/peft"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$src" archive HEAD src/peft | tar -x -C "$dir/opt/peft"
  git -C "$src" rev-parse HEAD >"$dir/opt/peft/COMMIT"
else
  cp -r "$src/src" "$dir/opt/peft/src"
fi
echo "peft $(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$dir/opt/peft/src/peft/__init__.py") at $dir/opt/peft/src"
