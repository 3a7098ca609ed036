#!/usr/bin/env python3
"""How true is the cost model on this machine? (docs/cost-model.md)

Calibrates `local` (into a private cache, so the user's saved calibration is
left alone), then for every testdata graph and a few generated MLPs and
transformer blocks:
  - optimizes for `local` and benches the chosen plan (predicted vs measured);
  - writes and benches the baselines (single, data_parallel, tensor_parallel);
and prints one table: predicted, measured, error, and the chosen plan's
measured time over the best measured baseline. With --roofline the same runs
are made against the uncalibrated `local` (the roofline figures) for
comparison. Everything is measured in this one run, on this machine.

  python3 bench/cost_truth.py --bin build/release/bin/tapestry [--quick]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BASELINES = ["single", "data_parallel", "tensor_parallel"]


def mlp(hidden, batch):
    tensors = {"x": {"dtype": "float32", "shape": [batch, hidden]}}
    ops = []
    src = "x"
    for i in (1, 2, 3):
        tensors[f"w{i}"] = {"dtype": "float32", "shape": [hidden, hidden]}
        tensors[f"b{i}"] = {"dtype": "float32", "shape": [hidden]}
        ops.append({"name": f"fc{i}", "kernel": "linear",
                    "inputs": {"X": src, "W": f"w{i}", "bias": f"b{i}"},
                    "outputs": {"result": f"h{i}"}})
        ops.append({"name": f"act{i}", "kernel": "relu", "inputs": {"input": f"h{i}"},
                    "outputs": {"result": f"a{i}"}})
        src = f"a{i}"
    return {"tapestry": "graph/v1", "name": f"mlp_{hidden}",
            "doc": f"3 linear+relu layers of {hidden}, batch {batch}",
            "tensors": tensors, "operations": ops, "outputs": [src]}


def transformer(d_model, batch, seq):
    """testdata/graphs/transformer_block.json with other sizes."""
    with open(os.path.join(ROOT, "testdata/graphs/transformer_block.json")) as f:
        g = json.load(f)
    heads = d_model // 64
    old = {"B": 8, "S": 128, "D": 256, "H": 4, "F": 1024}
    new = {"B": batch, "S": seq, "D": d_model, "H": heads, "F": 4 * d_model}

    def resize(shape):
        out = []
        for i, e in enumerate(shape):
            # The original's dims: 8 batch, 128 sequence, 256 model, 4 heads, 1024 MLP.
            table = {8: new["B"], 128: new["S"], 256: new["D"], 4: new["H"], 1024: new["F"]}
            out.append(table.get(e, e) if e not in (64, -1) else e)
        return out

    for t in g["tensors"].values():
        t["shape"] = resize(t["shape"])
    for op in g["operations"]:
        if "shape" in op.get("params", {}):
            op["params"]["shape"] = resize(op["params"]["shape"])
    g["name"] = f"transformer_{d_model}"
    g["doc"] = f"the testdata transformer block at d_model {d_model}, batch {batch}, seq {seq}"
    del old
    return g


def run(cmd, env, check=True):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        sys.exit(f"cost_truth: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    return p


def bench(binary, plan, env, args):
    cmd = [binary, "--format", "json", "bench", plan, "--repeat", str(args.repeat),
           "--warmup", "1", "--max-repeat", str(3 * args.repeat), "--max-seconds", "5"]
    d = json.loads(run(cmd, env).stdout)
    return d


def plan_key(path):
    """What makes two plans the same plan: each operation's split and devices."""
    with open(path) as f:
        p = json.load(f)
    return json.dumps({name: [op["split"], [s["device"] for s in op["shards"]]]
                       for name, op in p["operations"].items()}, sort_keys=True)


def case_rows(binary, name, graph, env, args, work):
    """Optimize, write baselines, bench all; one row.

    The chosen plan and each distinct baseline are benched in interleaved
    rounds (chosen, baseline, baseline, chosen, ...), and each plan's time is
    the median of its rounds: a load that comes and goes on a shared machine
    then falls on every plan alike, instead of on whichever was benched at
    that moment."""
    plan = os.path.join(work, f"{name}.plan.json")
    opt = [binary, "--format", "json", "optimize", graph, "--seed", "1", "-o", plan]
    if args.iterations:
        opt += ["--iterations", str(args.iterations)]
    summary = json.loads(run(opt, env).stdout)
    chosen_key = plan_key(plan)
    plans = {"chosen": plan}  # distinct plans to bench, by name
    same = {}                 # baseline -> the plan name it is the same plan as
    keys = {chosen_key: "chosen"}
    for b in BASELINES:
        path = os.path.join(work, f"{name}.{b}.json")
        p = run([binary, "optimize", graph, "--seed", "1", "--iterations", "1", "--baseline", b,
                 "-o", path, "-q"], env, check=False)
        if p.returncode != 0:
            continue  # no such baseline for this graph
        key = plan_key(path)
        if b == "single" and key not in keys:
            continue  # every bench of the chosen plan also measures one device
        if key in keys:
            # The same plan as one already benched: one plan, one measurement
            # (two benches of one plan differ by the machine's noise).
            same[b] = keys[key]
        else:
            keys[key] = b
            plans[b] = path
            same[b] = b
    times = {n: [] for n in plans}
    chosen_runs = []
    for r in range(args.rounds):
        order = list(plans) if r % 2 == 0 else list(reversed(plans))
        for n in order:
            d = bench(binary, plans[n], env, args)
            times[n].append(d["plan"]["measured_s"])
            if n == "chosen":
                chosen_runs.append(d)
    med = {n: statistics.median(t) for n, t in times.items()}
    measured = {b: med[n] for b, n in same.items()}
    if "single" not in measured:
        measured["single"] = statistics.median(d["single_device"]["measured_s"]
                                               for d in chosen_runs)
    chosen = chosen_runs[0]
    best_name = min(measured, key=measured.get)
    pred = chosen["plan"]["predicted_s"]
    meas = med["chosen"]
    single_meas = statistics.median(d["single_device"]["measured_s"] for d in chosen_runs)
    return {
        "case": name,
        "devices": chosen["plan"]["devices"],
        "predicted_s": pred,
        "measured_s": meas,
        "error": (pred - meas) / meas,
        "single_predicted_s": chosen["single_device"]["predicted_s"],
        "single_measured_s": single_meas,
        "best_baseline": best_name,
        "chosen_over_best": meas / measured[best_name],
        "baselines_s": measured,
        "rounds_s": times,
        "sharding_pays": summary.get("sharding_pays"),
        # optimize's one-device rule: its predicted gain, its spread, whether it kept one device
        "one_device_rule": summary.get("one_device_rule"),
    }


def fmt_s(s):
    return f"{s * 1e3:.3g} ms" if s >= 1e-3 else f"{s * 1e6:.3g} us"


def rule_text(row):
    """What optimize's one-device rule did: the predicted gain of the fastest
    plan over one device against the calibrated spread."""
    rule = row.get("one_device_rule") or {}
    if "gain" not in rule:
        return "-"
    verdict = "one device kept" if rule.get("applied") else "split"
    return f"{verdict}: gain {rule['gain']:.2f}, spread {rule['spread'] * 100:.0f}%"


def table(title, rows):
    print(f"\n{title}\n")
    print("| case | devices | predicted | measured | error | single: pred / meas | "
          "best baseline | chosen / best | one-device rule |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['case']} | {r['devices']} | {fmt_s(r['predicted_s'])} | "
              f"{fmt_s(r['measured_s'])} | {r['error'] * 100:+.0f}% | "
              f"{fmt_s(r['single_predicted_s'])} / {fmt_s(r['single_measured_s'])} | "
              f"{r['best_baseline']} | {r['chosen_over_best']:.2f} | {rule_text(r)} |")
    errors = sorted(abs(r["error"]) for r in rows)
    # Errors of both plans each case measured: the chosen plan and one device.
    both = sorted(errors + [abs(r["single_predicted_s"] - r["single_measured_s"]) /
                            r["single_measured_s"] for r in rows])
    p90 = both[min(len(both) - 1, int(round(0.9 * (len(both) - 1))))]
    ok = sum(1 for r in rows if r["chosen_over_best"] <= 1.05)
    print(f"\nchosen plans: median |error| {statistics.median(errors) * 100:.0f}%, "
          f"max {errors[-1] * 100:.0f}%")
    print(f"chosen and single-device plans ({len(both)}): median |error| "
          f"{statistics.median(both) * 100:.0f}%, 90th percentile {p90 * 100:.0f}%")
    print(f"chosen plan within 1.05x of the best measured baseline: {ok} of {len(rows)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/bin/tapestry"))
    ap.add_argument("--calibrate-seconds", type=float, default=60)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3,
                    help="interleaved bench rounds per plan (the median is kept)")
    ap.add_argument("--iterations", type=int, default=0, help="optimize --iterations (0: default)")
    ap.add_argument("--quick", action="store_true",
                    help="testdata graphs only, short calibration (a smoke run)")
    ap.add_argument("--roofline", action="store_true",
                    help="also run against the uncalibrated local target")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    if args.quick:
        args.calibrate_seconds = min(args.calibrate_seconds, 5)
        args.repeat = min(args.repeat, 3)
        args.rounds = 1
        args.iterations = args.iterations or 20

    work = tempfile.mkdtemp(prefix="cost_truth.")
    cases = []
    for g in ["mlp", "convnet", "transformer_block", "concat_split_embedding", "tiny"]:
        cases.append((g, os.path.join(ROOT, "testdata/graphs", g + ".json")))
    if not args.quick:
        generated = [mlp(256, 512), mlp(1024, 512), mlp(4096, 256),
                     transformer(256, 16, 128), transformer(1024, 4, 128)]
        for g in generated:
            path = os.path.join(work, g["name"] + ".json")
            with open(path, "w") as f:
                json.dump(g, f)
            cases.append((g["name"], path))

    results = {}
    kinds = [("calibrated", True)] + ([("roofline", False)] if args.roofline else [])
    for kind, calibrated in kinds:
        env = dict(os.environ)
        env["XDG_CACHE_HOME"] = os.path.join(work, "cache-" + kind)
        if calibrated:
            run([args.bin, "calibrate", "--budget-seconds", str(args.calibrate_seconds), "-q"], env)
        rows = []
        for name, path in cases:
            print(f"cost_truth: {kind} {name}", file=sys.stderr)
            rows.append(case_rows(args.bin, name, path, env, args, work))
        results[kind] = rows
        table(f"{kind} local target ({os.cpu_count()} cores)", rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
