#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang, ASan and UBSan in their own build directory,
# then runs each for SECONDS (default 20) on a copy of its seed corpus, two or more at once.
# Fails, naming the targets, if any of them crashes, leaks, hangs or aborts; the input that did it
# is kept beside the target's log under <build dir>/fuzz-run/.
# Usage: scripts/fuzz.sh [SECONDS]
#   CONCORD_FUZZ_BUILD_DIR   build directory (default: build-fuzz)
#   CONCORD_FUZZ_TARGETS     targets to run, space-separated (default: all)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-20}"
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  echo "usage: scripts/fuzz.sh [SECONDS]" >&2
  exit 2
fi
build="${CONCORD_FUZZ_BUILD_DIR:-$root/build-fuzz}"
read -r -a targets <<<"${CONCORD_FUZZ_TARGETS:-config checkpoint tensorboard mnist launch_env store_handshake}"

# clang and its libFuzzer/sanitizer runtimes come with everything else the build needs.
"$root/scripts/setup.sh"

# Only the fuzz targets: the rest of the project is configured but not built here.
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCONCORD_FUZZ=ON \
  -DCONCORD_BUILD_TESTS=OFF -DCONCORD_BUILD_BENCH=OFF -DCONCORD_BUILD_PYTHON=OFF -DCONCORD_PCH=OFF >/dev/null
cmake --build "$build" --target "${targets[@]/%/_fuzz}"

# Fresh copies of the seed corpora: what the fuzzers add stays in the build directory, never in tests/.
run="$build/fuzz-run"
rm -rf "$run"
mkdir -p "$run"
export LSAN_OPTIONS="suppressions=$root/tests/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

fuzz_one() {
  local name="$1"
  mkdir -p "$run/$name/corpus"
  cp "$root/tests/fuzz/corpus/$name/"* "$run/$name/corpus/"
  # -timeout: an input taking a minute is a hang, a finding like a crash (a few seconds are not:
  # the readers fsync what they cache). -malloc_limit_mb: one allocation of 2 GiB is a length
  # field trusted; the process as a whole may grow larger, LibTorch leaking a little on each zip
  # archive it rejects. The outer timeout only guards against the fuzzer itself not stopping.
  timeout --kill-after=10 $((seconds + 120)) "$build/tests/fuzz/${name}_fuzz" -max_total_time="$seconds" \
    -timeout=60 -malloc_limit_mb=2048 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$run/$name/" \
    "$run/$name/corpus" >"$run/$name/log" 2>&1
}

# As many at once as there are cores; each target is single-threaded.
jobs="$(nproc)"
declare -A status=()
pending=("${targets[@]}")
while [ ${#pending[@]} -gt 0 ]; do
  batch=("${pending[@]:0:$jobs}")
  pending=("${pending[@]:$jobs}")
  declare -A pids=()
  for name in "${batch[@]}"; do
    fuzz_one "$name" &
    pids[$name]=$!
  done
  for name in "${batch[@]}"; do
    if wait "${pids[$name]}"; then status[$name]=0; else status[$name]=$?; fi
  done
  unset pids
done

failed=()
for name in "${targets[@]}"; do
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$run/$name/log" | tail -1)"
  if [ "${status[$name]}" -eq 0 ]; then
    echo "fuzz: $name: ${runs:-?} runs in $seconds s, nothing found"
  else
    failed+=("$name")
    echo "fuzz: $name: FAILED (status ${status[$name]}) after ${runs:-?} runs" >&2
    grep -m 4 -E 'ERROR: |runtime error:|what\(\): |SUMMARY: ' "$run/$name/log" | sed 's/^/fuzz:   /' >&2 || true
    for artifact in "$run/$name"/{crash,leak,timeout,oom,slow-unit}-*; do
      if [ -e "$artifact" ]; then
        echo "fuzz:   input: $artifact (replay: $build/tests/fuzz/${name}_fuzz $artifact)" >&2
      fi
    done
    echo "fuzz:   log: $run/$name/log" >&2
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} of ${#targets[@]} targets failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets ran $seconds s each, nothing found"
