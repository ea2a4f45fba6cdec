#!/usr/bin/env bash
# ONNX Runtime CPU latency, FP32 against QDQ exports (both targets), of a random BERT-base-shaped
# classifier at batch 32×128 and 1×128. Builds nothing: needs bench_onnx_export (ninja -C BUILD
# bench_onnx_export) and onnx/onnxruntime/node_modules (scripts/setup.sh).
#
# Usage: bench/bench_onnx.sh [BUILD_DIR]   (default: build)
# Environment: THREADS=2, ROUNDS=3, SHAPES=32x128,1x128, MODEL_DIR=... (default: a temporary
# directory, removed at exit; the three models take about 1.3 GB), EXPORT_ARGS=... (e.g.
# "--layers 4 --hidden 256 --heads 4 --intermediate 1024" for a small model).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:-build}
exporter=$build/bench/bench_onnx_export
if [[ ! -x $exporter ]]; then
    echo "bench_onnx.sh: $exporter not found; build it first (ninja -C $build bench_onnx_export)" >&2
    exit 1
fi
if [[ ! -d $here/../onnx/onnxruntime/node_modules/onnxruntime-node ]]; then
    echo "bench_onnx.sh: onnxruntime-node missing; run scripts/setup.sh" >&2
    exit 1
fi
if [[ -n "${MODEL_DIR:-}" ]]; then
    dir=$MODEL_DIR
else
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
fi
read -r -a export_args <<< "${EXPORT_ARGS:-}"
"$exporter" "$dir" "${export_args[@]}"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
node "$here/bench_onnx.js" "$dir" --threads "${THREADS:-2}" --rounds "${ROUNDS:-3}" --shapes "${SHAPES:-32x128,1x128}"
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
