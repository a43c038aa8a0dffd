#!/usr/bin/env bash
# ctest for --cleanrl in bench/ppo_speed and bench/dqn_speed, against fake_cleanrl.py: the
# baseline's rows (its solved step), the ratios, and one clear failure for a missing script or a
# failing interpreter.
#   check_baseline.sh PPO_SPEED DQN_SPEED   (the two programs)
set -u
ppo_speed=$1
dqn_speed=$2
here=$(cd "$(dirname "$0")" && pwd)
fake=$here/fake_cleanrl.py
failures=0
output=""
# run_case NAME WANTED_STATUS COMMAND...: WANTED_STATUS is a number or "nonzero".
run_case() {
  local wanted=$2
  name=$1
  shift 2
  output=$("$@" 2>&1)
  local status=$?
  if [[ $wanted == nonzero && $status -eq 0 || $wanted != nonzero && $status -ne $wanted ]]; then
    echo "FAIL $name: exit status $status, wanted $wanted"; echo "$output"; failures=$((failures + 1))
  fi
}
has() {  # has REGEX: a line of the last case's output matches
  if grep -Eq -- "$1" <<<"$output"; then echo "ok $name: /$1/"; return; fi
  echo "FAIL $name: no line matches /$1/"; echo "$output"; failures=$((failures + 1))
}
ppo=(timeout 120 "$ppo_speed" --seeds 1 --policies single --cleanrl-steps 2048 --skip-fast)
dqn=(timeout 120 "$dqn_speed" --seeds 1 --policies single --total-timesteps 2048)

run_case ppo 0 "${ppo[@]}" --cleanrl "$fake" --python python3
has '^cleanrl +ppo\.py +1 +2000 .* 1450 +500\.0 '
has '^cleanrl +single +vs ppo\.py: steps/s [0-9.]+x \(per seed [0-9.]+x\)'
run_case ppo_missing nonzero "${ppo[@]}" --cleanrl /nonexistent/ppo.py
has '^ppo_speed: --cleanrl /nonexistent/ppo\.py: no such file'
run_case ppo_failing nonzero "${ppo[@]}" --cleanrl "$fake" --python false
has '^ppo_speed: --cleanrl: .* exited with status 1'
run_case dqn 0 "${dqn[@]}" --cleanrl "$fake" --python python3
has '^dqn\.py +1 +2000 .* 500\.0 +- +[0-9]+\.[0-9] '
has '^CleanRL dqn\.py, this run +[0-9]+ '
run_case dqn_missing nonzero "${dqn[@]}" --cleanrl /nonexistent/dqn.py
has '^dqn_speed: --cleanrl /nonexistent/dqn\.py: no such file'
exit $((failures > 0))
