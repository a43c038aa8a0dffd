#!/usr/bin/env bash
# What malloc's thresholds (core/allocator.h) are worth: `concord train` on each config, once with
# glibc's defaults (CONCORD_MALLOC=default, the baseline) and once with Concord's thresholds,
# alternating which goes first, `repeats` times. Prints the median training wall time (the CLI's
# own "wall time" line, start-up excluded) and the process's minor page faults of each, side by
# side.
#   bash bench/allocator.sh [repeats (3)] [build dir (build)] [config[:steps] ...]
# Configs (names under configs/) default to PPO and DQN on MinAtar Breakout, and PPO and DQN on
# CartPole, each for a few seconds to a minute of training. Needs a build without TCMalloc
# (-DCONCORD_TCMALLOC=OFF): with it, glibc's settings do not apply.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repeats="${1:-3}"
concord="$(cd "${2:-$root/build}" && pwd)/concord"
shift $(($# < 2 ? $# : 2))
configs=("$@")
[ ${#configs[@]} -gt 0 ] ||
  configs=(ppo_minatar_space_invaders:100000 dqn_minatar_breakout:25000 ppo_cartpole:100000 dqn_cartpole:150000)
work="$(mktemp -d -t concord-allocator-XXXXXX)"
trap 'rm -rf "$work"' EXIT
if "$concord" --version 2>/dev/null | grep -q tcmalloc; then
  echo "bench/allocator.sh: $concord links TCMalloc, where glibc's settings do not apply; compare them in a build configured with -DCONCORD_TCMALLOC=OFF" >&2
  exit 1
fi
command -v /usr/bin/time > /dev/null || { echo "bench/allocator.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }

one_run() {  # <config> <steps> <mode: default|concord>; prints "<wall s> <minor faults>"
  local config="$1" steps="$2" mode="$3" env_mode=()
  [ "$mode" = default ] && env_mode=(CONCORD_MALLOC=default)
  env "${env_mode[@]}" /usr/bin/time -f "faults %R" -o "$work/time" "$concord" train \
    --config "$root/configs/$config.toml" --total-timesteps "$steps" --seed 1 --progress off \
    --run-root "$work/runs" > "$work/log" 2>&1 || { echo "bench/allocator.sh: $config failed:" >&2; tail -3 "$work/log" >&2; exit 1; }
  local wall faults
  wall="$(sed -n 's/^wall time *\([0-9.]*\) s$/\1/p' "$work/log")"
  faults="$(sed -n 's/^faults \([0-9]*\)$/\1/p' "$work/time")"
  echo "$wall $faults"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "$("$concord" --version)"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg); medians of $repeats runs each"
printf '%-24s %8s %10s %10s %14s %14s %8s\n' config steps "glibc s" "concord s" "glibc faults" "concord faults" speed-up
for entry in "${configs[@]}"; do
  config="${entry%%:*}"
  steps=60000
  [ "$config" = "$entry" ] || steps="${entry#*:}"
  : > "$work/default"
  : > "$work/concord"
  for ((r = 0; r < repeats; r++)); do
    if ((r % 2 == 0)); then order=(default concord); else order=(concord default); fi
    for mode in "${order[@]}"; do one_run "$config" "$steps" "$mode" >> "$work/$mode" || exit 1; done
  done
  d_wall="$(cut -d' ' -f1 "$work/default" | median)"
  c_wall="$(cut -d' ' -f1 "$work/concord" | median)"
  d_faults="$(cut -d' ' -f2 "$work/default" | median)"
  c_faults="$(cut -d' ' -f2 "$work/concord" | median)"
  printf '%-24s %8d %10.2f %10.2f %14.0f %14.0f %7.2fx\n' "$config" "$steps" "$d_wall" "$c_wall" "$d_faults" "$c_faults" \
    "$(awk -v d="$d_wall" -v c="$c_wall" 'BEGIN { print d / c }')"
done
