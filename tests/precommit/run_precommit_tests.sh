#!/usr/bin/env bash
# The pre-commit hooks (.pre-commit-hooks.yaml) for real, with Debian's pre-commit and no network: a
# scratch git repository uses this repository as its hook repository; a broken accelerate config
# blocks the commit, `shardcheck-lint-fix` repairs it (the seed's lost fsdp_config indentation), and
# the repaired file commits. Usage: run_precommit_tests.sh SHARDCHECK_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
bin=$(realpath "$1"); src=$(realpath "$2"); work=$3
command -v pre-commit >/dev/null || { echo "pre-commit is not installed (scripts/setup.sh installs it)"; exit 1; }
rm -rf "$work"; mkdir -p "$work/bin" "$work/hooks-repo" "$work/project"
ln -s "$(realpath "$bin")" "$work/bin/shardcheck"
export PATH="$work/bin:$PATH" PRE_COMMIT_HOME="$work/cache" GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
# The hook repository: this repository's hook definitions in a git repository of their own (what
# `repo:` points at; pre-commit clones it locally, no network).
cp "$src/.pre-commit-hooks.yaml" "$work/hooks-repo/"
git -C "$work/hooks-repo" init -q && git -C "$work/hooks-repo" add . && git -C "$work/hooks-repo" commit -qm hooks
rev=$(git -C "$work/hooks-repo" rev-parse HEAD)
cd "$work/project"
git init -q
cat > .pre-commit-config.yaml <<YAML
repos:
  - repo: $work/hooks-repo
    rev: $rev
    hooks:
      - id: shardcheck-lint
YAML
git add .pre-commit-config.yaml && git commit -qm config
pre-commit install >/dev/null
pass=0; fail=0
check() { if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $*"; fi; }
# 1. The seed's config (fsdp_config children lost their indentation) blocks the commit.
cp "$src/fixtures/configs/seed_000_flattened_fsdp_config.yaml" accelerate_config.yaml
git add accelerate_config.yaml
if git commit -qm bad >"$work/out1" 2>&1; then echo "FAIL: a broken config was committed"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
check grep -q "flattened-fsdp-config" "$work/out1"
# 2. The fix hook repairs it; the lint hook then passes and the commit goes through.
cat > .pre-commit-config.yaml <<YAML
repos:
  - repo: $work/hooks-repo
    rev: $rev
    hooks:
      - id: shardcheck-lint-fix
      - id: shardcheck-lint
YAML
git add .pre-commit-config.yaml
git commit -qm fix >"$work/out2" 2>&1 || true   # pre-commit fails a run that modified files
git add -A
check git commit -qm fixed
check bash -c "! grep -q '^fsdp_auto_wrap_policy' accelerate_config.yaml"
# 3. A file that does not look like an accelerate config is not linted.
printf 'a: [\n' > other.yaml; git add other.yaml
check git commit -qm other
echo "$pass passed, $fail failed"
[[ $fail == 0 ]]
