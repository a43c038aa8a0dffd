#!/usr/bin/env bash
# recurrent_speed: recurrent PPO's steps/s at CartPole scale (configs/ppo_lstm_cartpole_novel.toml:
# 8 envs x 32 steps, 20 epochs, an LSTM of 64 cells then a 64-wide layer for actor and critic),
# beside the same agent without memory (the 64-wide layer alone) and, with --pytorch PATH, beside a PyTorch implementation of
# the same agent run in the same loop (bench/README.md: it lives outside the repository). Each
# repeat runs the three one after another, so that they share the machine's load.
#
#   bench/recurrent_speed.sh [--steps N] [--pytorch-steps N] [--repeats N] [--pytorch PATH] [--python PY]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
steps=20480
pytorch_steps=2560
repeats=2
pytorch=""
python=python3
concord="${CONCORD_BUILD_DIR:-$root/build}/concord"
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps="$2"; shift 2 ;;
    --pytorch-steps) pytorch_steps="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --pytorch) pytorch="$2"; shift 2 ;;
    --python) python="$2"; shift 2 ;;
    *) echo "recurrent_speed: unknown argument '$1' (known: --steps, --pytorch-steps, --repeats, --pytorch, --python)" >&2; exit 2 ;;
  esac
done
[ -x "$concord" ] || { echo "recurrent_speed: $concord is missing; run scripts/build.sh" >&2; exit 2; }
runs="$(mktemp -d)"
trap 'rm -rf "$runs"' EXIT
# Steps/s of one `concord train` (the wall time of its summary, start-up excluded).
concord_sps() {
  "$concord" train --config "$root/configs/ppo_lstm_cartpole_novel.toml" --total-timesteps "$steps" --seed 1 \
    --run-root "$runs" --set run.progress=off "$@" 2>&1 |
    awk -v steps="$steps" '/^wall time/ { printf "%.0f", steps / $3 }'
}
echo "recurrent_speed: $steps steps a Concord run, $pytorch_steps a PyTorch run, load $(cut -d' ' -f1 /proc/loadavg)"
printf '%7s  %18s  %18s  %18s  %8s\n' "repeat" "concord lstm" "concord no memory" "pytorch lstm" "ratio"
for repeat in $(seq 1 "$repeats"); do
  lstm="$(concord_sps)"
  feed_forward="$(concord_sps --set 'algo.recurrent=""' --set algo.recurrent_size=128 --set 'algo.head_hidden_sizes=[]' \
    --set 'algo.hidden_sizes=[64]')"
  torch_sps="-"
  ratio="-"
  if [ -n "$pytorch" ]; then
    torch_sps="$("$python" "$pytorch" --total-timesteps "$pytorch_steps" | awk '{ print $NF }')"
    ratio="$(awk -v a="$lstm" -v b="$torch_sps" 'BEGIN { printf "%.1fx", a / b }')"
  fi
  printf '%7s  %18s  %18s  %18s  %8s\n' "$repeat" "$lstm" "$feed_forward" "$torch_sps" "$ratio"
done
echo "steps/s; ratio: concord lstm / pytorch lstm (target >= 8x)"
