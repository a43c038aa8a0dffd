#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: install dependencies, build, run every test.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "${CONCORD_BUILD_DIR:-$root/build}"
ctest --output-on-failure --timeout 600 -j "$(nproc)" "$@"
