#!/usr/bin/env python3
"""Trims the committed pipeline records, experiments/results/<sweep>/runs/run-NNN/results.json,
of what no table or report reads: each activation quantizer's calibration histogram,
calibration.quantizers[i].histogram (512 bar counts, its bin width and max), about three
quarters of each file. It also writes each absolute path in a record (the config's data_dir,
vocab, train_files, eval_files and model.init, which a run resolves against the machine's
folders) relative to the repository root, "../shared/data/imdb/imdb_train.jsonl.gz" say: a
committed record then names no folder of the machine it ran on. Everything else is kept as
written, byte for byte.

Why the histograms can go:
- The only reader of committed records is the sweep report (`qdqtrain sweep SWEEP.json
  [--results]`, sweeps/sweep_report.cpp), through results.json's strict reader
  (pipeline_results_from_json, results/pipeline_results.cpp). From each quantizer it takes the
  name, a weight's SQNR, and an activation's ranges by method (max and percentile-99.99 for the
  outlier ratio, the method QAT started from for the SQNR); never the histogram.
- The strict reader treats an activation's "histogram" as optional (activation_from_json in
  results/calibration_result.cpp: absent for a quantizer calibrated without one), so a trimmed
  record reads back, and writes back, as the same PipelineResults less the histograms.
- The histograms' one reader, the calibration report (report/calibration_report.cpp: plots of each
  histogram with the methods' ranges), runs inside `qdqtrain calibrate` on the result it has
  just computed, in the run's own directory (calibrate/calibration.json keeps them); nothing
  renders a report from a results.json.

Why the paths may change: nothing reads a record's paths back. The strict reader parses the
config without resolving or opening a file, and the sweep report reads training.seed and
training.bf16 from it. Relative to the repository root is how the configs name them: a path in
"model" is relative to the config's folder under experiments/configs, and the data directory
defaults to ../shared/data beside the source tree (data/data_dir.h). Run the script in the
checkout the sweep ran in, as the sweep's record lies there.

What is kept, and why:
- config: required by the reader; the sweep report reads training.seed and training.bf16, and
  it is the record of how the run was made.
- each quantizer's name, kind, a weight's amax_max/amax_min/clipped_fraction/sqnr_db, and an
  activation's "methods" (amax, clipped_fraction, sqnr_db by method): the reader requires every
  field of an entry that is present; the sweep report's quantizer table reads them; and
  experiments/README.md quotes the ranges by method (MNLI's FFN outputs: MSE 270-390, entropy
  25-54, percentile 99.9 14-85, SQNR at entropy's ranges).
- calibration.quantizers itself, whole: its length is the number of quantizers, against which
  qat_takes_float_set (stages/accuracy_budget.cpp) tells a float set from the FP32 model.
- accuracy_budget.float_quantizers (required; the table counts it), summary, costs, metrics,
  checkpoints' names: read, or small.
- The histograms experiments/README.md quotes, KEEP_HISTOGRAMS below: MNLI's FFN outputs of
  layers 0-2 (their values below 2 and beyond 10, in separate clusters).

The file is written back as the project writes JSON (json/json_file.cpp: dump(2) and a newline),
each number as the file spelt it; a file that would not read back in that form byte for byte is
left alone and reported. Re-running it changes nothing. A sweep copies each run's whole
results.json into its results_dir/runs/ as the run finishes (record_run, sweeps/sweep.cpp): run this
before committing new records.

usage: trim_results.py [--dry-run] [FILE...]   (default: every results_dir/runs/*/results.json)
"""
import glob
import json
import os
import re
import sys

REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# By sweep (the results_dir's name): the quantizers whose histograms a document quotes.
KEEP_HISTOGRAMS = {
    "mnli": re.compile(r"^bert\.encoder\.layer\.[0-2]\.output\.add_local_input_quantizer$"),
}


class Number(str):
    """A JSON number kept as the file spelt it, so that writing it back changes no digit."""


def parse(text):
    return json.loads(text, parse_float=Number, parse_int=Number)


def dump(value, indent=0):
    """nlohmann::json's dump(2): two spaces a level, ": " after a key, empty containers inline."""
    pad, inner = " " * indent, " " * (indent + 2)
    if isinstance(value, Number):
        return str(value)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [inner + json.dumps(k, ensure_ascii=False) + ": " + dump(v, indent + 2) for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(inner + dump(v, indent + 2) for v in value) + "\n" + pad + "]"
    return json.dumps(value, ensure_ascii=False)  # strings, true, false, null


def sweep_of(path):
    """results_dir's name for results_dir/runs/run-NNN/results.json."""
    parts = os.path.normpath(os.path.abspath(path)).split(os.sep)
    return parts[-4] if len(parts) >= 4 and parts[-3] == "runs" else ""


def trim(results, sweep):
    """Drops the unread fields from a parsed results.json; returns how many histograms went."""
    keep = KEEP_HISTOGRAMS.get(sweep)
    dropped = 0
    for q in results["calibration"]["quantizers"]:
        if "histogram" in q and not (keep and keep.match(q["name"])):
            del q["histogram"]
            dropped += 1
    return dropped


def relative_paths(value, root):
    """value with each absolute path string in it made relative to root; returns how many."""
    changed = 0
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, v in items:
        if isinstance(v, str) and not isinstance(v, Number) and os.path.isabs(v):
            value[key] = os.path.relpath(os.path.normpath(v), root)
            changed += 1
        else:
            changed += relative_paths(v, root)
    return changed


def main():
    args = sys.argv[1:]
    dry = "--dry-run" in args
    files = [a for a in args if a != "--dry-run"]
    if any(a.startswith("-") for a in files):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        sys.exit(2)
    if not files:
        pattern = os.path.join(os.path.relpath(REPO_ROOT), "experiments/results/*/runs/run-*/results.json")
        files = sorted(glob.glob(pattern))
    failed = 0
    before_total = after_total = 0
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        results = parse(text)
        if dump(results) + "\n" != text:
            print(f"{path}: not in the project's JSON form (dump(2)); left alone", file=sys.stderr)
            failed += 1
            continue
        dropped = trim(results, sweep_of(path))
        paths = relative_paths(results, REPO_ROOT)
        out = dump(results) + "\n"
        before, after = len(text.encode()), len(out.encode())
        before_total += before
        after_total += after
        print(f"{path}: {dropped} histograms dropped, {paths} paths made relative, {before} -> {after} bytes")
        if not dry and out != text:
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(out)
            os.replace(tmp, path)
    print(f"{len(files) - failed} files: {before_total} -> {after_total} bytes"
          f" ({before_total - after_total} saved){' (dry run)' if dry else ''}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
