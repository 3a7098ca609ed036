#!/usr/bin/env python3
"""What rewrites gain: the same search with and without them (issue 33, docs/rewrites.md).

Two parts, each comparing `optimize --rewrites default` against `--rewrites
none` on the same graph, seed and budget:

  predicted  the issue's sizes on h100x8 (the cost model only): ResNet-50 at
             batch 32, 224x224, and a GPT-2 block at d768, 12 heads, sequence
             1024, batch 8, exported with PyTorch; plus the testdata models.
             Reports the fastest plan's time, the least-memory plan's peak,
             the optimize time, and whether the front with rewrites is at
             least as good as the one without, point by point (every point of
             the front without is weakly dominated by a point with).
             Two controls put those figures in scale: how many points of the
             front without rewrites the same search finds again with the next
             seed (point-by-point cover between two runs of one search), and
             how soon the search with rewrites reaches the front the search
             without them ends at (its hypervolume, over all three
             objectives): the optimize time to a front as good.
             `--inputs-on constants` exports the issue's models with their
             weights (constant graph inputs) and optimizes with the weights
             resident on the devices, as a served model's are; by default
             every input, weights too, comes from the host on every run.
  measured   the testdata models resnet18 and gpt2_block on this CPU: each
             optimized for a calibrated `local`, both plans benched in
             interleaved rounds (`tapestry bench --inputs`, the same weights
             and inputs), reporting the medians. `--models` also takes
             gpt2_d768_s128: a GPT-2 block of a real layer's size (d768, 12
             heads, 128 tokens, batch 1) exported with its weights.

  /usr/bin/python3 bench/rewrites.py --bin build/release/bin/tapestry [--part predicted|measured]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)


def run(cmd, env=None):
    proc = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr}")
    return proc.stdout


# ---------------------------------------------------------------- predicted

def export_issue_models(work, params=False):
    """ResNet-50 (b32, 224x224) and the GPT-2 block (d768, s1024, b8) as ONNX:
    their weights graph inputs (the structure is all the cost model needs), or
    with `params` initializers, which import marks constant (126 MB)."""
    import torch
    import torchvision
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import make_onnx_models as m
    out = {}
    torch.manual_seed(0)
    out["resnet50_b32"] = os.path.join(work, "resnet50_b32.onnx")
    m.export(torchvision.models.resnet50(), torch.randn(32, 3, 224, 224), out["resnet50_b32"],
             ["image"], ["logits"], params=params)
    torch.manual_seed(0)
    out["gpt2_d768_s1024_b8"] = os.path.join(work, "gpt2_d768.onnx")
    m.export(m.Gpt2Block(d=768, heads=12, seq=1024), torch.randn(8, 1024, 768),
             out["gpt2_d768_s1024_b8"], ["x"], ["y"], params=params)
    return out


# Models the measured part exports itself (name: builder of the ONNX file in
# a folder, and the model's own inputs), beside the testdata ones.
def _gpt2_d768_s128(work):
    import torch
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import make_onnx_models as m
    path = os.path.join(work, "gpt2_d768_s128.onnx")
    torch.manual_seed(0)
    m.export(m.Gpt2Block(d=768, heads=12, seq=128), torch.randn(1, 128, 768), path, ["x"], ["y"])
    return path


EXPORTED = {"gpt2_d768_s128": (_gpt2_d768_s128, ["x"])}


def front_points(path):
    with open(path) as f:
        front = json.load(f)
    return [(p["objectives"]["time_s"], p["objectives"]["peak_memory_bytes"],
             p["objectives"]["transfer_bytes"]) for p in front["front"]]


def covered(with_rw, without, objectives=3):
    """How many points of `without` some point of `with_rw` weakly dominates,
    over the first `objectives` of (time, peak memory, bytes moved)."""
    def dominates(a, b):
        return a[0] <= b[0] * (1 + 1e-9) and all(a[k] <= b[k] for k in range(1, objectives))
    return sum(any(dominates(a, b) for a in with_rw) for b in without)


def hypervolume(points, lo, ref):
    """The volume of the box [lo, ref] (three minimized objectives) that the
    points dominate, as a fraction of the box: exact, one slab per distinct
    first objective, each slab the 2-D staircase area of the points at or
    below it."""
    scale = [r - a for a, r in zip(lo, ref)]
    pts = sorted(tuple((p[k] - lo[k]) / scale[k] for k in range(3)) for p in points
                 if all(p[k] < ref[k] for k in range(3)))
    volume = 0.0
    for i, p in enumerate(pts):
        x_next = pts[i + 1][0] if i + 1 < len(pts) else 1.0
        if x_next <= p[0]:
            continue
        area, lowest = 0.0, 1.0
        for y, z in sorted((q[1], q[2]) for q in pts[:i + 1]):
            if z < lowest:
                area += (1.0 - y) * (lowest - z)
                lowest = z
        volume += (x_next - p[0]) * area
    return volume


def hypervolume_gain(with_rw, without):
    """Hypervolume of the front with rewrites over the one without, both in
    one box: from the least to 1.1x the largest value of each objective over
    both fronts. Unlike point-by-point cover it does not depend on which 64
    points of a larger front each capped archive kept."""
    both = with_rw + without
    lo = [min(p[k] for p in both) for k in range(3)]
    ref = [1.1 * max(p[k] for p in both) or 1.0 for k in range(3)]
    return hypervolume(with_rw, lo, ref) / hypervolume(without, lo, ref)


DEFAULT_ITERATIONS = 300  # optimize's default budget (core/search/search.hpp)


def optimize_once(binary, graph, target, work, name, mode, seed, iterations, inputs_on):
    """One optimize run: its wall time, summary and front points."""
    tag = f"{name}.{mode}.s{seed}.i{iterations}"
    front = os.path.join(work, tag + ".front.json")
    cmd = [binary, "--format", "json", "optimize", graph, "--target", target, "--seed",
           str(seed), "--rewrites", mode, "--front", front, "-o",
           os.path.join(work, tag + ".plan.json"), "--inputs-on", inputs_on]
    if iterations:
        cmd += ["--iterations", str(iterations)]
    start = time.perf_counter()
    summary = json.loads(run(cmd))
    seconds = time.perf_counter() - start
    points = front_points(front)
    return {
        "seconds": seconds,
        "sites": len(summary.get("rewrites", [])),
        "fastest_s": min(p[0] for p in points),
        "least_memory_bytes": min(p[1] for p in points),
        "points": points,
    }


def time_to_front(once, target_points, final_points, iterations):
    """The shortest run with rewrites (a ladder of budgets; the search is
    deterministic per seed and generation count, so a shorter run is a prefix
    of the longer one) up to two thirds of the budget whose front has at
    least the hypervolume of `target_points`, in the box of both final
    fronts: (generations, seconds), or None when none of them does."""
    both = final_points + target_points
    lo = [min(p[k] for p in both) for k in range(3)]
    ref = [1.1 * max(p[k] for p in both) or 1.0 for k in range(3)]
    goal = hypervolume(target_points, lo, ref)
    for fraction in (1 / 12, 1 / 6, 1 / 3, 1 / 2, 2 / 3):
        generations = max(1, round(iterations * fraction))
        r = once(generations)
        if hypervolume(r["points"], lo, ref) >= goal:
            return generations, r["seconds"]
    return None


def optimize_both(binary, graph, target, work, name, seed, iterations, inputs_on="host",
                  controls=True):
    out = {}
    for mode in ("default", "none"):
        out[mode] = optimize_once(binary, graph, target, work, name, mode, seed, iterations,
                                  inputs_on)
    d, n = out["default"], out["none"]
    c3 = covered(d["points"], n["points"])
    row_controls = {}
    if controls:
        again = optimize_once(binary, graph, target, work, name, "none", seed + 1, iterations,
                              inputs_on)
        row_controls["next_seed_covers"] = covered(again["points"], n["points"])
        budget = iterations or DEFAULT_ITERATIONS
        reached = time_to_front(
            lambda g: optimize_once(binary, graph, target, work, name, "default", seed, g,
                                    inputs_on), n["points"], d["points"], budget)
        if reached is None and hypervolume_gain(d["points"], n["points"]) >= 1.0:
            reached = (budget, d["seconds"])
        row_controls["time_to_front"] = (
            None if reached is None else {
                "generations": reached[0], "seconds": reached[1],
                "speedup": n["seconds"] / reached[1]})
    return {
        **row_controls,
        "model": name,
        "sites": d["sites"],
        "fastest_gain": n["fastest_s"] / d["fastest_s"],
        "memory_gain": n["least_memory_bytes"] / d["least_memory_bytes"],
        "optimize_speedup": n["seconds"] / d["seconds"],
        "front_covers": c3 == len(n["points"]),
        "hypervolume_gain": hypervolume_gain(d["points"], n["points"]),
        "covered": [c3, covered(d["points"], n["points"], 2),
                    len(n["points"])],
        "fastest_s": [d["fastest_s"], n["fastest_s"]],
        "least_memory_bytes": [d["least_memory_bytes"], n["least_memory_bytes"]],
        "optimize_s": [d["seconds"], n["seconds"]],
    }


def predicted(args, work):
    models = {}
    if not args.skip_export:
        models.update(export_issue_models(work, params=args.inputs_on == "constants"))
    for name in ("resnet18", "resnet50", "mobilenet_v2", "bert_layer", "gpt2_block", "mlp3",
                 "llama_layer"):
        models[name] = os.path.join(ROOT, "testdata", "onnx", name + ".onnx")
    rows = []
    for name, model in models.items():
        graph = os.path.join(work, name + ".json")
        run([args.bin, "import", model, "-o", graph, "-q"])
        print(f"rewrites: {name} on {args.target}", file=sys.stderr)
        rows.append(optimize_both(args.bin, graph, args.target, work, name, args.seed,
                                  args.iterations, args.inputs_on, not args.no_controls))
    print(f"predicted on {args.target}, seed {args.seed}, inputs on {args.inputs_on}: "
          "none / default (above 1: rewrites win)")
    head = ("| model | sites | fastest plan | least memory | optimize time | front covers | "
            "points covered | in time x memory | hypervolume |")
    rule = "| --- " * 9 + "|"
    if not args.no_controls:
        head += " next seed covers | time to its front |"
        rule += " --- | --- |"
    print(head)
    print(rule)
    for r in rows:
        c3, c2, n = r["covered"]
        line = (f"| {r['model']} | {r['sites']} | {r['fastest_gain']:.2f}x | "
                f"{r['memory_gain']:.2f}x | {r['optimize_speedup']:.2f}x | "
                f"{'yes' if r['front_covers'] else 'no'} | {c3} of {n} | {c2} of {n} | "
                f"{r['hypervolume_gain']:.2f}x |")
        if not args.no_controls:
            t = r["time_to_front"]
            reach = ("never" if t is None else
                     f"{t['speedup']:.2f}x ({t['generations']} generations)")
            line += f" {r['next_seed_covers']} of {n} | {reach} |"
        print(line)
    if not args.no_controls:
        print("next seed covers: points of the front without rewrites that the same search "
              "with the next seed weakly dominates; time to its front: optimize time without "
              "rewrites over the time of the shortest run with them whose front has the "
              "hypervolume of the front without")
    return rows


# ---------------------------------------------------------------- measured

def measured(args, work):
    import numpy as np
    import ort_cpu
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"))
    print(f"rewrites: calibrating local ({args.calibrate_seconds:g} s)", file=sys.stderr)
    run([args.bin, "calibrate", "--budget-seconds", str(args.calibrate_seconds), "-q"], env)
    rows = []
    for name in args.models.split(","):
        model_work = os.path.join(work, "measured", name)
        os.makedirs(model_work)
        if name in EXPORTED:
            build, own = EXPORTED[name]
            ort_cpu.MODELS[name] = own
            source = build(model_work)
        else:
            source = None
        rng = np.random.default_rng([args.seed, list(ort_cpu.MODELS).index(name)])
        model, feeds = ort_cpu.prepare_model(name, model_work, rng, source=source)
        tensors = os.path.join(model_work, "tensors")
        graph = os.path.join(model_work, name + ".graph.json")
        run([args.bin, "import", model, "-o", graph, "--weights", tensors, "-q"], env)
        for path in feeds.values():
            os.replace(path, os.path.join(tensors, os.path.basename(path)))
        plans = {}
        for mode in ("default", "none"):
            plans[mode] = os.path.join(model_work, f"{mode}.plan.json")
            run([args.bin, "optimize", graph, "--target", "local", "--seed", "1", "-q",
                 "--rewrites", mode, "-o", plans[mode]], env)
        times = {"default": [], "none": []}
        single = {"default": [], "none": []}  # each graph on one device, same runs
        devices = {}
        for r in range(args.rounds):
            for mode in (("default", "none") if r % 2 == 0 else ("none", "default")):
                print(f"rewrites: {name} round {r + 1}/{args.rounds}: {mode}", file=sys.stderr)
                pin = ["taskset", "-c", args.taskset] if args.taskset else []
                d = json.loads(run(pin + [args.bin, "--format", "json", "bench", plans[mode],
                                    "--inputs", tensors, "--repeat", str(args.repeat),
                                    "--max-repeat", str(args.repeat), "--warmup", "3"], env))
                times[mode].append(d["plan"]["measured_s"])
                single[mode].append(d["single_device"]["measured_s"])
                devices[mode] = d["plan"]["devices"]
        med = {k: statistics.median(v) for k, v in times.items()}
        one = {k: statistics.median(v) for k, v in single.items()}
        rows.append({"model": name, "with_s": med["default"], "without_s": med["none"],
                     "gain": med["none"] / med["default"], "devices": devices,
                     "single_with_s": one["default"], "single_without_s": one["none"],
                     "single_gain": one["none"] / one["default"], "rounds_s": times,
                     "single_rounds_s": single})
    pinned = f", on CPUs {args.taskset}" if args.taskset else ""
    print(f"measured on this CPU (calibrated local, {args.rounds} interleaved rounds of "
          f"{args.repeat} runs{pinned}): the chosen plans' medians")
    print("| model | chosen plan with rewrites | without | without / with | "
          "one device with | without | without / with |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['model']} | {r['with_s'] * 1e6:.1f} us ({r['devices']['default']} dev) | "
              f"{r['without_s'] * 1e6:.1f} us ({r['devices']['none']} dev) | {r['gain']:.2f}x | "
              f"{r['single_with_s'] * 1e6:.1f} us | {r['single_without_s'] * 1e6:.1f} us | "
              f"{r['single_gain']:.2f}x |")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/bin/tapestry"))
    ap.add_argument("--part", choices=["predicted", "measured", "both"], default="both")
    ap.add_argument("--target", default="h100x8", help="the predicted part's target")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--iterations", type=int, default=0, help="optimize --iterations (0: default)")
    ap.add_argument("--inputs-on", choices=["host", "constants"], default="host",
                    help="predicted: optimize --inputs-on; constants also exports the issue's "
                    "models with their weights")
    ap.add_argument("--no-controls", action="store_true",
                    help="predicted: skip the two controls (the next seed's cover, the time "
                    "to the front without rewrites)")
    ap.add_argument("--skip-export", action="store_true",
                    help="predicted: only the testdata models (no PyTorch export)")
    ap.add_argument("--models", default="resnet18,gpt2_block", help="measured: which models")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--calibrate-seconds", type=float, default=30)
    ap.add_argument("--taskset", help="measured: run every bench on these CPUs (taskset -c), "
                    "for a one-device plan whose time depends on the core it lands on")
    ap.add_argument("--json", help="also write the results here as JSON")
    args = ap.parse_args()
    doc = {"command": " ".join(["/usr/bin/python3"] + sys.argv)}
    with tempfile.TemporaryDirectory(prefix="tapestry-rewrites-bench-") as work:
        if args.part in ("predicted", "both"):
            doc["predicted"] = predicted(args, work)
        if args.part in ("measured", "both"):
            doc["measured"] = measured(args, work)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
