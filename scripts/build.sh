#!/usr/bin/env bash
# Configures (once) and builds Concord in Release into build/. Arguments go to `cmake --build`
# (e.g. --target concord). With CONCORD_BUILD_PROGRESS=line the build's progress is one line that
# updates in place on a terminal (a line per tenth elsewhere) instead of a line per step; warnings
# and errors still print in full.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${CONCORD_BUILD_DIR:-$root/build}"
# Clang, where installed (scripts/setup.sh installs it), unless CXX names a compiler: it builds
# Concord in about a third of GCC's CPU time, chiefly because Clang instantiates LibTorch's header
# templates once in the precompiled header where GCC does it again in every translation unit
# (bench/RESULTS.md, "Build and CI times"). GCC builds the same code: CXX=g++ scripts/build.sh.
# The choice is made when the build directory is configured and kept in its cache afterwards.
if [ -z "${CXX:-}" ] && command -v clang++ >/dev/null && command -v clang >/dev/null; then
  export CC=clang CXX=clang++
fi
if [ ! -f "$build_dir/build.ninja" ]; then
  if [ "${CONCORD_BUILD_PROGRESS:-}" = line ]; then
    cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${CONCORD_BUILD_TYPE:-Release}" >/dev/null
  else
    cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${CONCORD_BUILD_TYPE:-Release}"
  fi
fi
if [ "${CONCORD_BUILD_PROGRESS:-}" != line ]; then
  exec cmake --build "$build_dir" --parallel "$(nproc)" "$@"
fi
# Ninja prints "[done/total] what" per step when its output is not a terminal, as here.
terminal=0
if [ -t 1 ]; then terminal=1; fi
NINJA_STATUS="[%f/%t] " cmake --build "$build_dir" --parallel "$(nproc)" "$@" | awk -v terminal="$terminal" '
  /^\[[0-9]+\/[0-9]+\] / {
    split(substr($1, 2, length($1) - 2), n, "/")
    percent = int(100 * n[1] / n[2])
    if (terminal) {
      printf "\r  build: %d of %d steps (%d%%)   ", n[1], n[2], percent
      fflush()
    } else if (int(percent / 10) > last) {
      last = int(percent / 10)
      printf "  build: %d of %d steps (%d%%)\n", n[1], n[2], percent
      fflush()
    }
    shown = 1
    next
  }
  /^ninja: no work to do/ { next }
  { if (terminal && shown) printf "\n"; shown = 0; print; fflush() }
  END { if (terminal && shown) printf "\n" }'
