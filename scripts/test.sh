#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: install dependencies, check the format,
# build, run every test, then the learning tests under two other BLAS kernels and the fuzzers.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/format.sh" --check
"$root/scripts/build.sh"
# On a CPU its release does not know, OpenBLAS falls back to kernels below the CPU's (generic
# Prescott ones on Intel's newest, AVX2 ones on AMD's AVX-512 CPUs), whose products can differ by
# one rounding between identical runs: tests that expect two runs to match bit for bit then fail.
# `concord` re-executes itself with the kernel set the CPU runs, and says which in --version; the
# test programs are told the same here.
faster="$("${CONCORD_BUILD_DIR:-$root/build}/concord" --version | sed -n 's/.*OPENBLAS_CORETYPE=\([A-Za-z0-9]*\).*/\1/p')"
if [ -n "$faster" ] && [ -z "${OPENBLAS_CORETYPE:-}" ]; then
  export OPENBLAS_CORETYPE="$faster"
  echo "test: OpenBLAS chose kernels below this CPU's; testing with OPENBLAS_CORETYPE=$faster, as concord runs"
fi
(cd "${CONCORD_BUILD_DIR:-$root/build}" && ctest --output-on-failure --timeout 600 -j "$(nproc)" "$@")
# Learning tests again under OpenBLAS kernel sets other than this machine's own: a bar that only
# one kernel clears must fail here, not by chance on somebody else's machine. Arguments narrow
# the ctest run above (e.g. -R Foo); the check then is left out.
if [ $# -eq 0 ]; then "$root/scripts/kernel_check.sh"; fi
# Each libFuzzer target (tests/fuzz) for 20 s on its seed corpus, built with clang, ASan and UBSan
# in a build directory of its own; a crash, leak or hang fails the suite.
if [ $# -eq 0 ]; then "$root/scripts/fuzz.sh" 20; fi
