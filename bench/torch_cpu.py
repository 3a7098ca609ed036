#!/usr/bin/python3
"""PyTorch as the CPU speed reference (issue 22, docs/reference/onnx.md).

For each model of tests/torch/torch_models.py, in one run on this machine:
PyTorch eager on the CPU with as many threads as Tapestry uses cores (the
median of --repeat runs after --warmup), then `tapestry import` of the same
model with its weights (`import --weights DIR`), `optimize --target local`,
and `tapestry bench` of the chosen plan and of the single-device plan, on
PyTorch's input and weights where bench reads --inputs (as bench/ort_cpu.py
does). Prints a table of both times and the ratio tapestry / PyTorch (below 1:
Tapestry is faster).

    /usr/bin/python3 bench/torch_cpu.py --bin build/release/bin/tapestry [--models ...]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "torch"))
from torch_models import CASES, npy_name  # noqa: E402


def tapestry(binary, *args):
    proc = subprocess.run([binary, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"tapestry {' '.join(args)}: exit {proc.returncode}\n{proc.stderr}")
    return proc.stdout


def torch_median(model, x, repeat, warmup):
    with torch.no_grad():
        for _ in range(warmup):
            model(x)
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            model(x)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(binary, case, work, repeat, warmup, bench_inputs):
    model = case.model()
    x = case.input()
    eager = torch_median(model, x, repeat, warmup)
    onnx_path = os.path.join(work, f"{case.name}.onnx")
    case.export(model, onnx_path)
    graph = os.path.join(work, f"{case.name}.graph.json")
    tensors = os.path.join(work, f"{case.name}.tensors")
    tapestry(binary, "import", onnx_path, "-o", graph, "--weights", tensors, "-q")
    np.save(os.path.join(tensors, npy_name(case.input_name)), x.numpy())
    plan = os.path.join(work, f"{case.name}.plan.json")
    tapestry(binary, "optimize", graph, "--target", "local", "--seed", "1", "--iterations", "40",
             "-q", "-o", plan)
    inputs = ["--inputs", tensors] if bench_inputs else []
    report = json.loads(tapestry(binary, "--format", "json", "bench", plan, "--repeat",
                                 str(repeat), "--warmup", str(warmup), *inputs))
    return eager, report


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--models", default=",".join(c.name for c in CASES))
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    threads = len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)
    # bench reads the weights and input files where it has --inputs; else it
    # draws them (the same shapes and work).
    bench_inputs = "--inputs" in tapestry(args.bin, "bench", "--help")
    source = "PyTorch's" if bench_inputs else "drawn"
    print(f"PyTorch {torch.__version__} eager, {threads} threads; tapestry bench of the plan "
          "`optimize --target local --seed 1` chose, on "
          f"{source} inputs and weights; "
          f"medians of {args.repeat} runs\n")
    print("| model | PyTorch eager | tapestry plan (devices) | tapestry one device | "
          "plan / PyTorch | one device / PyTorch |")
    print("| --- | --- | --- | --- | --- | --- |")
    wanted = args.models.split(",")
    with tempfile.TemporaryDirectory(prefix="tapestry-torch-bench-") as work:
        for case in CASES:
            if case.name not in wanted:
                continue
            eager, report = measure(args.bin, case, work, args.repeat, args.warmup, bench_inputs)
            plan = report["plan"]["measured_s"]
            single = report["single_device"]["measured_s"]
            devices = report["plan"]["devices"]
            print(f"| {case.name} | {eager * 1e3:.2f} ms | {plan * 1e3:.2f} ms ({devices}) | "
                  f"{single * 1e3:.2f} ms | {plan / eager:.2f} | {single / eager:.2f} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    np.random.seed(0)
    sys.exit(main())
