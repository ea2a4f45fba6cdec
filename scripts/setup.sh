#!/usr/bin/env bash
# Installs what qdqtrain needs to run from Debian's packages (as root), with ONNX Runtime for
# node, and builds qdqtrain alone in Release: what the main job needs, and nothing for the
# tests (scripts/test.sh adds those). Idempotent: packages already present are not fetched
# again; the build is incremental.
# Usage: scripts/setup.sh [BUILD_DIR]   (default: build)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-$root/build}

packages=(
  build-essential cmake ninja-build pkg-config
  libeigen3-dev libopenblas0-openmp
  libhdf5-dev libdeflate-dev nlohmann-json3-dev zlib1g-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libopenmpi-dev openmpi-bin
)
# node and npm run ONNX Runtime for exported models (onnx/onnxruntime). A nodejs that ships its own npm
# (NodeSource's) conflicts with Debian's npm package, so both are asked for only when missing.
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
  packages+=(nodejs npm)
fi
"$root/scripts/install_packages.sh" setup.sh "${packages[@]}"

# ONNX Runtime for node, as pinned by onnx/onnxruntime/package-lock.json: the registry is reached here
# and never by the tests. --ignore-scripts because onnxruntime-node's install script downloads
# GPU binaries (and fails offline); the CPU library ships in the package itself. Skipped when
# node_modules already matches the lock file (npm writes node_modules/.package-lock.json).
onnx_dir=$root/onnx/onnxruntime
if [[ ! -f $onnx_dir/node_modules/.package-lock.json || $onnx_dir/package-lock.json -nt $onnx_dir/node_modules/.package-lock.json ]]; then
  echo "setup.sh: installing onnxruntime-node into $onnx_dir/node_modules"
  (cd "$onnx_dir" && npm ci --ignore-scripts --no-audit --no-fund)
fi
node -e "require('$onnx_dir/node_modules/onnxruntime-node')" ||
  { echo "setup.sh: onnxruntime-node does not load (see above)" >&2; exit 1; }

# The CUDA backend is built where a GPU answers (nvcc compiling it for every architecture is a
# minute of a 2-core machine's setup); QDQ_CUDA in the environment overrides (AUTO, ON, OFF),
# as scripts/test.sh does to compile it wherever nvcc is.
if [[ -z ${QDQ_CUDA:-} ]]; then
  if nvidia-smi -L > /dev/null 2>&1; then QDQ_CUDA=AUTO; else QDQ_CUDA=OFF; fi
  echo "setup.sh: QDQ_CUDA=$QDQ_CUDA (from nvidia-smi; set QDQ_CUDA to choose)"
fi
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DQDQ_CUDA="$QDQ_CUDA"
cmake --build "$build_dir" --target qdqtrain
