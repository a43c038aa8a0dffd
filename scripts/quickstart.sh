#!/usr/bin/env bash
# The main job on a built-in default: install dependencies, build, train PPO on CartPole-v1 with
# live progress (configs/ppo_cartpole.toml), then evaluate the trained policy. With arguments, runs
# `concord <arguments>` instead.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
# The main job needs the `concord` program alone; tests and benchmarks are built by scripts/test.sh.
build_dir="${CONCORD_BUILD_DIR:-$root/build}"
if [ ! -x "$build_dir/concord" ]; then
  echo "quickstart: building $build_dir/concord, the one program the main job needs: the first build takes"
  echo "quickstart: 5 to 10 minutes on 2 cores (less with more); later runs rebuild only what changed"
fi
CONCORD_BUILD_PROGRESS=line "$root/scripts/build.sh" --target concord
cd "$root"
concord="$build_dir/concord"
if [ $# -gt 0 ]; then
  exec "$concord" "$@"
fi
"$concord" train --config ppo_cartpole
latest_run="$(ls -td runs/CartPole-v1__train__* | head -n 1)"
"$concord" eval "$latest_run" --episodes 20
