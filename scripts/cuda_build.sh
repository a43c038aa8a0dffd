#!/usr/bin/env bash
# Builds Concord against the CUDA LibTorch of a pip-installed PyTorch (LibTorch 2.x), for a
# machine with an NVIDIA GPU. The CPU build (scripts/setup.sh, Debian's LibTorch 1.13) is the
# default; this one checks that the same code builds and runs on CUDA, with NCCL between ranks.
#
#   scripts/cuda_build.sh [BUILD_DIR] [TARGET...]     (default: build-cuda, every target)
#
# Environment: PYTHON (default python3) names the interpreter whose torch is used;
# CONCORD_EXTRA_PREFIX adds a prefix (e.g. an unpacked toml++ or gloo-headers package) to
# CMake's search path and its include/ to the compiler's; PROTOC names a protoc binary;
# CONCORD_BUILD_BENCH=ON adds the benchmark programs (bench/device_suite.sh builds some).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build-cuda}"
shift || true
python="${PYTHON:-python3}"

torch_root="$("$python" -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
echo "cuda_build: torch $("$python" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)') at $torch_root"

# PyTorch's wheel ships its own copies of protobuf's and fmt's headers in its include/ folder,
# which CMake puts ahead of the system's: Concord's TensorBoard messages (compiled by the system's
# protoc) and spdlog (built on the system's fmt) need the system's. So CMake finds LibTorch in a
# prefix whose include/ holds everything else of the wheel's and whose lib/ links to the wheel's.
# The programs' run path names the wheel's real lib/ folder instead: libtorch_cuda.so finds the
# CUDA and NCCL libraries of the nvidia-* wheels by paths relative to where it was loaded from.
prefix="$build/torch-prefix"
mkdir -p "$prefix/include"
for entry in "$torch_root"/include/*; do
  name="$(basename "$entry")"
  case "$name" in
    google | fmt) ;;
    *) ln -sfn "$entry" "$prefix/include/$name" ;;
  esac
done
rm -rf "$prefix/share" && cp -r "$torch_root/share" "$prefix/share"
ln -sfn "$torch_root/lib" "$prefix/lib"

extra_prefix="${CONCORD_EXTRA_PREFIX:-}"
cmake_prefix="$prefix"
cxx_flags=""
run_path="$torch_root/lib"
if [ -n "$extra_prefix" ]; then
  cmake_prefix="$prefix;$extra_prefix"
  cxx_flags="-isystem $extra_prefix/include"
  run_path="$run_path:$extra_prefix/lib/x86_64-linux-gnu"
  export LD_LIBRARY_PATH="$extra_prefix/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
fi
protoc_flag=()
if [ -n "${PROTOC:-}" ]; then protoc_flag=(-DProtobuf_PROTOC_EXECUTABLE="$PROTOC"); fi
cuda_root="${CUDA_HOME:-/usr/local/cuda}"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$cmake_prefix" -DCMAKE_CXX_FLAGS="$cxx_flags" \
  -DCMAKE_SKIP_BUILD_RPATH=ON -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath,$run_path" \
  -DCUDAToolkit_ROOT="$cuda_root" -DCMAKE_CUDA_COMPILER="$cuda_root/bin/nvcc" \
  -DCONCORD_BUILD_PYTHON=OFF -DCONCORD_BUILD_BENCH="${CONCORD_BUILD_BENCH:-OFF}" "${protoc_flag[@]}"
cmake --build "$build" -- -k 0 "$@"
# The programs must bind std::filesystem in libstdc++, not in libtorch.so's copy (CMakeLists.txt).
if [ -f "$build/concord" ] && ! readelf -d "$build/concord" | awk '/NEEDED/ {print; exit}' | grep -q 'libstdc++'; then
  echo "cuda_build: concord does not name libstdc++ first among its libraries: std::filesystem may bind to libtorch's copy" >&2
  exit 1
fi
