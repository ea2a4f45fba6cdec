#!/usr/bin/env python3
"""Fails when a folder's code includes a header of a folder listed after it in
docs/ARCHITECTURE.md's table: the table's rows that name a library are the layers, the
foundation first, and each may include only its own headers and those of the rows before it.

usage: check_layers.py [REPOSITORY_ROOT]
"""
import os
import re
import sys


def layers(root):
    order = []
    with open(os.path.join(root, "docs", "ARCHITECTURE.md")) as f:
        for line in f:
            m = re.match(r"\| `([a-z_]+)/` \| `qdq_", line)
            if m:
                order.append(m.group(1))
    if not order:
        sys.exit("docs/ARCHITECTURE.md: no table rows of the form | `folder/` | `qdq_...` |")
    return order


def violations(root, order):
    rank = {folder: i for i, folder in enumerate(order)}
    include = re.compile(r'#include "([a-z_]+)/')
    for folder in order:
        for directory, subdirs, files in os.walk(os.path.join(root, folder)):
            subdirs[:] = [d for d in subdirs if d != "node_modules"]
            for name in files:
                if not name.endswith((".h", ".cpp", ".cu", ".cuh")):
                    continue
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        m = include.match(line)
                        if m and m.group(1) in rank and rank[m.group(1)] > rank[folder]:
                            yield f"{os.path.relpath(path, root)}:{number}: {folder}/ includes " \
                                  f"{m.group(1)}/, listed after it in docs/ARCHITECTURE.md"


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    order = layers(root)
    found = list(violations(root, order))
    for v in found:
        print(v)
    if found:
        sys.exit(1)
    print("layers, foundation first:", " ".join(order), "- no folder includes a later one")


if __name__ == "__main__":
    main()
