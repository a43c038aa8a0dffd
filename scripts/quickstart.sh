#!/usr/bin/env bash
# The main job on a built-in default: install dependencies, build, train PPO on CartPole-v1 with
# live progress (configs/ppo_cartpole.toml), then evaluate the trained policy. With arguments, runs
# `concord <arguments>` instead.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
# The main job needs the `concord` program alone; tests and benchmarks are built by scripts/test.sh.
"$root/scripts/build.sh" --target concord
cd "$root"
concord="${CONCORD_BUILD_DIR:-$root/build}/concord"
if [ $# -gt 0 ]; then
  exec "$concord" "$@"
fi
"$concord" train --config configs/ppo_cartpole.toml
latest_run="$(ls -td runs/CartPole-v1__train__* | head -n 1)"
"$concord" eval "$latest_run" --episodes 20
