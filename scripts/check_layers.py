#!/usr/bin/env python3
"""Check that imports run one way, down the layers (docs/architecture.md).

    diag -> json -> zspace -> expr -> metakernel -> graph -> plan | onnx | rewrite
         -> cost -> search | render -> backends -> driver -> cli

A file may include headers of its own layer and of layers below it, never of a
layer above it, nor of a sibling (search and render know nothing of each
other, nor do plan and onnx). Stages (everything below the driver layer) include no CLI11 and write
to no terminal (std::cout, std::cerr, printf, isatty; flushing them before a
fork is allowed). Prints every violation
and exits 1 if there is one; prints a summary line and exits 0 otherwise.

    python3 scripts/check_layers.py [--src DIR]
"""
import argparse
import os
import re
import sys

# (folder prefix, layer name, rank); the first matching prefix wins.
LAYERS = [
    ("core/diag/", "diag", 0),
    ("core/json/", "json", 1),
    ("core/zspace/", "zspace", 2),
    ("grammar/", "grammar", 3),
    ("core/expr/", "expr", 3),
    ("core/metakernel/", "metakernel", 4),
    ("core/graph/", "graph", 5),
    ("core/plan/", "plan", 6),
    ("core/onnx/", "onnx", 6),
    ("core/rewrite/", "rewrite", 6),
    ("core/cost/", "cost", 7),
    ("core/search/", "search", 8),
    ("core/render/", "render", 8),
    ("backends/", "backends", 9),
    ("core/driver/", "driver", 10),
    ("cli/", "cli", 11),
]
DRIVER_RANK = 10
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
TERMINAL = re.compile(r"std::cout|std::cerr|\bprintf\s*\(|\bputs\s*\(|isatty\s*\(")


def layer_of(path):
    for prefix, name, rank in LAYERS:
        if path.startswith(prefix):
            return name, rank
    return None, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default=os.path.join(os.path.dirname(__file__), ".."))
    args = ap.parse_args()
    src = os.path.abspath(args.src)
    problems = []
    files = 0
    edges = set()
    for top in ("core", "backends", "cli", "grammar"):
        for root, _, names in os.walk(os.path.join(src, top)):
            for name in names:
                if not name.endswith((".cpp", ".hpp", ".cu", ".cuh")):
                    continue
                path = os.path.relpath(os.path.join(root, name), src)
                here, rank = layer_of(path)
                if here is None:
                    continue
                files += 1
                with open(os.path.join(src, path), encoding="utf-8") as f:
                    lines = f.read().splitlines()
                for number, line in enumerate(lines, 1):
                    m = INCLUDE.match(line)
                    if m:
                        target = m.group(1)
                        if target.startswith("CLI/") and rank < DRIVER_RANK + 1:
                            problems.append(f"{path}:{number}: a stage includes CLI11 ({target})")
                        there, theirs = layer_of(target)
                        if there is None or there == here:
                            continue
                        edges.add((here, there))
                        if theirs > rank or (theirs == rank and there != here):
                            problems.append(f"{path}:{number}: {here} includes {target} "
                                            f"({there} is not below {here})")
                    elif (rank < DRIVER_RANK and TERMINAL.search(line.split("//")[0])
                          and ".flush()" not in line):
                        problems.append(f"{path}:{number}: a stage writes to the terminal: "
                                        f"{line.strip()}")
    for p in problems:
        print(p)
    print(f"checked {files} files, {len(edges)} layer-to-layer arrows: "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
