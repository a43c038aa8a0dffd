#!/usr/bin/env bash
# Issue 18's restart figure: N runs of a 2-rank multi_learner PPO under
# `concord launch --max-restarts`, each with one rank (picked at random; the index is into the
# launcher's children by pid, which is the rank order but for pid wrap-around) SIGKILLed at a
# random moment; counts the runs that finish with the full step count and a checkpoint `concord eval`
# accepts (a run in which no rank was left to kill, the run already over, counts as failed).
# Baseline beside it: the same kill without --max-restarts, which must fail.
#   bash bench/restarts.sh [runs (20)] [build dir (build)]
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
runs="${1:-20}"
concord="$(cd "${2:-$root/build}" && pwd)/concord"
total=40960
work="$(mktemp -d -t concord-restarts-XXXXXX)"
trap 'rm -rf "$work"' EXIT

one_run() {  # <run dir root> <max restarts>; prints "<launcher status> <final step> <eval status> <kill delay> <killed rank>"
  local dir="$1" restarts="$2"
  "$concord" launch -n 2 --max-restarts "$restarts" --grace-seconds 2 -- concord train \
    --config "$root/configs/ppo_cartpole.toml" --policy multi_learner --total-timesteps "$total" \
    --set train.checkpoint_interval_steps=2048 --set comm.timeout_seconds=20 --progress off \
    --run-root "$dir" > "$dir.log" 2>&1 &
  local launcher=$!
  # The random moment counts from when both ranks run (a loaded machine may start them late).
  local waited=0
  until [ "$(pgrep -c -P "$launcher")" -ge 2 ] || [ $waited -ge 200 ]; do
    sleep 0.05
    waited=$((waited + 1))
  done
  local delay_ms=$((500 + RANDOM % 3500))
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  local ranks=($(pgrep -P "$launcher"))
  local killed="-"
  if [ "${#ranks[@]}" -gt 0 ]; then
    local pick=$((RANDOM % ${#ranks[@]}))
    kill -KILL "${ranks[$pick]}" 2> /dev/null && killed="$pick"
  fi
  wait "$launcher"
  local status=$?
  local run_dir step eval_status
  local run_dirs
  run_dirs="$(ls -d "$dir"/*/ 2> /dev/null | wc -l)"
  run_dir="$(ls -d "$dir"/*/ 2> /dev/null | head -n 1)"
  [ "$run_dirs" = 1 ] || run_dir=""  # one launched run, one run directory
  step=0
  eval_status=1
  if [ -n "$run_dir" ]; then
    local evaluated
    evaluated="$("$concord" eval "$run_dir" --episodes 2 2>&1)"
    eval_status=$?
    step="$(sed -n 's/.* after \([0-9]*\) steps:.*/\1/p' <<< "$evaluated")"
  fi
  echo "$status ${step:-0} $eval_status ${delay_ms}ms rank-index-$killed $(grep -c 'restart [0-9]* of' "$dir.log")"
}

echo "date $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
finished=0
for i in $(seq 1 "$runs"); do
  mkdir -p "$work/run$i"
  read -r status step eval_status delay killed restarts <<< "$(one_run "$work/run$i" 3)"
  ok=0
  if [ "$status" = 0 ] && [ "$step" = "$total" ] && [ "$eval_status" = 0 ] && [ "$killed" != "rank-index--" ]; then
    ok=1
    finished=$((finished + 1))
  fi
  echo "run $i: killed $killed after $delay, $restarts restart(s); launcher exit $status, final step $step, eval exit $eval_status$([ $ok = 1 ] || echo '  <- FAILED')"
  [ $ok = 1 ] || tail -n 5 "$work/run$i.log"
done
mkdir -p "$work/baseline"
read -r status step eval_status delay killed restarts <<< "$(one_run "$work/baseline" 0)"
echo "baseline (no --max-restarts): killed $killed after $delay; launcher exit $status, final step $step"
echo "finished with $total steps and an eval-able checkpoint: $finished of $runs"
[ "$finished" = "$runs" ]
