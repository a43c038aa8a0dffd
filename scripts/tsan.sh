#!/usr/bin/env bash
# The threaded tests (environment engine, every distribution policy) under ThreadSanitizer, in
# build-tsan/. Not part of scripts/test.sh: the instrumented build takes about as long as the
# normal one. tests/tsan.supp explains the one suppression (LibTorch is not instrumented).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${CONCORD_TSAN_BUILD_DIR:-$root/build-tsan}"
"$root/scripts/setup.sh"
# Clang where installed, as scripts/build.sh chooses (CXX=g++ keeps GCC).
if [ -z "${CXX:-}" ] && command -v clang++ >/dev/null && command -v clang >/dev/null; then
  export CC=clang CXX=clang++
fi
if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S "$root" -B "$build_dir" -G Ninja -DCONCORD_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCONCORD_BUILD_BENCH=OFF
fi
# Every test whose code runs threads of Concord's own: the env engine, the threaded policies, the
# thread ranks (comm::ThreadGroup) and the watchdog that aborts their waits, the replay's writers.
targets=(policies_learn_test central_inference_test apex_test single_test vector_env_test worker_pool_test
  async_learner_test runtime_test thread_faults_test central_inference_replay_test seed_rl_test actor_processes_test
  apex_processes_test experience_link_test thread_group_test watchdog_test replay_test gan_test
  recurrent_policies_test)
cmake --build "$build_dir" --parallel "$(nproc)" --target "${targets[@]}"
export TSAN_OPTIONS="suppressions=$root/tests/tsan.supp halt_on_error=1 report_signal_unsafe=0"
for test in "${targets[@]}"; do
  echo "tsan: $test"
  "$build_dir/tests/$test" --gtest_brief=1
done
echo "tsan: no data races reported"
