#!/usr/bin/env bash
# Reruns every learning test (gtest suites named *Learning, in the test programs ctest labels
# `learning`) under OpenBLAS kernel sets other
# than this machine's own. OpenBLAS picks its kernels by CPU, and kernels round differently, so a
# learning test whose bar holds on one kernel only would pass here and fail on another machine;
# OPENBLAS_CORETYPE forces a kernel set, and this script tries two that this CPU can run.
# Usage: scripts/kernel_check.sh [KERNEL ...]   (default: one of SkylakeX, Haswell, Sandybridge
# and Zen that differs from the machine's own and that the CPU supports, chosen by the commit, so
# that successive commits take turns through all of them: a rerun of one commit checks the same
# kernel, and each kernel set costs the suite about four minutes on 2 cores.
# CONCORD_KERNEL_CHECK=all checks every one of them.)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${CONCORD_BUILD_DIR:-$root/build}"
if [ ! -x "$build_dir/concord" ]; then
  echo "kernel_check: $build_dir/concord is missing; run scripts/build.sh first" >&2
  exit 2
fi

native="$("$build_dir/concord" --version | sed -n 's/.*, kernel \([A-Za-z0-9]*\).*/\1/p')"
if [ $# -gt 0 ]; then
  kernels=("$@")
else
  flags="$(grep -m1 '^flags' /proc/cpuinfo || true)"
  supports() {  # OpenBLAS kernel set -> the CPU flag it needs
    case "$1" in
      SkylakeX) [[ "$flags" == *" avx512f "* ]] ;;
      Haswell | Zen) [[ "$flags" == *" avx2 "* ]] ;;
      Sandybridge) [[ "$flags" == *" avx "* ]] ;;
    esac
  }
  kernels=()
  for kernel in SkylakeX Haswell Sandybridge Zen; do
    if [ "$kernel" != "$native" ] && supports "$kernel"; then kernels+=("$kernel"); fi
  done
  if [ "${#kernels[@]}" -gt 1 ] && [ "${CONCORD_KERNEL_CHECK:-}" != all ]; then
    commit="$(git -C "$root" rev-parse --short=7 HEAD 2>/dev/null || echo 0)"
    turn=$((16#${commit:0:7} % ${#kernels[@]}))
    echo "kernel_check: commit $commit checks ${kernels[$turn]} of ${kernels[*]} (CONCORD_KERNEL_CHECK=all for every one)"
    kernels=("${kernels[$turn]}")
  fi
fi
if [ "${#kernels[@]}" -eq 0 ]; then
  echo "kernel_check: this CPU runs no OpenBLAS kernel set other than ${native:-its own}; nothing to check"
  exit 0
fi

status=0
for kernel in "${kernels[@]}"; do
  echo "kernel_check: learning tests with OPENBLAS_CORETYPE=$kernel (this machine's own: ${native:-unknown})"
  if ! (cd "$build_dir" && OPENBLAS_CORETYPE="$kernel" GTEST_FILTER='*Learning.*' \
    ctest --output-on-failure --timeout 1800 -j "$(nproc)" -L '^learning$'); then
    echo "kernel_check: a learning test failed under OPENBLAS_CORETYPE=$kernel" >&2
    status=1
  fi
done
exit "$status"
