#!/usr/bin/env bash
# bench/device_suite.sh: issue 53's scale evidence in one command on the GPU machine (one H200, 16
# cores, PyTorch 2.11 + CUDA 13, no network): builds the CUDA configuration, runs a fixed list of
# time-bounded measurements, each beside its baseline, and writes results.md and results.csv into
# OUT_DIR. A failed step is recorded and the suite goes on. docs/device-suite.md explains it all.
#
#   1. Here (Debian 12), once per session: gather what that machine lacks (toml++, Gloo and
#      Google Benchmark headers, a protoc, Fashion-MNIST's gzipped files: about 37 MiB):
#        bash bench/device_suite.sh --pack device-pack
#   2. On the device (run tool: carry ["device-pack"], timeout_s 600), the one line:
#        bash bench/device_suite.sh "$OUT"
#      A rerun on a machine still warm: bash bench/device_suite.sh --skip-build --only ga3c,fit "$OUT"
#   3. The CPU dry run (ctest device_suite_dry_run): the CPU build, every step at a tiny size:
#        bash bench/device_suite.sh --dry-run --build-dir build /tmp/device-dry
#
# Options: --pack DIR | --dry-run | --build-dir DIR (default build-cuda; build with --dry-run)
#          --pack-dir DIR (default device-pack) | --skip-build | --only GROUPS (comma-separated:
#          correctness,env,ga3c,multi_learner,fit,ppo,ppo_gpu,actor_processes) | --budget SECONDS
#          (default 540: the whole run, build included; a step that would start with under 15 s
#          left is recorded as skipped).
# Exit status: 0 when every step ran and gave its figures, 1 otherwise (2: bad usage).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

mode=device
out=""
build=""
pack_dir="$root/device-pack"
skip_build=0
only=""
budget=""
while [ $# -gt 0 ]; do
  case "$1" in
    --pack) mode=pack; out="${2:?--pack needs a folder}"; shift ;;
    --dry-run) mode=dry ;;
    --build-dir) build="${2:?--build-dir needs a folder}"; shift ;;
    --pack-dir) pack_dir="${2:?--pack-dir needs a folder}"; shift ;;
    --skip-build) skip_build=1 ;;
    --only) only=",${2:?--only needs a list},"; shift ;;
    --budget) budget="${2:?--budget needs seconds}"; shift ;;
    -h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "device_suite: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) [ -z "$out" ] || { echo "device_suite: one output folder only" >&2; exit 2; }; out="$1" ;;
  esac
  shift
done
[ -n "$out" ] || { echo "device_suite: name an output folder (see --help)" >&2; exit 2; }
pack_dir="$(realpath -m "$pack_dir")"

# --- Pack: what the device lacks, from this Debian machine's packages, into one ignored folder ----
if [ "$mode" = pack ]; then
  set -e
  dest="$(realpath -m "$out")"
  lib=/usr/lib/x86_64-linux-gnu
  rm -rf "$dest"
  mkdir -p "$dest/usr/include" "$dest/usr/lib/x86_64-linux-gnu/cmake" "$dest/protoc/lib" "$dest/fashion-mnist"
  # toml++ (libtomlplusplus-dev: compiled, so its library too), Gloo's headers (libgloo-dev; the
  # wheel's LibTorch has Gloo inside but not its headers), Google Benchmark (libbenchmark-dev:
  # bench/CMakeLists.txt finds it, although the suite builds no microbenchmark).
  cp -rL /usr/include/toml++ /usr/include/gloo /usr/include/benchmark "$dest/usr/include/"
  cp -rL "$lib/cmake/tomlplusplus" "$lib/cmake/benchmark" "$dest/usr/lib/x86_64-linux-gnu/cmake/"
  for file in libtomlplusplus.so libtomlplusplus.so.3 libbenchmark.so.1.7.1 libbenchmark_main.a; do
    cp -L "$lib/$file" "$dest/usr/lib/x86_64-linux-gnu/"
  done
  # protoc with its own two libraries beside it, used only where the device has no protoc.
  cp -L /usr/bin/protoc "$dest/protoc/protoc.bin"
  cp -L "$lib/libprotoc.so.32" "$lib/libprotobuf.so.32" "$dest/protoc/lib/"
  printf '#!/bin/sh\nd="$(dirname "$0")"\nLD_LIBRARY_PATH="$d/lib" exec "$d/protoc.bin" "$@"\n' >"$dest/protoc/protoc"
  chmod +x "$dest/protoc/protoc"
  cp -L /usr/share/datasets/fashion-mnist/*.gz "$dest/fashion-mnist/"
  { git -C "$root" rev-parse HEAD; git -C "$root" status --porcelain | wc -l; date -u +%FT%TZ; } >"$dest/COMMIT"
  bytes=$(du -sb "$dest" | cut -f1)
  echo "device_suite: packed $((bytes / 1048576)) MiB into $dest (carry it: run tool carry [\"$(realpath --relative-to="$root" "$dest")\"])"
  [ "$bytes" -lt $((60 * 1048576)) ] || { echo "device_suite: the pack exceeds 60 MiB of the 64 MiB carry limit" >&2; exit 1; }
  exit 0
fi

# --- The run's settings ---------------------------------------------------------------------------
dry=0
[ "$mode" = dry ] && dry=1
if [ -z "$build" ]; then
  if [ "$dry" = 1 ]; then build="$root/build"; else build="$root/build-cuda"; fi
fi
build="$(realpath -m "$build")"
out="$(realpath -m "$out")"
[ -n "$budget" ] || { if [ "$dry" = 1 ]; then budget=240; else budget=540; fi; }
start_epoch=$(date +%s)
deadline=$((start_epoch + budget))
mkdir -p "$out/logs"
: >"$out/steps.tsv"
work="$build/device-suite-work"
[ "$dry" = 1 ] && work="$out/work"
rm -rf "$work/runs"
mkdir -p "$work/runs"
if [ "$dry" = 1 ]; then device=cpu; else device=cuda; fi
cores=$(nproc)
python="${PYTHON:-python3}"
export OMP_NUM_THREADS=1  # one LibTorch/OpenMP thread unless a step says otherwise (bench/RESULTS.md, GA3C)

meta() { printf '%s\t%s\n' "$1" "$2" >>"$out/meta.tsv"; }
: >"$out/meta.tsv"
meta mode "$([ "$dry" = 1 ] && echo "dry run (CPU build, tiny sizes: the figures mean nothing)" || echo device)"
meta date "$(date -u '+%Y-%m-%d %H:%M UTC')"
commit="$(git -C "$root" rev-parse HEAD 2>/dev/null || true)"
if [ -n "$commit" ]; then
  meta commit "$commit$( [ -n "$(git -C "$root" status --porcelain 2>/dev/null)" ] && echo ' (working tree modified)')"
elif [ -f "$pack_dir/COMMIT" ]; then
  meta commit "$(sed -n 1p "$pack_dir/COMMIT") (at pack time, $(sed -n 3p "$pack_dir/COMMIT"); $(sed -n 2p "$pack_dir/COMMIT") files modified then)"
else
  meta commit unknown
fi
meta cpu "$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)"
meta cores "$cores logical CPUs (nproc); $(lscpu 2>/dev/null | awk -F: '/^Socket\(s\)/{s=$2} /^Core\(s\) per socket/{c=$2} /^Thread\(s\) per core/{t=$2} END{gsub(/ /,"",s); gsub(/ /,"",c); gsub(/ /,"",t); printf "%s socket(s) x %s cores x %s threads", s, c, t}')"
meta memory "$(awk '/MemTotal/{printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
meta gpu "$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1 || true)"
meta torch "$("$python" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)' 2>/dev/null || echo "none in $python")"
meta compiler "$(c++ --version 2>/dev/null | head -1)"
meta os "$(sed -n 's/^PRETTY_NAME="\(.*\)"/\1/p' /etc/os-release 2>/dev/null)"
meta build "$build"
meta budget "$budget s"

wanted() { [ -z "$only" ] || [[ "$only" == *",$1,"* ]]; }
report() { "$python" "$root/bench/device/report.py" "$out" >/dev/null 2>>"$out/logs/report.log" || true; }

# run KIND GROUP STEP CONFIG X CAP_SECONDS -- COMMAND...: one time-bounded step (timeout kills its
# whole process group), logged to logs/STEP.log and recorded in steps.tsv: kind, group, step,
# config, x, status, wall seconds, CPU seconds (user + system of the step's processes), log.
run() {
  local kind=$1 group=$2 step=$3 config=$4 x=$5 cap=$6
  shift 7
  local log="logs/$step.log" left limit status rc wall=0 cpu=0 user system
  left=$((deadline - $(date +%s)))
  if [ "$left" -lt 15 ]; then
    printf '%s\t%s\t%s\t%s\t%s\tskipped (time budget)\t0\t0\t\n' "$kind" "$group" "$step" "$config" "$x" >>"$out/steps.tsv"
    return 0
  fi
  limit=$((cap < left ? cap : left))
  printf '$ %s\n' "$*" >"$out/$log"
  local word missing=""
  for word in "$@"; do
    if [[ ("$word" == "$build/concord" || "$word" == "$build"/bench/* || "$word" == "$build"/tests/*) && ! -x "$word" ]]; then
      missing="$word"
    fi
  done
  if [ -n "$missing" ]; then
    echo "device_suite: no program $missing" >>"$out/$log"
    status="failed (no program $(basename "$missing"))"
  else
    local TIMEFORMAT='%R %U %S'
    { time timeout -k 5 "$limit" "$@" >>"$out/$log" 2>&1; } 2>"$out/$log.time"
    rc=$?
    # The last line is time's (a crash adds bash's own line before it, which goes to the log).
    grep -v '^[0-9.]* [0-9.]* [0-9.]*$' "$out/$log.time" >>"$out/$log"
    read -r wall user system < <(tail -n 1 "$out/$log.time")
    cpu=$(awk -v u="$user" -v s="$system" 'BEGIN{printf "%.2f", u + s}')
    rm -f "$out/$log.time"
    case $rc in
      0) status=ok ;;
      124 | 137) status="timeout (${limit} s)" ;;
      *) status="failed (exit $rc)" ;;
    esac
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$group" "$step" "$config" "$x" "$status" "$wall" "$cpu" "$log" >>"$out/steps.tsv"
  echo "device_suite: $step: $status (${wall} s)"
}

# --- Build (the device only): scripts/cuda_build.sh with the benchmarks and the carried prefix ----
tests=(actor_critic_test process_group_test checkpoint_test apex_processes_test)
benches=(ga3c_inference multi_learner actor_processes data_parallel device_fit)
if [ "$dry" = 0 ] && [ "$skip_build" = 0 ]; then
  build_env=(env CONCORD_BUILD_BENCH=ON PYTHON="$python")
  [ -d "$pack_dir/usr" ] && build_env+=(CONCORD_EXTRA_PREFIX="$pack_dir/usr")
  # The device's own protoc where it has one (its protobuf headers must match the generated code).
  if ! command -v protoc >/dev/null 2>&1 && [ -x "$pack_dir/protoc/protoc" ]; then build_env+=(PROTOC="$pack_dir/protoc/protoc"); fi
  run build build build "concord, ${#tests[@]} test programs, ${#benches[@]} benchmarks" "" 420 -- \
    "${build_env[@]}" bash "$root/scripts/cuda_build.sh" "$build" concord "${tests[@]}" "${benches[@]/#/bench_}"
  report
fi
[ "$dry" = 1 ] && [ ! -x "$build/concord" ] && echo "device_suite: no $build/concord: build the CPU configuration first" >&2
concord="$build/concord"
bench="$build/bench"

# Fashion-MNIST: the loader trusts a verified decompressed cache under <data dir>/data/fashion-mnist
# (data/gzip_cache.h), so the carried .gz files are decompressed there; without them the loader
# reads Debian's package (/usr/share/datasets/fashion-mnist), as in the dry run.
data_root="$root/third_party"
if [ -d "$pack_dir/fashion-mnist" ] && [ "$dry" = 0 ]; then
  data_root="$work/data-root"
  mkdir -p "$data_root/data/fashion-mnist"
  for gz in "$pack_dir"/fashion-mnist/*.gz; do
    plain="$data_root/data/fashion-mnist/$(basename "$gz" .gz)"
    [ -s "$plain" ] || { gzip -dc "$gz" >"$plain.part" && mv "$plain.part" "$plain"; } ||
      echo "device_suite: cannot decompress $gz" >&2
  done
fi

# Sizes: the device's (each measurement a few seconds) or the dry run's (the same command lines,
# tiny). x is the thread, rank, worker or agent count of a point on a curve.
if [ "$dry" = 1 ]; then
  # One point per curve (x = 2): every process start costs about a second of CPU here.
  xs=(2); ppo_xs=(2); top=2; roll_envs=(64 64 16); roll_steps=(20000 10000 2000); ppo_steps=1024
  ppo_extra=(--set algo.ppo.num_steps=32)
  ml=(--max-ranks 1 --updates 1 --num-steps 16 --timeout 60)
  ap=(--actors 1 --envs-per-actor 2 --num-steps 16 --updates 1 --timeout 60)
  dp=(--workers 1,2 --batch 8 --steps 1 --warmup 0 --allreduce-repeats 1 --extrapolate-to 2 --timeout 30)
  df=(--batch 8 --steps 1 --warmup 0)
  agents=(2); own_agents=(2); ga3c_seconds=0.3
  tests_filter=(--gtest_filter='*Cuda*' --gtest_filter='*Nccl*' --gtest_filter='CheckpointTest.RoundTripsMetadataAndTensorsExactly'
    --gtest_filter='ApexProcesses.EveryActorsStepsReachTheLearnerInOrderAndParametersReachTheActors')
else
  # MuJoCo: 64 envs (each mjData holds MuJoCo 2.2's 10 MB arena), HalfCheetah about 25k steps/s a core.
  xs=(1 2 4 8 16); ppo_xs=(1 16 2 4 8); top=16; roll_envs=(4096 4096 64); roll_steps=(40000000 16000000 200000)
  ppo_steps=20480; ppo_extra=()
  ml=(--max-ranks 16 --updates 10 --timeout 60)
  ap=(--actors 1 2 4 8 16 --envs-per-actor 8 --updates 3 --timeout 60)
  dp=(--workers 1,2,4,8,16 --batch 256 --steps 4 --warmup 1 --allreduce-repeats 3 --extrapolate-to 16 --timeout 60)
  df=(--batch 256 --steps 50 --warmup 5)
  agents=(8 16 32 64); own_agents=(16 32); ga3c_seconds=1.5
  tests_filter=("" "" "" --gtest_filter='ApexProcesses.*')  # apex: without its learning test
fi
minatar_cnn=(--set 'env.id="MinAtar/Breakout-v1"' --set 'algo.torso="grid_cnn"' --set algo.shared_torso=true)
# pin X: `taskset -c` on the first X of the CPUs this process may use (a container's need not be 0..N-1).
cpu_ids=()
IFS=, read -ra cpu_ranges <<<"$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)"
for range in "${cpu_ranges[@]}"; do
  for ((cpu = ${range%-*}; cpu <= ${range#*-}; cpu++)); do cpu_ids+=("$cpu"); done
done
pin() {
  if command -v taskset >/dev/null 2>&1 && [ "$1" -le "${#cpu_ids[@]}" ]; then
    echo taskset -c "$(IFS=,; echo "${cpu_ids[*]:0:$1}")"
  fi
}

# 1. CUDA correctness: the link order, then four test programs at once (GPU-only tests among them).
if wanted correctness; then
  run link correctness link_order "concord names libstdc++ before libtorch" "" 30 -- \
    bash -c 'readelf -d "$1" | grep NEEDED | head -3; readelf -d "$1" | awk "/NEEDED/ {print; exit}" | grep -q "libstdc++"' _ "$concord"
  for i in "${!tests[@]}"; do
    filter=${tests_filter[$i]}
    run gtest correctness "${tests[$i]}" "${tests[$i]}${filter:+ ${filter#--gtest_filter=}}" "" 240 -- \
      "$build/tests/${tests[$i]}" ${filter:+"$filter"} &
  done
  wait
  report
fi

# 3a. GA3C: central batched inference against per-agent batch-1 inference on the GPU, with
# MinAtar's CNN and with GA3C's larger network; then the larger network's per-agent column on the
# CPU's cores (A3C's arrangement) against the same central inference on the GPU.
if wanted ga3c; then
  run ga3c ga3c ga3c_minatar "grid CNN" "" 90 -- "$bench/ga3c_inference" --minatar --device "$device" \
    --agents "${agents[@]}" --seconds "$ga3c_seconds"
  run ga3c ga3c ga3c_large "Nature CNN 84x84" "" 90 -- "$bench/ga3c_inference" --large --device "$device" \
    --agents "${agents[@]}" --seconds "$ga3c_seconds"
  run ga3c ga3c ga3c_large_own_cpu "Nature CNN 84x84, own on CPU" "" 60 -- "$bench/ga3c_inference" --large \
    --device "$device" --own-device cpu --agents "${own_agents[@]}" --seconds "$ga3c_seconds"
  report
fi

# 2a. CPU scaling, each a curve over xs (taskset: x cores for x threads): env stepping.
if wanted env; then
  roll_ids=(CartPole-v1 MinAtar/Breakout-v1 MuJoCo/HalfCheetah-v5)
  for e in 0 1 2; do
    env_id=${roll_ids[e]}
    for x in "${xs[@]}"; do
      run rollout env "env_${env_id//\//-}_x$x" "$env_id, ${roll_envs[e]} envs" "$x" 60 -- $(pin "$x") "$concord" rollout \
        --env "$env_id" --num-envs "${roll_envs[e]}" --threads "$x" --steps $((roll_steps[e] * x)) --seed 1 \
        --progress off --run-root "$work/runs"
    done
  done
  report
fi

# 2b. multi_learner: ranks on the MinAtar CNN (16 envs in all, split across the ranks).
if wanted multi_learner; then
  run multi_learner multi_learner multi_learner "MinAtar CNN, 16 envs in all" "" 150 -- "$bench/multi_learner" \
    --runs 1 --no-control "${ml[@]}" "${minatar_cnn[@]}"
  report
fi

# 2c and 3c. `concord fit`'s synchronous SGD, ResNet-20 on Fashion-MNIST, strong scaling at a global
# batch of 256 over worker threads (bench/data_parallel, which times the steps without fit's test
# evaluations), then the same loop on one GPU (bench/device_fit).
if wanted fit; then
  run data_parallel fit fit_workers "resnet20, global batch $( [ "$dry" = 1 ] && echo 8 || echo 256 )" "" 120 -- \
    "$bench/data_parallel" --dataset fashion_mnist --model resnet20 --data-dir "$data_root" --transport threads \
    --scaling strong "${dp[@]}"
  run device_fit fit fit_gpu "resnet20 on $device" 1 60 -- "$bench/device_fit" --dataset fashion_mnist \
    --model resnet20 --data-dir "$data_root" --device "$device" "${df[@]}"
  report
fi

# 2d and 3b. PPO on MinAtar SpaceInvaders with the grid CNN (configs/ppo_minatar_space_invaders.toml), env steps/s per policy: x =
# LibTorch threads, and env threads (sync_vector, async_learner) or agents (central_inference).
ppo() {  # ppo GROUP POLICY X DEVICE
  local group=$1 policy=$2 x=$3 dev=$4 knob=()
  case $policy in
    sync_vector | async_learner) knob=(--threads "$x") ;;
    central_inference) knob=(--set "policy.central_inference.actors=$x") ;;
  esac
  local step="${group}_${policy}_x$x"
  run train "$group" "$step" "$policy on $dev" "$x" 60 -- $(pin "$x") "$concord" train \
    --config configs/ppo_minatar_space_invaders.toml --policy "$policy" --total-timesteps "$ppo_steps" --seed 1 \
    --progress off --run-root "$work/runs/$step" --set "run.torch_threads=$x" --set "run.device=$dev" \
    "${knob[@]}" "${ppo_extra[@]}"
  # Its per-update metrics: report.py takes steps/s from the first update to the last.
  cp "$work/runs/$step"/*/metrics.csv "$out/logs/$step.metrics.csv" 2>/dev/null || true
}
# 3b first: PPO with the learner (and central inference) on the GPU, at the top of the CPU curve.
if wanted ppo_gpu; then
  for policy in sync_vector central_inference; do ppo ppo_gpu "$policy" "$top" "$device"; done
  report
fi
# The CPU curves, x = 1 and the top first, so that a run short of time still has every ratio.
if wanted ppo; then
  for x in "${ppo_xs[@]}"; do
    for policy in single sync_vector central_inference async_learner; do ppo ppo_cpu "$policy" "$x" cpu; done
  done
  report
fi

# 2e. actor_processes: actors on the MinAtar CNN (8 envs per actor; the learner's batch grows).
if wanted actor_processes; then
  run actor_processes actor_processes actor_processes "MinAtar CNN, 8 envs per actor" "" 120 -- \
    "$bench/actor_processes" --runs 1 "${ap[@]}" "${minatar_cnn[@]}"
  report
fi

meta wall "$(($(date +%s) - start_epoch)) s"
[ "$dry" = 1 ] && rm -rf "$work"
"$python" "$root/bench/device/report.py" --check "$out"
status=$?
echo "device_suite: $(wc -l <"$out/steps.tsv") steps in $(($(date +%s) - start_epoch)) s; results in $out/results.md"
exit $status
