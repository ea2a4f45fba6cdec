#!/usr/bin/env bash
# Sets everything up: what the main job needs (scripts/setup.sh), then the tests' own packages
# (GoogleTest, h5dump, PyTorch, ONNX and regex for the reference fixtures, qemu's user-mode x86
# emulator for ONNX Runtime on an AVX2-only CPU, Boost.Context for the fibers that run CUDA
# kernels on the host), every target, and the shipped model's Hugging Face directory; then runs
# the whole test suite through ctest.
# CUDA tests report "skipped: no CUDA device" where no GPU is attached, and run again against the
# emulated device.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-$root/build}

# The CUDA backend compiles wherever nvcc is (its tests then skip or run on a GPU), GPU or not.
QDQ_CUDA=AUTO "$root/scripts/setup.sh" "$build_dir"
"$root/scripts/install_packages.sh" test.sh libgtest-dev hdf5-tools python3 python3-numpy python3-torch python3-onnx python3-regex \
  qemu-user libboost-context-dev
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DQDQ_CUDA=AUTO
cmake --build "$build_dir"
"$root/scripts/write_hf_model.sh" "$build_dir"
ctest --test-dir "$build_dir" --output-on-failure --no-tests=error -j "$(nproc)"

# The CUDA backend's own paths once more, on the emulated device (its kernels on host threads,
# cuda/emulated/): tensors on Device::CUDA, the ops' dispatch and the self-test's checks run
# where no GPU is attached, at this CPU's level and each lower one. Only what those tests need
# is built.
emulated=${build_dir}-emulated
cmake -S "$root" -B "$emulated" -G Ninja -DCMAKE_BUILD_TYPE=Release -DQDQ_CUDA=EMULATED
cmake --build "$emulated" --target test_cuda test_op_table test_selftest test_device_run test_training_step
ctest --test-dir "$emulated" --output-on-failure --no-tests=error -j "$(nproc)" \
  -R '^(Cuda|OpTable(/OnDevice)?|Selftest|DeviceRun|TrainingStepOnDevice)\.|^cpu_[a-z0-9_]+\.test_(cuda|op_table|selftest)$'
