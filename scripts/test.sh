#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh) and runs the whole test suite through ctest.
# CUDA tests report "skipped: no CUDA device" where no GPU is attached, and run again against the
# emulated device.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-$root/build}

"$root/scripts/setup.sh" "$build_dir"
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)"

# The CUDA backend's own paths once more, on the emulated device (its kernels on host threads,
# cuda/emulated/): tensors on Device::CUDA, the ops' dispatch and the self-test's checks run
# where no GPU is attached. Only what those tests need is built.
emulated=${build_dir}-emulated
cmake -S "$root" -B "$emulated" -G Ninja -DCMAKE_BUILD_TYPE=Release -DQDQ_CUDA=EMULATED
cmake --build "$emulated" --target test_cuda test_ops_nn test_selftest test_device_run
ctest --test-dir "$emulated" --output-on-failure -R '^(Cuda|OpsNnCuda|Selftest|DeviceRun)\.'

