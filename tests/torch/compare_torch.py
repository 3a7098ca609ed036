#!/usr/bin/python3
"""`tapestry import` checked against PyTorch (issue 22, docs/reference/onnx.md).

For each model of torch_models.py: build it with weights (seeded), export it to
ONNX, `tapestry import --weights`, optimize for each target, run the plan on
the CPU backend with the same input, and compare its output with PyTorch's
eager output. A plan that uses fewer than 2 devices is replaced by the
target's data-parallel baseline (then tensor-parallel), so every comparison
runs a sharded plan.

The tolerance is the one `run --check` uses (docs/check.md), with PyTorch's
float64 eager output as the reference and its float32 output as the baseline:

    error(x) = max |x - reference| / max |reference|
    pass  <=>  error(tapestry) <= max(16 * error(torch float32), 8 * 2^-24)

    /usr/bin/python3 tests/torch/compare_torch.py --bin build/release/bin/tapestry
        [--models mlp3,gpt2_block] [--targets cpu-2,h100x8] [--keep DIR]

Exit 0 when every model passes on every target, 1 otherwise.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_models import CASES, npy_name  # noqa: E402

U32 = 2.0 ** -24


def tapestry(binary, *args, timeout=900):
    proc = subprocess.run([binary, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"tapestry {' '.join(args)}: exit {proc.returncode}\n{proc.stderr}")
    return proc.stdout


def relative_error(x, reference):
    scale = float(np.max(np.abs(reference)))
    diff = float(np.max(np.abs(x.astype(np.float64) - reference)))
    return diff / scale if scale > 0 else diff


def sharded_plan(binary, graph, target, plan, outputs, weights):
    """Optimizes for `target` and runs the plan; falls back to a baseline when
    the chosen plan uses one device. Returns (how the plan was chosen, run report)."""
    tries = [("optimize --seed 1", ["--seed", "1", "--iterations", "40"]),
             ("data_parallel baseline", ["--baseline", "data_parallel"]),
             ("tensor_parallel baseline", ["--baseline", "tensor_parallel"])]
    report = None
    for how, flags in tries:
        tapestry(binary, "optimize", graph, "--target", target, "-q", "-o", plan, *flags)
        shutil.rmtree(outputs, ignore_errors=True)
        os.makedirs(outputs)
        report = json.loads(tapestry(binary, "--format", "json", "run", plan, "--inputs", weights,
                                     "--outputs", outputs))
        if report["devices_used"] >= 2:
            return how, report
    return "no plan of 2 or more devices", report


def compare(binary, case, targets, work):
    model = case.model()
    x = case.input()
    with torch.no_grad():
        baseline = model(x).numpy()
        reference = model.double()(x.double()).numpy()
    model.float()
    os.makedirs(work, exist_ok=True)
    onnx_path = os.path.join(work, f"{case.name}.onnx")
    case.export(model, onnx_path)
    graph = os.path.join(work, f"{case.name}.graph.json")
    weights = os.path.join(work, "weights")
    tapestry(binary, "import", onnx_path, "-o", graph, "--weights", weights, "-q")
    np.save(os.path.join(weights, npy_name(case.input_name)), x.numpy())
    torch_error = relative_error(baseline, reference)
    bound = max(16 * torch_error, 8 * U32)
    ok = True
    for target in targets:
        plan = os.path.join(work, f"{case.name}.{target}.plan.json")
        outputs = os.path.join(work, f"out-{target}")
        how, report = sharded_plan(binary, graph, target, plan, outputs, weights)
        y = np.load(os.path.join(outputs, npy_name(case.output_name)))
        if y.shape != reference.shape:
            print(f"{case.name} on {target}: output shape {y.shape}, PyTorch {reference.shape} "
                  "MISMATCH")
            ok = False
            continue
        error = relative_error(y, reference)
        passed = report["devices_used"] >= 2 and error <= bound
        ok = ok and passed
        print(f"{case.name} on {target} ({how}, {report['devices_used']} devices, "
              f"{report['shards']} shards): error {error:.2e}, PyTorch float32 {torch_error:.2e}, "
              f"bound {bound:.2e} {'ok' if passed else 'MISMATCH'}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--models", default=",".join(c.name for c in CASES))
    ap.add_argument("--targets", default="cpu-2,h100x8")
    ap.add_argument("--keep", help="keep the work files in this directory")
    args = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    wanted = args.models.split(",")
    unknown = [m for m in wanted if m not in {c.name for c in CASES}]
    if unknown:
        print(f"unknown models: {', '.join(unknown)}", file=sys.stderr)
        return 2
    work = args.keep or tempfile.mkdtemp(prefix="tapestry-torch-")
    failures = 0
    try:
        for case in CASES:
            if case.name not in wanted:
                continue
            try:
                if not compare(args.bin, case, args.targets.split(","),
                               os.path.join(work, case.name)):
                    failures += 1
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(f"{case.name}: {e}")
                failures += 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{len(wanted) - failures} passed, {failures} failed")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
