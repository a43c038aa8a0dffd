#!/usr/bin/env bash
# ctest for bench/minatar_sweep.sh at a tiny size: one update of Breakout's shipped setting under
# `single` and `sync_vector` (the same agent to the bit, so their rows match), a cell resumed
# after its marker is removed, a failed run left unmarked, and one clear line for bad input.
#   check_minatar_sweep.sh CONCORD WORK_DIR
set -u
concord=$1
work=$2
sweep="$(cd "$(dirname "$0")/.." && pwd)/minatar_sweep.sh"
rm -rf "$work"
mkdir -p "$work"
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
cells=(--games Breakout --policies "single sync_vector" --seeds 1 --steps 8192)

CONCORD=$concord timeout 300 bash "$sweep" run "$work/out" "${cells[@]}" || fail "sweep run exited $?"
table=$(bash "$sweep" table "$work/out" "${cells[@]}")
echo "$table"
rows=$(grep -c '^Breakout ' <<<"$table")
[ "$rows" -eq 2 ] || fail "table has $rows Breakout rows, wanted 2"
single=$(awk '$2 == "single" { print $4, $5, $6 }' <<<"$table")
threaded=$(awk '$2 == "sync_vector" { print $4, $5, $6 }' <<<"$table")
[ -n "$single" ] && [ "$single" = "$threaded" ] || fail "single ($single) and sync_vector ($threaded) differ"

# A cell whose marker is gone is finished again from its checkpoint, not started over.
cell="$work/out/Breakout/single/seed1"
rm -f "$cell/done" "$cell/eval_greedy.out"
CONCORD=$concord timeout 300 bash "$sweep" run "$work/out" "${cells[@]}" || fail "resumed sweep exited $?"
[ -f "$cell/done" ] && [ -s "$cell/eval_greedy.out" ] || fail "the resumed cell is not finished"
[ "$(find "$cell" -mindepth 1 -maxdepth 1 -type d | wc -l)" -eq 1 ] || fail "the resumed cell holds another run"

# A run that fails stops the sweep and leaves its cell unmarked.
CONCORD=/bin/false bash "$sweep" run "$work/failing" --games Breakout --policies single --seeds 1 2>/dev/null &&
  fail "a failing run did not stop the sweep"
[ -f "$work/failing/Breakout/single/seed1/done" ] && fail "a failed cell is marked done"

# Bad input: exit 2 and one line naming the problem.
for bad in "--games Pong" "--seeds" "--colour red" "--config nowhere"; do
  # shellcheck disable=SC2086
  message=$(CONCORD=$concord bash "$sweep" run "$work/bad" $bad 2>&1)
  status=$?
  [ "$status" -eq 2 ] || fail "'$bad' exited $status, wanted 2"
  [ "$(wc -l <<<"$message")" -eq 1 ] && grep -q '^minatar_sweep: ' <<<"$message" ||
    fail "'$bad' printed: $message"
done

[ "$failures" -eq 0 ] && echo "minatar_sweep: all checks passed"
exit $((failures > 0))
