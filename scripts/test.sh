#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh) and runs the whole test suite through ctest.
# CUDA tests report "skipped: no CUDA device" where no GPU is attached.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-$root/build}

"$root/scripts/setup.sh" "$build_dir"
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)"
