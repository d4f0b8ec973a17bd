#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy's checks, warnings as errors) over the translation units of the core
# library, the CLI flags library and the CLI in a configured build (default build/), in parallel.
#   scripts/tidy.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
command -v clang-tidy >/dev/null || { echo "tidy: clang-tidy is not installed (scripts/setup.sh installs it)" >&2; exit 2; }
[[ -f $dir/compile_commands.json ]] || { echo "tidy: no $dir/compile_commands.json (configure the build first)" >&2; exit 2; }
# The sources compile_commands.json lists for these targets (unity batches or single files).
mapfile -t units < <(python3 - "$dir/compile_commands.json" <<'PY'
import json, sys
for e in json.load(open(sys.argv[1])):
    out = e.get("output", e.get("command", ""))
    if any(t in out for t in ("shardcheck_core.dir", "shardcheck_cli_flags.dir", "CMakeFiles/shardcheck.dir")):
        print(e["file"])
PY
)
((${#units[@]})) || { echo "tidy: no translation unit found in $dir" >&2; exit 2; }
log=$(mktemp); trap 'rm -f "$log"' EXIT
status=0
printf '%s\n' "${units[@]}" | xargs -P "$(nproc)" -n 1 clang-tidy -p "$dir" --quiet >"$log" 2>/dev/null || status=1
grep -E "(warning|error):" "$log" | sort -u || true
echo "tidy: ${#units[@]} translation units checked ($(clang-tidy --version | grep -o 'version [0-9.]*'))"
exit $status
