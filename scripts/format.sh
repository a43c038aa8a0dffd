#!/usr/bin/env bash
# Formats every C++ source with the project's .clang-format (clang-format 14, Debian's).
# Usage: scripts/format.sh           rewrite the files in place
#        scripts/format.sh --check   list the files that drift and fail, changing nothing
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if ! command -v clang-format >/dev/null 2>&1; then
  echo "format: clang-format is missing; run scripts/setup.sh (package clang-format)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.hpp' '*.cc')
if [ "${1:-}" = "--check" ]; then
  drift=()
  for file in "${files[@]}"; do
    if ! clang-format --dry-run -Werror "$file" >/dev/null 2>&1; then drift+=("$file"); fi
  done
  if [ "${#drift[@]}" -gt 0 ]; then
    printf 'format: %s differs from .clang-format\n' "${drift[@]}" >&2
    echo "format: ${#drift[@]} files drift; run scripts/format.sh to fix them" >&2
    exit 1
  fi
  echo "format: ${#files[@]} files match .clang-format"
else
  clang-format -i "${files[@]}"
fi
