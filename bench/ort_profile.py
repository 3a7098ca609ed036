"""Where Tapestry's time goes against ONNX Runtime's, node by node (used by
bench/ort_cpu.py --profile).

ORT's profiler (ort_run.js --profile) writes a Chrome trace with one
"Node" event per node and run, named `<node>_kernel_time`, with the kernel
it ran (`args.op_name`: Conv, FusedConv, ...). `tapestry --format json
bench` gives each operation's measured median, named after the ONNX nodes
it runs (`A+B` for a fusion, a suffix such as `/input_2d` for a helper the
importer added). Both are matched through the ONNX node names: an ORT node
whose name is a part of a Tapestry operation's name counts toward it.
"""
import collections
import json
import re
import statistics

# Suffixes ORT adds to the names of the nodes its fusions make.
ORT_SUFFIX = re.compile(r"(_fused|_token_\d+|_nchwc|_output_0)+$")


def ort_node_times(trace_path, runs, total_runs):
    """{node: (op_name, median seconds per run)} over the last `runs` of the
    `total_runs` ORT's profile recorded (warm-up runs come first); a node that
    ran k times a run (a loop body) counts k of its events a run."""
    with open(trace_path) as f:
        events = json.load(f)
    durations = collections.defaultdict(list)
    kinds = {}
    for e in events:
        name = e.get("name", "")
        if e.get("cat") != "Node" or not name.endswith("_kernel_time"):
            continue
        node = name[: -len("_kernel_time")]
        durations[node].append(e["dur"] * 1e-6)
        kinds[node] = e.get("args", {}).get("op_name", "?")
    out = {}
    for node, ds in durations.items():
        per_run = max(1, len(ds) // total_runs)
        # The last `runs` runs' events (warm-up runs come first), summed per run.
        recent = ds[-per_run * runs:]
        totals = [sum(recent[i * per_run:(i + 1) * per_run]) for i in range(runs)]
        out[node] = (kinds[node], statistics.median(totals))
    return out


def tapestry_op_times(bench_doc):
    """[(name, kernel, seconds)] of a `tapestry --format json bench` document."""
    return [(o["name"], o["kernel"], o["measured_s"]) for o in bench_doc["operations"]]


def match(ort, ours):
    """Groups of (Tapestry operations, ORT nodes) that run the same ONNX nodes:
    [(our names, our kernels, our seconds, ORT nodes, ORT kernels, ORT seconds)],
    plus the ORT nodes no Tapestry operation names."""
    owner = {}
    for i, (name, _, _) in enumerate(ours):
        for part in name.split("+"):
            owner.setdefault(part, i)
    groups = {}
    unmatched = []
    for node, (kind, seconds) in ort.items():
        base = ORT_SUFFIX.sub("", node)
        i = owner.get(node, owner.get(base))
        if i is None:  # a helper's name: the node's name with a suffix of ours
            i = next((owner[p] for p in owner if p.startswith(base + "/")), None)
        if i is None:
            unmatched.append((node, kind, seconds))
            continue
        groups.setdefault(i, []).append((node, kind, seconds))
    rows = []
    for i, (name, kernel, seconds) in enumerate(ours):
        theirs = groups.get(i, [])
        rows.append(([name], [kernel], seconds, [n for n, _, _ in theirs],
                     sorted({k for _, k, _ in theirs}), sum(s for _, _, s in theirs)))
    return rows, unmatched


def short(name, width=60):
    return name if len(name) <= width else "..." + name[-(width - 3):]


def report(model, trace_path, runs, total_runs, bench_doc, top):
    """The text of the comparison: time by kind on each side, then the `top`
    operations where Tapestry loses the most time to ORT."""
    ort = ort_node_times(trace_path, runs, total_runs)
    ours = tapestry_op_times(bench_doc)
    rows, unmatched = match(ort, ours)
    lines = [f"### {model}: Tapestry's operations against ORT's nodes (2 threads, medians per "
             "run)", ""]
    by_ours = collections.Counter()
    for _, kernel, seconds in ours:
        by_ours[kernel] += seconds
    by_theirs = collections.Counter()
    for kind, seconds in ort.values():
        by_theirs[kind] += seconds
    lines.append("| Tapestry kernel | time | ORT kernel | time |")
    lines.append("| --- | --- | --- | --- |")
    a, b = by_ours.most_common(), by_theirs.most_common()
    for k in range(max(len(a), len(b))):
        left = f"{a[k][0]} | {a[k][1] * 1e6:.0f} us" if k < len(a) else " | "
        right = f"{b[k][0]} | {b[k][1] * 1e6:.0f} us" if k < len(b) else " | "
        lines.append(f"| {left} | {right} |")
    lines.append(f"| total | {sum(by_ours.values()) * 1e6:.0f} us | total | "
                 f"{sum(by_theirs.values()) * 1e6:.0f} us |")
    lines += ["", f"The {top} operations that lose the most against the ORT nodes of the same "
              "ONNX nodes:", "",
              "| Tapestry operation | kernel | Tapestry | ORT kernels | ORT | difference |",
              "| --- | --- | --- | --- | --- | --- |"]
    rows.sort(key=lambda r: r[5] - r[2])
    for names, kernels, seconds, _, kinds, theirs in rows[:top]:
        lines.append(f"| {short(names[0])} | {kernels[0]} | {seconds * 1e6:.0f} us | "
                     f"{', '.join(kinds) or '-'} | {theirs * 1e6:.0f} us | "
                     f"{(seconds - theirs) * 1e6:+.0f} us |")
    if unmatched:
        total = sum(s for _, _, s in unmatched)
        lines += ["", f"{len(unmatched)} ORT nodes named by no Tapestry operation "
                  f"({total * 1e6:.0f} us): " + ", ".join(
                      f"{short(n, 40)} ({k})" for n, k, _ in unmatched[:8])
                  + (" ..." if len(unmatched) > 8 else "")]
    return "\n".join(lines) + "\n"
