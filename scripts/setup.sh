#!/usr/bin/env bash
# Installs every dependency from Debian's packages (as root) and builds qdqtrain in Release.
# Idempotent: packages already present are not fetched again; the build is incremental.
# Usage: scripts/setup.sh [BUILD_DIR]   (default: build)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-$root/build}

packages=(
  build-essential cmake ninja-build pkg-config git
  libeigen3-dev libopenblas0-openmp
  libhdf5-dev hdf5-tools nlohmann-json3-dev zlib1g-dev
  libgtest-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libopenmpi-dev openmpi-bin
  python3 python3-numpy python3-torch python3-onnx
)

# node and npm run ONNX Runtime for exported models (onnx/onnxruntime). A nodejs that ships its own npm
# (NodeSource's) conflicts with Debian's npm package, so both are asked for only when missing.
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup.sh: missing packages (${missing[*]}); run as root to install them" >&2
    exit 1
  fi
  echo "setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

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

cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build_dir"
