#!/usr/bin/env bash
# The measurement behind the learning tests' bars: every learning test (gtest suites named
# *Learning, in the programs ctest labels `learning`) over many seeds and several OpenBLAS kernel sets, one line per run collected into
# a table (min, median, max and the share above each test's bar). Slow: minutes per kernel.
# Usage: scripts/learning_sweep.sh [SEEDS [KERNEL ...]]   e.g. scripts/learning_sweep.sh 1,2,3,4,5,6 Haswell Zen
# Environment: CONCORD_SWEEP_FILTER, a gtest filter narrowing the tests (default '*Learning.*').
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${CONCORD_BUILD_DIR:-$root/build}"
seeds="${1:-1,2,3,4,5,6}"
shift || true
kernels=("$@")
if [ "${#kernels[@]}" -eq 0 ]; then kernels=(Haswell Zen SkylakeX Sandybridge); fi
filter="${CONCORD_SWEEP_FILTER:-*Learning.*}"
out="$(mktemp -t learning_sweep.XXXXXX)"
for kernel in "${kernels[@]}"; do
  echo "learning_sweep: OPENBLAS_CORETYPE=$kernel, seeds $seeds" >&2
  (cd "$build_dir" && OPENBLAS_CORETYPE="$kernel" CONCORD_LEARNING_SEEDS="$seeds" GTEST_FILTER="$filter" \
    ctest -j "$(nproc)" --timeout 6000 -L '^learning$' -V 2>&1 || true) | grep -o '\[learning\] .*' >>"$out" || true
done
echo "# learning sweep: seeds $seeds; kernels ${kernels[*]}; $(date -u +%Y-%m-%d); load $(cut -d' ' -f1-3 /proc/loadavg)"
awk '
  {
    name = $2; kernel = ""; score = ""; bar = "";
    for (i = 3; i <= NF; ++i) {
      split($i, kv, "=");
      if (kv[1] == "kernel") kernel = kv[2];
      if (kv[1] == "score") score = kv[2] + 0;
      if (kv[1] == "bar") bar = kv[2] + 0;
    }
    key = name " " kernel;
    n[key]++; s[key, n[key]] = score; b[key] = bar; if (score > bar) above[key]++;
  }
  END {
    printf "%-72s %-12s %5s %8s %8s %8s %s\n", "test", "kernel", "runs", "min", "median", "max", "above bar";
    for (key in n) {
      m = n[key];
      for (i = 1; i <= m; ++i) v[i] = s[key, i];
      for (i = 1; i <= m; ++i) for (j = i + 1; j <= m; ++j) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t; }
      median = (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2;
      split(key, parts, " ");
      printf "%-72s %-12s %5d %8.2f %8.2f %8.2f %d/%d > %g\n", parts[1], parts[2], m, v[1], median, v[m], above[key] + 0, m, b[key];
    }
  }' "$out" | sort
echo "# raw lines: $out"
