#!/usr/bin/env bash
# Issue 18's stall figure: N runs in which one rank is SIGSTOPped (it neither dies nor closes its
# connections) at a random moment, 0.5 to 4 s after every rank started; the stopped process is
# never continued. A run counts when the launcher exits 0 with the full step count and a
# checkpoint `concord eval` accepts.
#   actor_processes: 1 learner + 2 actors, a random actor stopped; the learner drops it after half
#     of comm.timeout_seconds and trains on with the other; the launcher stops it after rank 0. A
#     stop before the process group exists (the rendezvous) fails the group: --max-restarts 2.
#   multi_learner: 2 ranks under --max-restarts 2, a random rank stopped; the collective times out
#     on the other rank after comm.timeout_seconds, the group is stopped (SIGKILL reaches a stopped
#     process) and restarts from the last checkpoint.
#   bash bench/stalls.sh [runs (20)] [actor_processes|multi_learner|both (both)] [build dir (build)]
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
runs="${1:-20}"
which="${2:-both}"
concord="$(cd "${3:-$root/build}" && pwd)/concord"
work="$(mktemp -d -t concord-stalls-XXXXXX)"
trap '[ -n "${CONCORD_KEEP_WORK:-}" ] || rm -rf "$work"' EXIT

one_run() {  # <run dir root> <policy>; prints "<launcher status> <final step> <eval status> <delay> <stopped rank> <restarts>"
  local dir="$1" policy="$2" ranks total extra
  if [ "$policy" = actor_processes ]; then
    ranks=3 total=30720 extra=(--max-restarts 2 --grace-seconds 2)
  else
    ranks=2 total=40960 extra=(--max-restarts 2 --grace-seconds 2)
  fi
  "$concord" launch -n "$ranks" "${extra[@]}" -- concord train --config "$root/configs/ppo_cartpole.toml" \
    --policy "$policy" --total-timesteps "$total" --set train.checkpoint_interval_steps=2048 \
    --set comm.timeout_seconds=8 --progress off --run-root "$dir" > "$dir.log" 2>&1 &
  local launcher=$!
  local waited=0
  until [ "$(pgrep -c -P "$launcher")" -ge "$ranks" ] || [ $waited -ge 200 ]; do
    sleep 0.05
    waited=$((waited + 1))
  done
  local delay_ms=$((500 + RANDOM % 3500))
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  local children=($(pgrep -P "$launcher"))
  local stopped="-"
  if [ "${#children[@]}" -ge "$ranks" ]; then
    # actor_processes: an actor (children 1..2 by pid order); multi_learner: either rank.
    local pick
    if [ "$policy" = actor_processes ]; then pick=$((1 + RANDOM % 2)); else pick=$((RANDOM % 2)); fi
    kill -STOP "${children[$pick]}" 2> /dev/null && stopped="$pick"
  fi
  wait "$launcher"
  local status=$?
  local run_dir step=0 eval_status=1
  [ "$(ls -d "$dir"/*/ 2> /dev/null | wc -l)" = 1 ] && run_dir="$(ls -d "$dir"/*/)" || run_dir=""
  if [ -n "$run_dir" ]; then
    local evaluated
    evaluated="$("$concord" eval "$run_dir" --episodes 2 2>&1)"
    eval_status=$?
    step="$(sed -n 's/.* after \([0-9]*\) steps:.*/\1/p' <<< "$evaluated")"
  fi
  echo "$status ${step:-0} $eval_status ${delay_ms}ms rank-index-$stopped $(grep -c 'restart [0-9]* of' "$dir.log") $total"
}

echo "date $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
all_ok=1
for policy in actor_processes multi_learner; do
  [ "$which" = both ] || [ "$which" = "$policy" ] || continue
  finished=0
  for i in $(seq 1 "$runs"); do
    mkdir -p "$work/$policy$i"
    read -r status step eval_status delay stopped restarts total <<< "$(one_run "$work/$policy$i" "$policy")"
    ok=0
    if [ "$status" = 0 ] && [ "$step" -ge "$total" ] && [ "$eval_status" = 0 ] && [ "$stopped" != "rank-index--" ]; then
      ok=1
      finished=$((finished + 1))
    fi
    echo "$policy run $i: stopped $stopped after $delay, $restarts restart(s); launcher exit $status," \
      "final step $step, eval exit $eval_status$([ $ok = 1 ] || echo '  <- FAILED')"
    [ $ok = 1 ] || grep -E "error|warn" "$work/$policy$i.log" | tail -n 12
  done
  echo "$policy: finished with the full step count and an eval-able checkpoint: $finished of $runs"
  [ "$finished" = "$runs" ] || all_ok=0
done
[ "$all_ok" = 1 ]
