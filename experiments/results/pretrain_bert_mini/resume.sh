#!/usr/bin/env bash
# Resumes the BERT-mini pretraining run in the background, from the repository root.
# A fresh checkout has no runs/: the newest checkpoint committed here (the run's newest at the
# last stop; older ones stay beside it) and the log are copied there first, unless runs/ already
# holds a newer checkpoint.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
run=$root/runs/pretrain_bert_mini
step_of() { basename "$1" .h5 | cut -d- -f2; }
# The highest step among checkpoint-<step>.h5 files in a folder, 0 when there are none.
newest_step() {
  local best=0 f
  for f in "$1"/checkpoint-*.h5; do
    [[ -e $f ]] && (( $(step_of "$f") > best )) && best=$(step_of "$f")
  done
  echo "$best"
}
committed_step=$(newest_step "$here")
committed=$here/checkpoint-$committed_step.h5
mkdir -p "$run"
if (( committed_step > $(newest_step "$run") )); then
  cp "$committed" "$here/metrics.jsonl" "$run/"
  echo "resume.sh: copied $(basename "$committed") and metrics.jsonl into runs/pretrain_bert_mini"
fi
cd "$root"
nohup build/app/qdqtrain train experiments/configs/pretrain/bert_mini.json >> runs/pretrain_bert_mini.log 2>&1 &
echo "resume.sh: training in the background (pid $!); log: runs/pretrain_bert_mini.log"
