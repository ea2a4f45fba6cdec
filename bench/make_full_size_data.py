#!/usr/bin/env python3
"""Writes data files of the official full training sets' size and structure, from the shared
data's real text, for timing the readers (bench/bench_readers.sh):

  OUT/train-v1.1.json  SQuAD v1.1's layout with 87,599 questions in 442 articles: the dev file's
                       paragraphs and questions repeated, each copy with its own ids
  OUT/train.tsv        GLUE's MNLI training layout, 392,702 pairs: dev_matched's pairs repeated,
                       with parse columns of the released file's shape

Usage: make_full_size_data.py DATA_DIR OUT_DIR
"""
import gzip
import json
import os
import sys

SQUAD_QUESTIONS = 87599
SQUAD_ARTICLES = 442
MNLI_PAIRS = 392702


def squad_paragraphs(data_dir):
    with gzip.open(os.path.join(data_dir, "squad", "dev-v1.1.json.gz"), "rt", encoding="utf-8") as f:
        dev = json.load(f)
    return [p for article in dev["data"] for p in article["paragraphs"]]


def write_squad(data_dir, out_dir):
    source = squad_paragraphs(data_dir)
    articles = [{"title": "article_%d" % i, "paragraphs": []} for i in range(SQUAD_ARTICLES)]
    questions = 0
    copy = 0
    while questions < SQUAD_QUESTIONS:
        for p in source:
            if questions >= SQUAD_QUESTIONS:
                break
            qas = []
            for qa in p["qas"][: SQUAD_QUESTIONS - questions]:
                qas.append({"answers": qa["answers"][:1], "question": qa["question"], "id": "%s_%d" % (qa["id"], copy)})
            questions += len(qas)
            articles[(questions * SQUAD_ARTICLES) // (SQUAD_QUESTIONS + 1)]["paragraphs"].append(
                {"context": p["context"], "qas": qas})
        copy += 1
    with open(os.path.join(out_dir, "train-v1.1.json"), "w", encoding="utf-8") as f:
        json.dump({"data": articles, "version": "1.1"}, f)


def binary_parse(sentence):
    return " ".join("( %s )" % w for w in sentence.split())


def write_mnli(data_dir, out_dir):
    with gzip.open(os.path.join(data_dir, "mnli", "dev_matched.tsv.gz"), "rt", encoding="utf-8") as f:
        next(f)
        pairs = [line.rstrip("\n").split("\t") for line in f]
    header = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
              "sentence1_parse", "sentence2_parse", "sentence1", "sentence2", "label1", "gold_label"]
    with open(os.path.join(out_dir, "train.tsv"), "w", encoding="utf-8") as f:
        f.write("\t".join(header) + "\n")
        for i in range(MNLI_PAIRS):
            pair_id, label, premise, hypothesis = pairs[i % len(pairs)][:4]
            row = [str(i), str(i // 3), "%s_%d" % (pair_id, i), "fiction", binary_parse(premise), binary_parse(hypothesis),
                   "(ROOT %s)" % binary_parse(premise), "(ROOT %s)" % binary_parse(hypothesis), premise, hypothesis,
                   label, label]
            f.write("\t".join(row) + "\n")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data_dir, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    write_squad(data_dir, out_dir)
    write_mnli(data_dir, out_dir)


if __name__ == "__main__":
    main()
