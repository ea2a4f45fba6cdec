#!/usr/bin/env bash
# Times reading and featurizing training sets of the official full size (SQuAD v1.1's
# train-v1.1.json, GLUE's MNLI train.tsv) as the paper configs' runs do, on files of the same size
# and structure made from the shared data's text (bench/make_full_size_data.py).
# Usage: bench/bench_readers.sh [BUILD_DIR]   (default: build; builds nothing)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-$root/build}
data=${QDQ_DATA_DIR:-$root/../shared/data}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 "$here/make_full_size_data.py" "$data" "$work"
model='{"vocab_size": 30522, "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 512}'
cat > "$work/squad.json" <<JSON
{"model": {"config": $model},
 "data": {"task": "squad", "data_dir": "$work", "train_files": "train-v1.1.json", "eval_files": "train-v1.1.json",
          "vocab": "$data/vocab/bert-base-uncased-vocab.txt", "max_seq_length": 384, "doc_stride": 128},
 "training": {"output_dir": "$work/run"}}
JSON
cat > "$work/mnli.json" <<JSON
{"model": {"config": $model},
 "data": {"task": "classification", "dataset": "nli", "data_dir": "$work", "train_files": "train.tsv",
          "eval_files": "train.tsv", "vocab": "$data/vocab/bert-base-uncased-vocab.txt", "max_seq_length": 256},
 "training": {"output_dir": "$work/run"}}
JSON
echo "# $(nproc --all) cores, OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset}, flags: $(grep -o -E 'amx_tile|avx512_bf16|avx512f|avx2' /proc/cpuinfo | sort -u | tr '\n' ' '); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$build/bench/bench_readers" "$work/squad.json"
"$build/bench/bench_readers" "$work/mnli.json"
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
