#!/usr/bin/env bash
# The contributor's quick loop: builds the test programs of the named layers (tests/<layer>/) and
# runs their tests without the learning tests (gtest suites named *Learning), which train for seconds
# each and are what scripts/test.sh reruns under other BLAS kernels. With no layer, every unit
# test of every layer. scripts/test.sh stays the full suite: learning tests, kernels, fuzzers.
# Usage: scripts/dev_test.sh [LAYER ...] [-- CTEST ARGS]    e.g. scripts/dev_test.sh core envs -- -R config
# (ctest runs one test per program; GTEST_FILTER=Config* narrows the programs to some tests.)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${CONCORD_BUILD_DIR:-$root/build}"
layers=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  if [ ! -d "$root/tests/$1" ] || [ "$1" = fuzz ] || [ "$1" = python ]; then
    echo "dev_test: no layer '$1' with unit tests (layers: $(cd "$root/tests" && ls -d */ | tr -d / | grep -vx -e fuzz -e python | tr '\n' ' '))" >&2
    exit 2
  fi
  layers+=("$1")
  shift
done
if [ "${1:-}" = "--" ]; then shift; fi
targets=()
for layer in "${layers[@]}"; do
  for source in "$root/tests/$layer"/*_test.cpp "$root/tests/$layer"/*/*_test.cpp; do
    if [ -f "$source" ]; then targets+=("$(basename "$source" .cpp)"); fi
  done
done
if [ ! -f "$build_dir/build.ninja" ]; then "$root/scripts/build.sh" --target concord; fi
if [ ${#targets[@]} -gt 0 ]; then
  cmake --build "$build_dir" --parallel "$(nproc)" --target "${targets[@]}"
else
  cmake --build "$build_dir" --parallel "$(nproc)"
fi
# The kernel the suite uses (scripts/test.sh): concord itself re-executes with it where OpenBLAS
# falls back to generic kernels; the test programs are told.
faster="$("$build_dir/concord" --version | sed -n 's/.*OPENBLAS_CORETYPE=\([A-Za-z0-9]*\).*/\1/p')"
if [ -n "$faster" ] && [ -z "${OPENBLAS_CORETYPE:-}" ]; then export OPENBLAS_CORETYPE="$faster"; fi
if [ ${#layers[@]} -eq 0 ]; then
  mapfile -t layers < <(cd "$root/tests" && ls -d */ | tr -d / | grep -vx -e fuzz -e python)
fi
cd "$build_dir"
# Every test program of the layers, each without its learning tests (suites named *Learning).
GTEST_FILTER="${GTEST_FILTER:--*Learning.*}" exec ctest --output-on-failure --timeout 900 -j "$(nproc)" \
  -L "^($(IFS='|'; echo "${layers[*]}"))\$" "$@"
