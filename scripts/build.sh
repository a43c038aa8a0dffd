#!/usr/bin/env bash
# Configures (once) and builds Concord in Release into build/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${CONCORD_BUILD_DIR:-$root/build}"
if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${CONCORD_BUILD_TYPE:-Release}"
fi
cmake --build "$build_dir" --parallel "$(nproc)" "$@"
