#!/usr/bin/env bash
# Installs every system package Concord builds on, from Debian's apt.
# Idempotent: when everything is present it only checks and returns in well under a second.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libtorch-dev libgloo-dev
  # LibTorch's CPU matmuls go through libblas.so.3; Debian's reference BLAS makes PPO 2x slower.
  # The serial OpenBLAS takes over that alternative, single-threaded because Concord owns threads.
  libopenblas0-serial
  libcli11-dev libtomlplusplus-dev libspdlog-dev nlohmann-json3-dev
  libprotobuf-dev protobuf-compiler
  libboost-dev
  openmpi-bin libopenmpi-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  iproute2 procps
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
