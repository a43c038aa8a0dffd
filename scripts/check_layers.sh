#!/usr/bin/env bash
# Layers point one way. Checks three things against each other and fails on any difference:
#   1. the layer libraries' dependencies as the build declares them (concord_layer(... DEPS ...)
#      in CMakeLists.txt);
#   2. the dependency table in docs/architecture.md (the lines between the markers
#      "<!-- layers:begin -->" and "<!-- layers:end -->");
#   3. every #include "concord/<layer>/..." in src/concord/<layer>/: a layer may include itself
#      and the layers it depends on, directly or through others, and nothing else.
# Run by ctest (test `layers`); needs only bash, grep and sed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
status=0

declare -A build_deps docs_deps
while read -r layer deps; do
  build_deps[$layer]="$(echo "$deps" | tr ' ' '\n' | sed -n 's/^concord_//p' | { grep -vx proto || true; } | sort | tr '\n' ' ' | sed 's/ $//')"
done < <(sed -n 's/^concord_layer(\([a-z_]*\) DEPS \(.*\))$/\1 \2/p' CMakeLists.txt)

table="$(sed -n '/<!-- layers:begin -->/,/<!-- layers:end -->/p' docs/architecture.md | grep '^| `' || true)"
if [ -z "$table" ]; then
  echo "check_layers: docs/architecture.md has no dependency table between <!-- layers:begin --> and <!-- layers:end -->" >&2
  exit 1
fi
while IFS='|' read -r _ layer deps _; do
  layer="$(echo "$layer" | tr -d ' `')"
  docs_deps[$layer]="$(echo "$deps" | tr -d '`,' | tr ' ' '\n' | { grep -v -e '^$' -e '^-$' || true; } | sort | tr '\n' ' ' | sed 's/ $//')"
done <<<"$table"

for layer in "${!build_deps[@]}"; do
  if [ "${docs_deps[$layer]+set}" != set ]; then
    echo "check_layers: layer '$layer' is built (CMakeLists.txt) but missing from the table in docs/architecture.md" >&2
    status=1
  elif [ "${docs_deps[$layer]}" != "${build_deps[$layer]}" ]; then
    echo "check_layers: layer '$layer' depends on [${build_deps[$layer]}] in CMakeLists.txt but on [${docs_deps[$layer]}] in docs/architecture.md" >&2
    status=1
  fi
done
for layer in "${!docs_deps[@]}"; do
  if [ "${build_deps[$layer]+set}" != set ] && [ "$layer" != cli ]; then
    echo "check_layers: docs/architecture.md lists layer '$layer', which CMakeLists.txt does not build" >&2
    status=1
  fi
done

# Everything a layer may include: itself and the transitive closure of its dependencies.
closure() {
  local pending=("$1") seen=" $1 " next
  while [ "${#pending[@]}" -gt 0 ]; do
    next="${pending[0]}"
    pending=("${pending[@]:1}")
    for dep in ${build_deps[$next]:-}; do
      if [[ "$seen" != *" $dep "* ]]; then
        seen+="$dep "
        pending+=("$dep")
      fi
    done
  done
  echo "$seen"
}

for layer in "${!build_deps[@]}"; do
  allowed="$(closure "$layer")"
  while IFS=: read -r file _ included; do
    if [[ "$allowed" != *" $included "* ]]; then
      echo "check_layers: $file includes concord/$included/, but layer '$layer' does not depend on '$included'" >&2
      status=1
    fi
  done < <({ grep -rnoE '#include "concord/[a-z_]+/' "src/concord/$layer" || true; } | sed 's|#include "concord/\([a-z_]*\)/|\1|')
done

if [ "$status" -eq 0 ]; then echo "check_layers: ${#build_deps[@]} layers; the build, the docs and the includes agree"; fi
exit "$status"
