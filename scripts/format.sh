#!/usr/bin/env bash
# Formats the C++ sources with clang-format and the repository's .clang-format, or with --check
# reports each file that differs and exits 1 (ctest `format` runs the check; CI fails on a drift).
#   scripts/format.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "format: clang-format is not installed (scripts/setup.sh installs it)" >&2; exit 2; }
mapfile -t files < <(git ls-files 'src/*.cpp' 'src/*.hpp' 'include/*.hpp' 'tests/*.cpp' 'tests/*.hpp' \
                                  'bench/*.cpp' 'bench/*.hpp' 'fuzz/*.cpp' 'fuzz/*.hpp' 2>/dev/null ||
                     find src include tests bench fuzz -name '*.cpp' -o -name '*.hpp')
if [[ ${1:-} == --check ]]; then
  bad=0
  for f in "${files[@]}"; do
    if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
      echo "format: $f differs from clang-format's output (run scripts/format.sh)"
      bad=1
    fi
  done
  echo "format: ${#files[@]} files checked ($(clang-format --version | head -n1))"
  exit $bad
fi
clang-format -i "${files[@]}"
