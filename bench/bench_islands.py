#!/usr/bin/env python3
"""The distributed search against one process (issue 11, docs/distributed.md).

For each seed: `tapestry optimize GRAPH --target T --seed S --iterations N` in
one process, then `mpirun --oversubscribe -n K` of the same command (the same
total budget: N generations of 64 candidates, split across the K islands) for
every K given. Prints per run the front size, evaluations, the time x peak
memory hypervolume (reference point: 10% beyond the worst baseline or front
point of that seed's runs, so the runs of one seed compare exactly) and the
wall time of the whole command (MPI start-up included) and of the search alone
(the front file's search.seconds); then per K the hypervolume ratios and the
mean wall-time ratio 1 process / K ranks.

  bench_islands.py [--bin build/release/bin/tapestry] [--graph FILE] [--target NAME]
                   [--seeds 1,2,3] [--iterations N] [--ranks 2,4] [--exchange-every N]
                   [--threads N] [--mpirun mpirun]
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)


def hypervolume2d(points, ref):
    """Area dominated by points (x, y) inside [.., ref.x) x [.., ref.y), as
    core/search/hypervolume.cpp: the union of the boxes [x, rx) x [y, ry)."""
    pts = sorted((x, y) for x, y in points if x < ref[0] and y < ref[1])
    area = 0.0
    best_y = ref[1]
    for x, y in pts:
        if y < best_y:
            area += (ref[0] - x) * (best_y - y)
            best_y = y
    return area


def cpu_of_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd, cwd, env):
    """Returns (wall seconds, CPU seconds of every process it started)."""
    cpu = cpu_of_children()
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout.decode() + proc.stderr.decode())
        raise SystemExit(f"bench_islands: {' '.join(cmd)} exited {proc.returncode}")
    return wall, cpu_of_children() - cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(SRC, "build", "release", "bin", "tapestry"))
    ap.add_argument("--graph", default=os.path.join(SRC, "testdata", "graphs",
                                                    "transformer_block.json"))
    ap.add_argument("--target", default="2x-h100x8")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--exchange-every", type=int, default=None)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--mpirun", default=shutil.which("mpirun") or "mpirun")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    ranks = [int(k) for k in args.ranks.split(",")]
    binary = os.path.abspath(args.bin)
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")

    base = [binary, "optimize", os.path.abspath(args.graph), "--target", args.target,
            "--iterations", str(args.iterations), "--threads", str(args.threads), "-q",
            "-o", "plan.json", "--front", "front.json"]
    if args.exchange_every:
        base += ["--exchange-every", str(args.exchange_every)]
    print(f"bench_islands: {os.path.basename(args.graph)} on {args.target}, "
          f"{args.iterations} iterations x 64 plans in total per run, seeds {seeds}, "
          f"{args.threads} thread(s) per process, {os.cpu_count()} CPUs")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print(f"{'seed':>4} {'procs':>5} {'front':>5} {'evals':>7} {'hypervolume':>13} "
          f"{'hv/1proc':>8} {'wall s':>7} {'search s':>8} {'CPU s':>7}")
    hv_ratio = {k: [] for k in ranks}
    wall = {k: [] for k in [1] + ranks}
    search_s = {k: [] for k in [1] + ranks}
    cpu = {k: [] for k in [1] + ranks}
    with tempfile.TemporaryDirectory(prefix="bench-islands-") as tmp:
        for seed in seeds:
            fronts = {}
            for k in [1] + ranks:
                wdir = os.path.join(tmp, f"s{seed}-k{k}")
                os.mkdir(wdir)
                cmd = base + ["--seed", str(seed)]
                if k > 1:
                    cmd = [args.mpirun, "--oversubscribe", "-n", str(k)] + cmd
                w, c = run(cmd, wdir, env)
                wall[k].append(w)
                cpu[k].append(c)
                with open(os.path.join(wdir, "front.json")) as f:
                    fronts[k] = json.load(f)
                search_s[k].append(fronts[k]["search"]["seconds"])
            # One reference point for all runs of this seed.
            xs, ys = [], []
            for fr in fronts.values():
                for b in fr["baselines"].values():
                    if b and b["feasible"]:
                        xs.append(b["time_s"])
                        ys.append(b["peak_memory_bytes"])
                for p in fr["front"]:
                    xs.append(p["objectives"]["time_s"])
                    ys.append(p["objectives"]["peak_memory_bytes"])
            ref = (1.1 * max(xs), 1.1 * max(ys))
            hv = {}
            for k, fr in fronts.items():
                hv[k] = hypervolume2d([(p["objectives"]["time_s"],
                                        p["objectives"]["peak_memory_bytes"])
                                       for p in fr["front"]], ref)
            for k, fr in fronts.items():
                if k > 1:
                    hv_ratio[k].append(hv[k] / hv[1])
                print(f"{seed:>4} {k:>5} {len(fr['front']):>5} {fr['search']['evaluations']:>7} "
                      f"{hv[k]:>13.6e} {hv[k] / hv[1]:>8.4f} {wall[k][-1]:>7.2f} "
                      f"{search_s[k][-1]:>8.2f} {cpu[k][-1]:>7.2f}", flush=True)

    def mean(v):
        return sum(v) / len(v)

    print()
    for k in ranks:
        ok = all(r >= 1.0 for r in hv_ratio[k])
        print(f"{k} ranks vs 1 process: hypervolume ratio min {min(hv_ratio[k]):.4f} "
              f"mean {mean(hv_ratio[k]):.4f} ({'>=' if ok else 'NOT >='} 1 on every seed); "
              f"wall time 1 proc / {k} ranks = {mean(wall[1]) / mean(wall[k]):.2f}x "
              f"(search alone {mean(search_s[1]) / mean(search_s[k]):.2f}x); "
              f"CPU time {k} ranks / 1 proc = {mean(cpu[k]) / mean(cpu[1]):.2f}x")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
