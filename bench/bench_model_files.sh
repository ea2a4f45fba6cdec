#!/usr/bin/env bash
# A model's start and its files, ours against PyTorch's, alternately (bench/bench_model_files.cpp
# and .py): building BERT with its initial weights, writing it (model.h5 compressed, as a stage
# does; beside it HDF5's own filters on one thread; torch.save), reading it back, and a command's
# start: the model built and the file loaded over it.
# Usage: bench/bench_model_files.sh [BUILD_DIR]   (default: build; builds nothing)
# Environment: MODEL (base or large, default base), ROUNDS (default 2), REPS (default 3),
# THREADS (default: every core), PYTHON (default: a python3 with torch).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:-$here/../build}
model=${MODEL:-base}
threads=${THREADS:-$(nproc)}
python=${PYTHON:-python3}
"$python" -c 'import torch' 2> /dev/null || python=/usr/bin/python3

echo "# $(nproc --all) cores, $threads threads, flags: $(grep -o -w -E 'amx_tile|avx512_bf16|avx512f|avx2' /proc/cpuinfo | sort -u | tr '\n' ' '); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "${ROUNDS:-2}"); do
  echo "# round $round"
  OMP_NUM_THREADS=$threads "$build/bench/bench_model_files" --model "$model" --reps "${REPS:-3}"
  "$python" "$here/bench_model_files.py" --model "$model" --reps "${REPS:-3}" --threads "$threads"
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
