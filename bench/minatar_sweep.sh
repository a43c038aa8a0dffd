#!/usr/bin/env bash
# Issue 51's learning measurements on MinAtar: PPO with each game's shipped config
# (configs/ppo_minatar_<game>.toml) under each policy and seed, one run at a time, then a greedy
# and a sampled evaluation of each. Resumable: a finished cell is skipped, an interrupted one
# continues from its last checkpoint (`concord train --resume`), so the sweep can be stopped with
# SIGTERM (the run saves a checkpoint) and started again, across sessions if need be.
#
#   bash bench/minatar_sweep.sh run [OUT] [options]    train and evaluate every missing cell
#   bash bench/minatar_sweep.sh table [OUT] [options]  one line per finished cell
# Options (each a space-separated list in one argument):
#   --games "Breakout SpaceInvaders"   --policies "single async_learner"   --seeds "1 2 3"
#   --steps N   (a shorter run than the config's, to try the sweep out)
#   --config NAME   (train every game with configs/NAME.toml, its env.id replaced, instead of the
#                    game's own: one shared setting tried on every game)
# OUT defaults to runs/minatar_sweep. CONCORD names the binary (default build/concord): copy it
# aside for a sweep that spans rebuilds, so that every cell runs the same code.
#
# A cell is OUT/<game>/<policy>/seed<S>/, holding the run directory, train.out, and the two
# evaluations (eval_greedy.out, eval_sampled.out, 20 episodes each); `done` marks it finished.
# The table's columns: the last-100 training return (the final charts/episodic_return), the two
# evaluations, the wall time of training (sum of the metrics' wall_time steps, leaving out gaps
# over 120 s, where a run was stopped and resumed), and the wall time to the first update whose
# last-100 return reached the game's target (gymnax's published PPO; Seaquest: the MinAtar paper's
# DQN), or "-" where it never did.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
concord="${CONCORD:-$root/build/concord}"

usage() {
  sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

mode="${1:-}"
case "$mode" in run | table) shift ;; *) usage ;; esac
out="$root/runs/minatar_sweep"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then
  out="$1"
  shift
fi
games="Breakout SpaceInvaders"
policies="single sync_vector central_inference async_learner"
seeds="1 2 3"
steps=""
shared_config=""
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || { echo "minatar_sweep: $1 needs a value" >&2; exit 2; }
  case "$1" in
    --games) games="$2" ;;
    --policies) policies="$2" ;;
    --seeds) seeds="$2" ;;
    --steps) steps="$2" ;;
    --config) shared_config="$2" ;;
    *) echo "minatar_sweep: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done

config_name() {  # <game> -> the shipped config's name
  case "$1" in
    Asterix) echo ppo_minatar_asterix ;;
    Breakout) echo ppo_minatar_breakout ;;
    Freeway) echo ppo_minatar_freeway ;;
    Seaquest) echo ppo_minatar_seaquest ;;
    SpaceInvaders) echo ppo_minatar_space_invaders ;;
    *) echo "minatar_sweep: unknown game $1 (Asterix, Breakout, Freeway, Seaquest, SpaceInvaders)" >&2; exit 2 ;;
  esac
}

target() {  # <game> -> the issue's target for the last-100 return
  case "$1" in
    Asterix) echo 15 ;;
    Breakout) echo 28 ;;
    Freeway) echo 58 ;;
    Seaquest) echo 20 ;;
    SpaceInvaders) echo 131 ;;
  esac
}

run_dir_of() {  # <cell> -> its one run directory, or nothing
  find "$1" -mindepth 1 -maxdepth 1 -type d -name 'MinAtar_*' | head -n 1
}

run_cell() {  # <game> <policy> <seed>
  local game="$1" policy="$2" seed="$3"
  local cell="$out/$game/$policy/seed$seed"
  [ -f "$cell/done" ] && return 0
  mkdir -p "$cell"
  local run_dir
  run_dir="$(run_dir_of "$cell")"
  local extra=()
  # Two env threads, as on this 2-core machine; the other policies run their own threads.
  [ "$policy" = sync_vector ] && extra=(--threads 2)
  [ -n "$steps" ] && extra+=(--total-timesteps "$steps")
  local config
  config="$root/configs/$(config_name "$game").toml"
  if [ -n "$shared_config" ]; then
    config="$root/configs/$shared_config.toml"
    extra+=(--env "MinAtar/$game-v1")
  fi
  echo "minatar_sweep: $game $policy seed $seed ($(date -u +%H:%M:%S))" >&2
  if [ -n "$run_dir" ] && [ -f "$run_dir/checkpoint.ckpt" ]; then
    "$concord" train --resume "$run_dir" --progress plain >>"$cell/train.out" 2>&1
  else
    [ -n "$run_dir" ] && rm -rf "$run_dir"  # started but never checkpointed: start over
    "$concord" train --config "$config" --policy "$policy" \
      --seed "$seed" "${extra[@]}" --run-root "$cell" --progress plain >"$cell/train.out" 2>&1
    run_dir="$(run_dir_of "$cell")"
  fi
  "$concord" eval "$run_dir" --episodes 20 >"$cell/eval_greedy.out" 2>&1
  "$concord" eval "$run_dir" --episodes 20 --stochastic >"$cell/eval_sampled.out" 2>&1
  touch "$cell/done"
}

eval_mean() {  # <eval output> -> its mean return
  sed -n 's/.*: return \([-0-9.e+]*\) +-.*/\1/p' "$1" | tail -n 1
}

table_row() {  # <game> <policy> <seed>
  local game="$1" policy="$2" seed="$3"
  local cell="$out/$game/$policy/seed$seed"
  [ -f "$cell/done" ] || return 0
  local metrics
  metrics="$(run_dir_of "$cell")/metrics.csv"
  local timing
  timing="$(awk -F, -v goal="$(target "$game")" '
    NR == 1 { for (i = 1; i <= NF; ++i) { if ($i == "wall_time") w = i; if ($i == "charts/episodic_return") r = i; } next }
    {
      if (NR > 2 && $w - last <= 120) elapsed += $w - last;
      last = $w;
      if ($r != "") final = $r;
      if (reached == "" && $r != "" && $r + 0 >= goal) reached = sprintf("%.0f", elapsed);
    }
    END { printf "%.1f %.0f %s", final, elapsed, (reached == "" ? "-" : reached) }' "$metrics")"
  read -r last100 wall to_target <<<"$timing"
  printf '%-14s %-18s %4s %9s %8s %8s %7s %9s\n' "$game" "$policy" "$seed" "$last100" \
    "$(eval_mean "$cell/eval_greedy.out")" "$(eval_mean "$cell/eval_sampled.out")" "$wall" "$to_target"
}

if [ "$mode" = run ]; then
  [ -x "$concord" ] || { echo "minatar_sweep: no binary at $concord (build it, or set CONCORD)" >&2; exit 2; }
  for game in $games; do config_name "$game" >/dev/null; done
  if [ -n "$shared_config" ] && [ ! -f "$root/configs/$shared_config.toml" ]; then
    echo "minatar_sweep: no config configs/$shared_config.toml" >&2
    exit 2
  fi
  for seed in $seeds; do
    for game in $games; do
      for policy in $policies; do run_cell "$game" "$policy" "$seed"; done
    done
  done
  exit 0
fi

printf '%-14s %-18s %4s %9s %8s %8s %7s %9s\n' game policy seed last-100 greedy sampled wall_s to_target_s
for game in $games; do
  config_name "$game" >/dev/null
  for policy in $policies; do
    for seed in $seeds; do table_row "$game" "$policy" "$seed"; done
  done
done
