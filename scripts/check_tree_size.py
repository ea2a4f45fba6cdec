#!/usr/bin/env python3
"""Fails when the repository's tracked tree is too large for a quick clone: a tracked file over
20 MB (the shipped weights' file excepted, by name) or the whole tree over 60 MB. A checkout
must copy to a GPU machine in seconds, and the weights alone are 37.5 MB compressed. Sizes are
those of the files as checked out, counted from `git ls-files`.

usage: check_tree_size.py [REPOSITORY_ROOT]
"""
import os
import subprocess
import sys

MB = 1000 * 1000
FILE_LIMIT = 20 * MB
TREE_LIMIT = 60 * MB
WEIGHTS = "experiments/pretrained/bert_mini/model.h5"

def tracked_sizes(root):
    names = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True, capture_output=True).stdout
    sizes = {}
    for name in names.decode().split("\0"):
        path = os.path.join(root, name)
        if name and os.path.isfile(path):  # a file deleted but not yet committed is not checked out
            sizes[name] = os.path.getsize(path)
    return sizes


def problems(sizes):
    found = [f"{name}: {size / MB:.1f} MB, over the {FILE_LIMIT // MB} MB a tracked file may hold"
             for name, size in sorted(sizes.items()) if size > FILE_LIMIT and name != WEIGHTS]
    total = sum(sizes.values())
    if total > TREE_LIMIT:
        largest = sorted(sizes.items(), key=lambda item: -item[1])[:5]
        found.append(f"the tracked tree holds {total / MB:.1f} MB, over {TREE_LIMIT // MB} MB; largest: " +
                     ", ".join(f"{name} ({size / MB:.1f} MB)" for name, size in largest))
    return found, total


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    found, total = problems(tracked_sizes(root))
    for line in found:
        print(line, file=sys.stderr)
    if found:
        sys.exit(1)
    print(f"tracked tree: {total / MB:.1f} MB (limit {TREE_LIMIT // MB} MB), no file over {FILE_LIMIT // MB} MB"
          f" but {WEIGHTS}")


if __name__ == "__main__":
    main()
