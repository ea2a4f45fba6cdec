#!/usr/bin/env bash
# Writes the shipped BERT-mini as a Hugging Face directory (experiments/pretrained/bert_mini/hf:
# config.json, model.safetensors, vocab.txt, tokenizer_config.json) from its model.h5, the one
# copy of its weights in the repository. The vocabulary comes from the shared data folder.
# Skipped when the directory already holds the weights.
# Usage: scripts/write_hf_model.sh [BUILD_DIR]   (default: build; qdqtrain must be built)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-$root/build}
model=$root/experiments/pretrained/bert_mini

[[ -f $model/hf/model.safetensors && $model/hf/model.safetensors -nt $model/model.h5 ]] && exit 0
"$build_dir/app/qdqtrain" save-pretrained "$root/experiments/configs/pretrain/bert_mini.json" \
  --checkpoint "$model/model.h5" --out "$model/hf" > /dev/null
echo "write_hf_model.sh: wrote $model/hf"
