#!/usr/bin/env python3
"""`run --check` on many plans under every OpenBLAS kernel this CPU can run.

Every testdata graph is optimized with seeds 0-9 for the targets local, cpu-2
and h100x8; each plan then runs with `--check --format json` under every
OPENBLAS_CORETYPE of scripts/openblas_coretypes.py (other processors' kernels,
other summation orders). Every check must pass. The summary per kernel gives
the worst ratio of the sharded error to the unsharded one and the worst error
in units of float32's rounding, the figures docs/check.md chooses the bound
from; --report FILE writes every measurement as JSON.

Exit 0 when every plan passes under every kernel, 1 otherwise.
"""
import argparse
import concurrent.futures
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import openblas_coretypes  # noqa: E402

U32 = 2.0 ** -24


def run(cmd, env=None, timeout=600):
    return subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=timeout)


def optimize(binary, graph, target, seed, select, out):
    proc = run([binary, "optimize", graph, "--target", target, "--seed", str(seed), "--select",
                select, "-o", out, "-q"])
    if proc.returncode != 0:
        return f"optimize {graph} --target {target} --seed {seed}: exit {proc.returncode}\n" \
               f"{proc.stderr}"
    return None


def check(binary, plan, coretype):
    env = dict(os.environ)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    proc = run([binary, "--format", "json", "run", plan, "--check"], env=env)
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return proc.returncode, None, proc.stderr
    return proc.returncode, doc, proc.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--seeds", default="0-9", help="a range A-B or a list 1,2,3")
    ap.add_argument("--targets", default="local,cpu-2,h100x8")
    ap.add_argument("--select", default="fastest",
                    help="comma list of optimize --select policies (fastest)")
    ap.add_argument("--graphs", default="", help="comma list of testdata graph names (all)")
    ap.add_argument("--coretypes", default="auto",
                    help="comma list, 'auto' (every one this CPU runs) or 'default'")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--report", help="write every measurement as JSON here")
    args = ap.parse_args()

    if "-" in args.seeds:
        lo, hi = args.seeds.split("-")
        seeds = list(range(int(lo), int(hi) + 1))
    else:
        seeds = [int(s) for s in args.seeds.split(",")]
    targets = args.targets.split(",")
    graph_dir = os.path.join(args.src, "testdata", "graphs")
    names = args.graphs.split(",") if args.graphs else sorted(
        f[:-5] for f in os.listdir(graph_dir) if f.endswith(".json"))
    if args.coretypes == "auto":
        coretypes = openblas_coretypes.runnable() or [""]
    elif args.coretypes == "default":
        coretypes = [""]
    else:
        coretypes = args.coretypes.split(",")
    print(f"check sweep: {len(names)} graphs x {len(targets)} targets x {len(seeds)} seeds, "
          f"kernels: {', '.join(c or 'default' for c in coretypes)}", flush=True)

    failures = []
    records = []
    with tempfile.TemporaryDirectory(prefix="tapestry_check_sweep_") as tmp, \
            concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        plans = {}
        jobs = {}
        for name in names:
            for target in targets:
                for seed in seeds:
                    for select in args.select.split(","):
                        out = os.path.join(tmp, f"{name}.{target}.{seed}.{select}.plan.json")
                        plans[(name, target, seed, select)] = out
                        jobs[pool.submit(optimize, args.bin,
                                         os.path.join(graph_dir, name + ".json"), target, seed,
                                         select, out)] = (name, target, seed)
        for f in concurrent.futures.as_completed(jobs):
            if f.result():
                failures.append(f.result())
        runs = {}
        for key, plan in plans.items():
            if not os.path.exists(plan):
                continue
            for c in coretypes:
                runs[pool.submit(check, args.bin, plan, c)] = key + (c,)
        for f in concurrent.futures.as_completed(runs):
            name, target, seed, select, c = runs[f]
            label = (f"{name} --target {target} --seed {seed} --select {select} "
                     f"(OPENBLAS_CORETYPE={c or 'default'})")
            code, doc, stderr = f.result()
            if code != 0 or doc is None or "check" not in doc:
                failures.append(f"{label}: exit {code}\n{stderr}")
                continue
            for o in doc["check"]["outputs"]:
                rec = {"graph": name, "target": target, "seed": seed, "select": select,
                       "coretype": c or "default",
                       "devices_used": doc.get("devices_used"), **o}
                records.append(rec)
                if not o["ok"]:
                    failures.append(f"{label}: output {o['tensor']}: max error {o['max_error']}, "
                                    f"unsharded {o['unsharded_error']}, bound {o['bound']}")

    # Per kernel: the worst sharded/unsharded ratio (where the unsharded error
    # is above the floor's reach) and the worst error in float32 units.
    for c in coretypes:
        mine = [r for r in records if r["coretype"] == (c or "default")
                and r["dtype"] == "float32" and r["precision"] == "float32"
                and r["max_error"] is not None]
        ratios = [r["max_error"] / r["unsharded_error"] for r in mine
                  if r["unsharded_error"] and r["unsharded_error"] > 0]
        worst_units = max((r["max_error"] / U32 for r in mine), default=0)
        zero_base = [r["max_error"] / U32 for r in mine if not r["unsharded_error"]]
        print(f"  {c or 'default':12s} {len(mine):4d} float32 outputs; "
              f"sharded/unsharded error: max {max(ratios, default=0):.2f}, "
              f"median {sorted(ratios)[len(ratios) // 2] if ratios else 0:.2f}; "
              f"max error {worst_units:.0f} u; "
              f"with an exact unsharded result: max {max(zero_base, default=0):.1f} u")
    if args.report:
        with open(args.report, "w") as f:
            json.dump(records, f, indent=1)
    for msg in failures:
        print("FAILED: " + msg.rstrip())
    total = len(records)
    bad = len(failures)
    print(f"{total - sum(1 for r in records if not r['ok'])} passed, {bad} failed")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
