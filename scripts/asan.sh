#!/usr/bin/env bash
# Every unit test under AddressSanitizer and UndefinedBehaviorSanitizer (with LeakSanitizer), in
# build-asan/. The learning tests (gtest suites named *Learning) are left out: they train for
# seconds to minutes, and under the sanitizers' 2-3x they would add most of an hour for no new
# code paths (the same loops run in the unit tests). The CLI tests run the instrumented `concord`.
# Not part of scripts/test.sh: the instrumented build takes about as long as the normal one.
# tests/asan_lsan.supp explains the leak suppressions (libraries Concord does not build).
# Usage: scripts/asan.sh [ctest arguments, e.g. -R checkpoint]   (one ctest test per test program)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${CONCORD_ASAN_BUILD_DIR:-$root/build-asan}"
"$root/scripts/setup.sh"
if [ ! -f "$build_dir/build.ninja" ]; then
  # The Python module is left out: an instrumented extension cannot load into Debian's
  # uninstrumented interpreter without preloading the ASan runtime into Python itself.
  cmake -S "$root" -B "$build_dir" -G Ninja -DCONCORD_ASAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCONCORD_BUILD_BENCH=OFF -DCONCORD_BUILD_PYTHON=OFF
fi
cmake --build "$build_dir" --parallel "$(nproc)"
export ASAN_OPTIONS="detect_leaks=1 halt_on_error=1 detect_stack_use_after_return=0 strict_string_checks=1"
export LSAN_OPTIONS="suppressions=$root/tests/asan_lsan.supp print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1"
export GTEST_FILTER="${GTEST_FILTER:--*Learning.*}"
(cd "$build_dir" && ctest --output-on-failure --timeout 1800 -j "$(nproc)" "$@")
echo "asan: no memory errors, leaks or undefined behaviour reported"
