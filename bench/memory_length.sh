#!/usr/bin/env bash
# memory_length: bsuite's Memory Length (Osband et al. 2020) against memory length L. For each L it
# trains configs/ppo_lstm_memory_length.toml (recurrent PPO) and the same agent without memory
# (algo.recurrent = "", the baseline, in the same run) through bench/learning, evaluates each
# greedily over 20 episodes and prints the success rate, (1 + mean return) / 2: 1 is every answer
# right, 0.5 is chance.
#
#   bench/memory_length.sh [--lengths "1 3 10 30"] [--seeds N] [--steps N] [--build DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lengths="1 3 10 20 30 50 60"
seeds=1
steps=50000
build="${CONCORD_BUILD_DIR:-$root/build}"
while [ $# -gt 0 ]; do
  case "$1" in
    --lengths) lengths="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    *) echo "memory_length: unknown argument '$1' (known: --lengths, --seeds, --steps, --build)" >&2; exit 2 ;;
  esac
done
learning="$build/bench/learning"
if [ ! -x "$learning" ]; then
  echo "memory_length: $learning is missing; build it with scripts/build.sh --target bench_learning" >&2
  exit 2
fi
# The mean over seeds of the greedy evaluation return, from bench/learning's per-seed lines.
success() {
  "$learning" --configs "$root/configs/ppo_lstm_memory_length.toml" --seeds "$seeds" --total-timesteps "$steps" \
    --set "env.id=\"MemoryLength$1-v0\"" "${@:2}" |
    awk '/ seed [0-9]+: return/ { for (i = 1; i <= NF; ++i) if ($i == "return") { sum += $(i + 1); n += 1 } }
         END { if (n == 0) exit 1; printf "%.2f", (1 + sum / n) / 2 }'
}
echo "memory_length: $steps steps per run, $seeds seed(s), greedy evaluation over 20 episodes; success 0.5 is chance"
printf '%8s  %22s  %22s\n' "length" "recurrent (lstm 32)" "feed-forward (baseline)"
for length in $lengths; do
  recurrent="$(success "$length")"
  feed_forward="$(success "$length" --set 'algo.recurrent=""' --set algo.recurrent_size=128)"
  printf '%8s  %22s  %22s\n' "$length" "$recurrent" "$feed_forward"
done
