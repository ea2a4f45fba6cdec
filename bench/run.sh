#!/usr/bin/env bash
# Runs the C++ benchmarks (bench_gemm, bench_train) and their PyTorch twin (bench_torch.py)
# alternately, ROUNDS times, and prints one comparison table. Builds nothing.
#
# Usage: bench/run.sh [BUILD_DIR]          (default: build)
# Environment:
#   ROUNDS=2          C++/PyTorch alternations; each side's figure is its best per-run median
#   THREADS=2         threads for both sides (OpenMP and the BLAS)
#   PYTHON=...        a Python with torch (default: the first of python3, /usr/bin/python3
#                     that imports torch)
#   INFO_DEFAULT=1    also run PyTorch once with OpenBLAS's own kernel choice (0 to skip)
#   RAW_DIR=...       keep every run's own output in this directory (default: discarded)
#   GEMM_ARGS=...     extra arguments for both GEMM benchmarks, e.g. "--reps 5"
#   TRAIN_ARGS=...    extra arguments for both training benchmarks, e.g. "--steps 3 --warmup 1"
#
# The machine is shared and noisy: interleaving the two sides exposes both to the same
# contention, and noise only ever slows a run down, so the lower of the medians is kept.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:-build}
rounds=${ROUNDS:-2}
threads=${THREADS:-2}
info_default=${INFO_DEFAULT:-1}
read -r -a gemm_args <<< "--threads $threads ${GEMM_ARGS:-}"
read -r -a train_args <<< "--threads $threads ${TRAIN_ARGS:-}"

for exe in bench_gemm bench_train; do
    if [[ ! -x "$build/bench/$exe" ]]; then
        echo "run.sh: $build/bench/$exe not found; build it first (ninja -C $build $exe)" >&2
        exit 1
    fi
done

if [[ -z "${PYTHON:-}" ]]; then
    for candidate in python3 /usr/bin/python3; do
        if command -v "$candidate" > /dev/null && "$candidate" -c "import torch" 2> /dev/null; then
            PYTHON=$candidate
            break
        fi
    done
fi
if [[ -z "${PYTHON:-}" ]]; then
    echo "run.sh: no Python with torch found; set PYTHON" >&2
    exit 1
fi

# PyTorch gets a proper OpenBLAS kernel, as our gemm() does: Debian's OpenBLAS may not
# recognise a recent Xeon and fall back to a generic SSE3 kernel. A choice already made in
# the environment is never overridden.
torch_env=()
if [[ -n "${OPENBLAS_CORETYPE+set}" ]]; then
    coretype_note="OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE, from the environment"
    info_default=0
elif grep -qw avx512f /proc/cpuinfo; then
    torch_env=(OPENBLAS_CORETYPE=SkylakeX)
    coretype_note="OPENBLAS_CORETYPE=SkylakeX, set by run.sh (the CPU has avx512f)"
else
    coretype_note="unset: OpenBLAS's own detection (the CPU lacks avx512f)"
fi

if [[ -n "${RAW_DIR:-}" ]]; then
    out=$RAW_DIR
    mkdir -p "$out"
    rm -f "$out"/{ours,torch,default}.{gemm,train,gemm_bf16,train_bf16}.*
else
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
fi

load() { cut -d' ' -f1-3 /proc/loadavg; }

run_torch() {  # run_torch FILE ARGS...: PyTorch with the chosen core type
    local file=$1
    shift
    env "${torch_env[@]}" "$PYTHON" "$here/bench_torch.py" "$@" > "$file"
}

echo "# load average at start: $(load)"
for ((r = 1; r <= rounds; r++)); do
    echo "# round $r/$rounds: C++ gemm, PyTorch gemm, C++ train, PyTorch train (load $(load))"
    "$build/bench/bench_gemm" "${gemm_args[@]}" > "$out/ours.gemm.$r"
    run_torch "$out/torch.gemm.$r" --no-train "${gemm_args[@]}"
    "$build/bench/bench_train" "${train_args[@]}" > "$out/ours.train.$r"
    run_torch "$out/torch.train.$r" --no-gemm "${train_args[@]}"
    # PyTorch with bf16 autocast, in processes of their own: where its oneDNN dies on AMX, only
    # these rows are lost.
    run_torch "$out/torch.gemm_bf16.$r" --bf16 --no-train "${gemm_args[@]}" || echo "# PyTorch bf16 GEMMs failed (exit $?)"
    run_torch "$out/torch.train_bf16.$r" --bf16 --no-gemm "${train_args[@]}" || echo "# PyTorch bf16 steps failed (exit $?)"
done
if [[ "$info_default" == 1 ]]; then
    echo "# information: PyTorch with OPENBLAS_CORETYPE unset (load $(load))"
    env -u OPENBLAS_CORETYPE "$PYTHON" "$here/bench_torch.py" --no-train "${gemm_args[@]}" \
        > "$out/default.gemm.1"
    env -u OPENBLAS_CORETYPE "$PYTHON" "$here/bench_torch.py" --no-gemm "${train_args[@]}" \
        > "$out/default.train.1"
fi
echo "# load average at end: $(load)"
echo

echo "ours:    $(grep -m1 '^# gemm:' "$out/ours.gemm.1" | cut -c9-)"
echo "PyTorch: $(grep -m1 '^# gemm:' "$out/torch.gemm.1" | cut -c9-)"
echo "PyTorch core type: $coretype_note"
grep -h 'first loss' "$out"/ours.train.1 | sed 's/^# /ours:    /'
grep -h 'first loss' "$out"/torch.train.1 | sed 's/^# /PyTorch: /'
echo

# Result lines are "name reps median_ms min_ms gflops"; keep each side's lowest median and
# the GFLOP/s that goes with it. A row of ours named <workload>_bf16 is compared with PyTorch's
# <workload>_bf16 (autocast) where that ran, and with its FP32 <workload>, a user's other
# choice. mlm_* rows also get tokens/s (4,096 a step).
awk -v info="$info_default" '
    FNR == 1 { k = split(FILENAME, parts, "/"); side = parts[k]; sub(/\..*/, "", side) }
    /^#/ || $1 == "name" || NF != 5 { next }
    {
        key = side SUBSEP $1
        if (!(key in best) || $3 < best[key]) { best[key] = $3; rate[key] = $5 }
        if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 }
    }
    END {
        header = sprintf("%-22s %11s %11s %8s %10s %10s %13s %10s", "workload", "ours_ms", "torch_ms",
                         "ratio", "ours_GF/s", "torch_GF/s", "torch_bf16_ms", "ratio_bf16")
        if (info) header = header sprintf(" %15s", "torch_default_ms")
        print header
        for (i = 1; i <= n; ++i) {
            w = order[i]
            if (!(("ours" SUBSEP w) in best)) continue  # rows of PyTorch alone (its bf16 ones) sit beside ours
            fp32 = w; sub(/_bf16$/, "", fp32)
            o = "ours" SUBSEP w; t = "torch" SUBSEP fp32; d = "default" SUBSEP fp32
            tb = (w ~ /_bf16$/) ? "torch" SUBSEP w : ""
            ratio = (t in best) ? sprintf("%8.2f", best[t] / best[o]) : sprintf("%8s", "-")
            ratio_bf16 = (tb in best) ? sprintf("%10.2f", best[tb] / best[o]) : sprintf("%10s", "-")
            line = sprintf("%-22s %11.1f %11s %s %10s %10s %13s %s", w, best[o],
                           (t in best) ? sprintf("%.1f", best[t]) : "-", ratio,
                           (o in rate) ? rate[o] : "-", (t in rate) ? rate[t] : "-",
                           (tb in best) ? sprintf("%.1f", best[tb]) : "-", ratio_bf16)
            if (info) line = line sprintf(" %15s", (d in best) ? sprintf("%.1f", best[d]) : "-")
            print line
        }
        for (i = 1; i <= n; ++i) {
            w = order[i]; fp32 = w; sub(/_bf16$/, "", fp32)
            if (w !~ /^mlm_/ || !(("ours" SUBSEP w) in best)) continue
            o = "ours" SUBSEP w; t = "torch" SUBSEP fp32; tb = "torch" SUBSEP w
            printf("%s tokens/s: ours %.0f, PyTorch FP32 %s", w, 4096000 / best[o],
                   (t in best) ? sprintf("%.0f", 4096000 / best[t]) : "-")
            if (w ~ /_bf16$/) printf(", PyTorch bf16 %s", (tb in best) ? sprintf("%.0f", 4096000 / best[tb]) : "-")
            printf("\n")
        }
    }' "$out"/*.*.*
echo
echo "ratio = PyTorch FP32 time / ours (> 1: we are faster); ratio_bf16 = PyTorch bf16 (autocast) time / ours;"
echo "times are the best of $rounds per-run medians."
