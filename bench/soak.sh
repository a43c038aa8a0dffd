#!/usr/bin/env bash
# Issue 18's soak: `concord train` for M minutes under one policy, its resident memory (summed
# over every rank process for a multi-process policy) sampled every 10 s. Prints the samples and
# the growth from the end of the warm-up (the first sixth of the run, at most 10 minutes) to the
# end; the target is under 5%. The run is then stopped with SIGINT, which must leave a
# checkpoint `concord eval` accepts.
#   bash bench/soak.sh <minutes> <threaded|processes|off_policy> [build dir (build)]
# threaded: A2C under hogwild, 4 worker threads (configs/a2c_cartpole.toml);
# processes: PPO under multi_learner, 2 ranks under `concord launch` (configs/ppo_cartpole.toml);
# off_policy: DQN on MinAtar SpaceInvaders under single (configs/dqn_minatar_space_invaders.toml),
#   one update per env step; its 100k-transition replay fills in about 3 minutes, so give it 20
#   minutes or more for the warm-up to cover that.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
minutes="${1:?minutes}"
mode="${2:?threaded, processes or off_policy}"
concord="$(cd "${3:-$root/build}" && pwd)/concord"
work="$(mktemp -d -t concord-soak-XXXXXX)"
trap 'rm -rf "$work"' EXIT
common=(--total-timesteps 100000000000 --progress off --run-root "$work/runs"
  --set train.checkpoint_interval_seconds=60 --set log.interval_seconds=10)
case "$mode" in
  threaded)
    "$concord" train --config "$root/configs/a2c_cartpole.toml" --policy hogwild --set policy.hogwild.actors=4 "${common[@]}" \
      > "$work/log" 2>&1 &
    ;;
  processes)
    "$concord" launch -n 2 -- concord train --config "$root/configs/ppo_cartpole.toml" --policy multi_learner \
      "${common[@]}" > "$work/log" 2>&1 &
    ;;
  off_policy)
    "$concord" train --config "$root/configs/dqn_minatar_space_invaders.toml" "${common[@]}" > "$work/log" 2>&1 &
    ;;
  *) echo "soak: mode must be threaded, processes or off_policy, got '$mode'" >&2; exit 2 ;;
esac
top=$!
rss_kib() {  # the top process and its children (the launcher's ranks)
  local total=0 pid
  for pid in "$top" $(pgrep -P "$top"); do
    total=$((total + $(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2> /dev/null || echo 0)))
  done
  echo "$total"
}
echo "soak: $mode for $minutes min, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
samples=$((minutes * 6))
warmup=$((samples / 6 < 60 ? samples / 6 : 60))
for ((i = 1; i <= samples; i++)); do
  sleep 10
  if ! kill -0 "$top" 2> /dev/null; then
    echo "soak: the run ended early:"
    tail -5 "$work/log"
    exit 1
  fi
  rss=$(rss_kib)
  echo "t=$((i * 10))s rss_mib=$((rss / 1024))"
  [ "$i" -eq "$warmup" ] && warm_rss=$rss
  last_rss=$rss
done
kill -INT "$top"
wait "$top"
status=$?
run_dir="$(find "$work/runs" -mindepth 1 -maxdepth 1 -type d | head -1)"
step="$(grep -o 'stopped by signal at step [0-9]*' "$work/log" | grep -o '[0-9]*$' | head -1)"
"$concord" eval "$run_dir" --episodes 2 > "$work/eval" 2>&1
eval_status=$?
awk -v w="$warm_rss" -v l="$last_rss" -v m="$warmup" 'BEGIN {
  printf "soak: rss after warm-up (%d s) %.1f MiB, at the end %.1f MiB, growth %+.2f%% (target < 5%%)\n",
         m * 10, w / 1024, l / 1024, 100 * (l - w) / w }'
echo "soak: stopped by SIGINT at step ${step:-?}, exit $status (130 expected); eval of its checkpoint exit $eval_status"
