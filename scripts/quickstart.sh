#!/usr/bin/env bash
# The README's first command: installs only what the CLI needs (scripts/setup.sh --cli), builds only
# the shardcheck program (scripts/build.sh cli: build-cli/shardcheck), then shows two things on
# bundled files: the linter catching the broken accelerate config of a real thread (fsdp_config's
# keys lost their indentation), `lint --fix` repairing a copy, and the FSDP plan of a small Llama
# with the repaired config.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --cli
scripts/build.sh cli
bin=build-cli/shardcheck
seed=fixtures/configs/seed_000_flattened_fsdp_config.yaml
fixed=$(mktemp --suffix=.yaml); trap 'rm -f "$fixed"' EXIT
cp "$seed" "$fixed"
echo
echo "\$ shardcheck lint $seed        # first lines"
"$bin" lint --no-env "$seed" | head -n 6 || true
echo
echo "\$ shardcheck lint --fix (a copy of it), then: shardcheck plan fixtures/models/llama --config (the fixed copy)"
"$bin" lint --no-env --fix "$fixed" >/dev/null || true
"$bin" plan --no-env fixtures/models/llama --config "$fixed"
