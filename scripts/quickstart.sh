#!/usr/bin/env bash
# The main job on a built-in default: install dependencies, build, then run Concord's default job
# with live progress. Extra arguments go to `concord`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "$root"
if [ $# -eq 0 ]; then
  set -- rollout --env CartPole-v1 --num-envs 16 --steps 2000000 --threads 2
fi
exec "${CONCORD_BUILD_DIR:-$root/build}/concord" "$@"
