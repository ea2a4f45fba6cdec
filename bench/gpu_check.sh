#!/usr/bin/env bash
# The CUDA backend on a GPU machine, in one call of at most BUDGET seconds (default 540) on 16
# cores: build with nvcc for this GPU, qdqtrain selftest, our training steps against PyTorch's in
# the same run, the device's tests, the sanitizers and a profile where installed. Beside each
# step, what a healthy run prints. A step that would not end before the budget is skipped and
# says so, so that a call with a hard limit returns everything before it. Its output goes in
# docs/BENCHMARKS.md.
#
# Usage, from the repository's root on the GPU machine: bash bench/gpu_check.sh
# Environment: BUILD (default build-gpu), LOGS (default gpu-check-logs; both ignored by git),
# BUDGET (seconds). With OUT set (a folder the caller collects), the logs are packed there at
# the end as gpu-check-logs.tar.gz.
set -uo pipefail
build=${BUILD:-build-gpu}
logs=${LOGS:-gpu-check-logs}
budget=${BUDGET:-540}
mkdir -p "$logs"
say() { printf '\n== %s  [%d s]\n' "$*" "$SECONDS"; }

# within SECONDS_WANTED COMMAND...: the command under a timeout that ends it before the budget
# does, or a line saying it was skipped when fewer than 20 seconds would be left to it.
within() {
    local wanted=$1 left=$((budget - SECONDS))
    shift
    if ((left < 20)); then
        echo "skipped for the budget ($left s left): $*"
        return 124
    fi
    timeout $((wanted < left ? wanted : left)) "$@"
}

pack_logs() {
    [[ -n "${OUT:-}" && -d "${OUT:-}" ]] && tar -czf "$OUT/gpu-check-logs.tar.gz" --exclude='*.nsys-rep' "$logs"
}
trap pack_logs EXIT

say "GPU, driver and toolkit (the driver's CUDA version at least nvcc's)"
nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader
nvidia-smi | grep -o 'CUDA Version: [0-9.]*'
nvcc --version | tail -1
uptime
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')

say "build for sm_$arch (configure says 'CUDA backend: ON'; a missing package is named in its last lines)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DQDQ_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" \
    >"$logs/configure" 2>&1 || { tail -20 "$logs/configure"; exit 1; }
grep 'CUDA backend' "$logs/configure"
targets=(qdqtrain bench_train test_cuda test_op_table test_training_step test_device_run)
time within 300 cmake --build "$build" -j"$(nproc)" -t "${targets[@]}" >"$logs/build" 2>&1 \
    || { grep -m5 -A8 error "$logs/build"; tail -3 "$logs/build"; exit 1; }

say "selftest: every line 'ok', 'every check agrees', rc 0 (rc 1 with 'the GPU cannot be used' and the driver's error: a driver older than the toolkit)"
"$build/app/qdqtrain" --version | grep -i -E 'cuda|device'
within 120 "$build/app/qdqtrain" selftest; echo "selftest rc=$?"

say "steps at BERT-base, batch 32 x 128, ours then PyTorch's (median ms; H100 2026-11-26 before the changes since: FP32 149 ms against 71, bf16 117 against 72), each with its peak device memory"
within 240 "$build/bench/bench_train" --warmup 2 --steps 5 --only base_ 2>&1 | grep -E '^# device|^step_|peak device'
python3 -c 'import torch; print("# torch", torch.__version__, "cuda", torch.cuda.is_available())' 2>&1 | tail -1
for flag in "" --bf16 --tf32; do
    within 120 python3 bench/bench_torch.py --device cuda --no-gemm --warmup 2 --steps 5 --only base_train $flag 2>&1 \
        | grep -E '^step_|peak device'
done

say "device tests: every test passes; test_cuda skips one (it needs no device), test_op_table its CPU halves"
for t in test_cuda test_op_table; do
    within 180 "$build/tests/$t" 2>&1 | grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]|^\[  FAILED  \]' | sed "s/^/$t: /"
done
within 180 "$build/tests/test_training_step" --gtest_filter='TrainingStepOnDevice.*' 2>&1 \
    | grep -E '^\[  (PASSED|FAILED) +\] [0-9]|^\[  FAILED  \]' | sed 's/^/test_training_step: /'
within 240 "$build/tests/test_device_run" --gtest_filter='-*Pipeline*:*TwoRanks*' 2>&1 \
    | grep -E '^\[  (PASSED|FAILED) +\] [0-9]|^\[  FAILED  \]' | sed 's/^/test_device_run: /'

if command -v compute-sanitizer >/dev/null; then
    say "compute-sanitizer on the selftest: rc 0 for each tool"
    for tool in memcheck racecheck synccheck; do
        within 150 compute-sanitizer --tool "$tool" --error-exitcode 9 "$build/app/qdqtrain" selftest >"$logs/$tool" 2>&1
        echo "$tool rc=$?"
    done
fi

if command -v nsys >/dev/null; then
    say "profile of three FP32 base steps: cuBLAS's GEMMs on top, no memcpy beyond a few a step"
    within 180 nsys profile -o "$logs/base_train" --force-overwrite true --stats=true \
        "$build/bench/bench_train" --warmup 1 --steps 3 --only step_base_train >"$logs/nsys" 2>&1
    grep -A18 'cuda_gpu_kern_sum' "$logs/nsys" | cut -c1-160
    grep -A12 'cuda_api_sum' "$logs/nsys" | cut -c1-160
fi
say "done"
uptime
