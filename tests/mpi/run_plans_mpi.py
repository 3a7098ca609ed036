#!/usr/bin/env python3
"""`mpirun --oversubscribe -n K tapestry run|bench` on localhost (issue 25).

--plans: plans of every testdata graph (optimized for cpu-2, h100x8, 2x-h100x8
and the two-node CPU target) and the testdata plans run with --check on K
ranks: exit 0, the outputs byte-identical to the single-process run's, rank 0
alone writes and reports, and the JSON report says which devices each rank
held (contiguous blocks of the used devices; whole nodes on two-nodes.yaml).

--report: the JSON reports of run and bench on K ranks (ranks, rank_devices;
a rank past the plan's devices holds none), the text reports' rank line.

--errors: a missing input file on one rank only, a missing plan on every rank,
and a failure on one rank in the middle of the run (the test hook
TAPESTRY_TEST_FAIL_RANK: that rank's first message fails, or with ":kill"
the rank is killed there) end every rank non-zero, each within 60 s, with the
message printed once.

--cuda: run and bench --backend cuda on K ranks: without a GPU, exit 4 on
every rank within 60 s with one message (rank 0's); with one, run --check
passes and the report names the cross-rank transport (docs/distributed.md).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

FAILURES = []
GRAPHS = ["concat_split_embedding", "convnet", "mlp", "tiny", "transformer_block"]
TARGETS = ["cpu-2", "h100x8", "2x-h100x8", "two-nodes"]


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL: " + what, file=sys.stderr)


def environment(extra=None):
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env["LC_ALL"] = "C"
    env.update(extra or {})
    return env


def show(cmd, proc):
    print("$ " + " ".join(cmd), flush=True)
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    if err:
        print(err, end="" if err.endswith("\n") else "\n", file=sys.stderr)
    return out, err


def tapestry(args, argv, cwd):
    cmd = [args.bin] + argv
    proc = subprocess.run(cmd, cwd=cwd, env=environment(), stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=240)
    out, err = show(cmd, proc)
    return proc.returncode, out, err


def mpirun(args, apps, cwd, timeout=240, extra_env=None):
    """apps: [(ranks, workdir, argv)], one MPMD app context each. Returns
    (exit code, stdout, stderr, seconds); exit code None when it timed out."""
    cmd = [args.mpirun, "--oversubscribe"]
    for i, (ranks, wdir, argv) in enumerate(apps):
        if i:
            cmd.append(":")
        cmd += ["-n", str(ranks), "-wdir", wdir, args.bin] + argv
    began = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=environment(extra_env), stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print("$ " + " ".join(cmd) + "\n  timed out", flush=True)
        return None, "", "", time.monotonic() - began
    out, err = show(cmd, proc)
    return proc.returncode, out, err, time.monotonic() - began


def make_plans(args, tmp):
    plans = []
    for graph in GRAPHS:
        for target in TARGETS:
            name = f"{graph}_{target}.json"
            path = os.path.join(tmp, name)
            target_arg = (os.path.join(args.testdata, "targets", "two-nodes.yaml")
                          if target == "two-nodes" else target)
            rc, _, _ = tapestry(args, ["optimize", os.path.join(args.testdata, "graphs",
                                                                graph + ".json"),
                                       "--target", target_arg, "--seed", "1", "--iterations", "30",
                                       "-o", path, "-q"], tmp)
            check(rc == 0, f"optimize {name}: exit {rc}")
            if rc == 0:
                plans.append((path, target))
    plan_dir = os.path.join(args.testdata, "plans")
    for name in sorted(os.listdir(plan_dir)):  # not plans/stale (formats.md#plan)
        if name.endswith(".json"):
            plans.append((os.path.join(plan_dir, name), "testdata"))
    return plans


def expected_rank_devices(used, ranks, target):
    """docs/distributed.md: whole nodes when the target has at least as many
    nodes as ranks, else contiguous blocks of the used devices."""
    def block(i, n):
        small, extra = divmod(n, ranks)
        return i // (small + 1) if i < extra * (small + 1) else \
            extra + (i - extra * (small + 1)) // small
    held = [[] for _ in range(ranks)]
    nodes = {"2x-h100x8": (2, 8), "two-nodes": (2, 2)}.get(target)
    for i, d in enumerate(used):
        if nodes and nodes[0] >= ranks:
            held[block(d // nodes[1], nodes[0])].append(d)
        else:
            held[block(i, len(used))].append(d)
    return held


def partial_moves(path):
    """The plan's transfers that move a partial of a reduction: (from, to)."""
    with open(path) as f:
        doc = json.load(f)
    found = []

    def walk(o):
        if isinstance(o, dict):
            for t in o.get("transfers", []) if isinstance(o.get("transfers"), list) else []:
                if isinstance(t, dict) and t.get("reduction") is not None:
                    found.append((t["from"], t["to"]))
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(doc)
    return found


def run_plans(args, tmp):
    k = args.ranks
    plans = make_plans(args, tmp)
    check(len(plans) >= 20, f"only {len(plans)} plans")
    crossing = 0  # partial moves between ranks (reduction steps over MPI)
    for path, target in plans:
        base = os.path.splitext(os.path.basename(path))[0]
        single = os.path.join(tmp, base + ".single")
        rc, out, _ = tapestry(args, ["run", path, "--outputs", single, "--format", "json"], tmp)
        check(rc == 0, f"{base}: single-process run exit {rc}")
        used = []
        if rc == 0:
            doc = json.loads(out)
            check("ranks" not in doc and "rank_devices" not in doc,
                  f"{base}: a single-process report names ranks")
        root = os.path.join(tmp, base + ".root")
        others = os.path.join(tmp, base + ".others")
        os.mkdir(root)
        os.mkdir(others)
        argv = ["run", path, "--check", "--outputs", "out", "--trace", "trace.json",
                "--format", "json"]
        rc, out, err, _ = mpirun(args, [(1, root, argv), (k - 1, others, argv)], tmp)
        check(rc == 0, f"{base}: {k} ranks, exit {rc}")
        check(os.listdir(others) == [], f"{base}: ranks 1..{k - 1} wrote {os.listdir(others)}")
        check(sorted(os.listdir(root)) == ["out", "trace.json"],
              f"{base}: rank 0 wrote {sorted(os.listdir(root))}")
        try:
            doc = json.loads(out)  # exactly one document: rank 0's
        except json.JSONDecodeError as e:
            check(False, f"{base}: stdout is not one JSON document ({e})")
            continue
        check(doc["status"] == "ok" and doc["check"]["ok"], f"{base}: status {doc['status']}")
        check(doc["ranks"] == k, f"{base}: ranks {doc.get('ranks')}")
        held = doc["rank_devices"]
        used = sorted(d for devices in held for d in devices)
        check(len(used) == doc["devices_used"], f"{base}: rank_devices {held}")
        rank_of = {d: r for r, devices in enumerate(held) for d in devices}
        crossing += sum(1 for a, b in partial_moves(path) if rank_of.get(a) != rank_of.get(b))
        if target != "testdata":
            check(held == expected_rank_devices(used, k, target),
                  f"{base}: rank_devices {held}, expected "
                  f"{expected_rank_devices(used, k, target)}")
        names = sorted(os.listdir(single)) if os.path.isdir(single) else []
        check(names and sorted(os.listdir(os.path.join(root, "out"))) == names,
              f"{base}: outputs {names}")
        for name in names:
            with open(os.path.join(single, name), "rb") as a, \
                    open(os.path.join(root, "out", name), "rb") as b:
                check(a.read() == b.read(), f"{base}: {name} differs from the single-process run")
    check(crossing > 0, "no plan moves a partial between ranks")


def run_report(args, tmp):
    k = args.ranks
    plan = os.path.join(args.testdata, "plans", "mlp_2dev.json")  # devices 0 and 1
    rc, out, err, _ = mpirun(args, [(k, tmp, ["run", plan, "--format", "json"])], tmp)
    check(rc == 0, f"run json: exit {rc}")
    doc = json.loads(out) if rc == 0 else {}
    check(doc.get("ranks") == k, f"run json: ranks {doc.get('ranks')}")
    check(doc.get("rank_devices") == [[0], [1]] + [[] for _ in range(k - 2)],
          f"run json: rank_devices {doc.get('rank_devices')}")
    check(doc.get("workers") == 2, f"run json: workers {doc.get('workers')}")
    check(doc.get("cross_rank_transport") == "mpi",
          f"run json: cross_rank_transport {doc.get('cross_rank_transport')}")
    rc, out, err, _ = mpirun(args, [(k, tmp, ["run", plan])], tmp)
    check(rc == 0 and out == "", f"run text: exit {rc}")
    line = "on %d ranks: rank 0 device 0, rank 1 device 1" % k + \
        "".join(f", rank {r} no device" for r in range(2, k)) + "; between ranks: mpi"
    check(err.count("ran ") == 1 and line + "\n" in err, f"run text: no line '{line}'")
    bench = ["bench", plan, "--repeat", "3", "--max-repeat", "3", "--warmup", "1",
             "--format", "json"]
    rc, out, err, _ = mpirun(args, [(k, tmp, bench)], tmp)
    check(rc == 0, f"bench json: exit {rc}")
    doc = json.loads(out) if rc == 0 else {}
    check(doc.get("ranks") == k, f"bench json: ranks {doc.get('ranks')}")
    check(doc.get("rank_devices") == [[0], [1]] + [[] for _ in range(k - 2)],
          f"bench json: rank_devices {doc.get('rank_devices')}")
    check(doc.get("cross_rank_transport") == "mpi",
          f"bench json: cross_rank_transport {doc.get('cross_rank_transport')}")
    timed = doc.get("plan", {})
    check(len(timed.get("times_s", [])) == 3 and timed.get("measured_s", 0) > 0 and
          timed.get("workers") == 2, f"bench json: the plan timed 3 times by 2 workers: {timed}")
    check(len(doc.get("single_device", {}).get("times_s", [])) == 3,
          "bench json: the single-device baseline timed 3 times")
    rc, out, err, _ = mpirun(args, [(k, tmp, bench[:-2])], tmp)
    check(rc == 0 and out.count("bench ") == 1 and f"on {k} ranks:" in out and
          "; between ranks: mpi\n" in out, f"bench text: exit {rc}, one report with its rank line")
    check(os.listdir(tmp) == [], f"runs without --outputs left {os.listdir(tmp)}")


def run_cuda(args, tmp):
    """--backend cuda under mpirun. Without a GPU (or without the CUDA
    backend): run and bench exit 4 on every rank within 60 s, the message
    printed once (by rank 0), one JSON document with --format json. With a
    GPU: run --check passes and names the transport that moved the
    cross-rank bytes."""
    k = args.ranks
    plan = os.path.join(args.testdata, "plans", "mlp_2dev.json")
    rc, _, _ = tapestry(args, ["run", plan, "--backend", "cuda"], tmp)
    if rc == 0:
        # With NCCL off, over MPI (any number of GPUs); with NCCL, only where
        # each rank's device has a GPU of its own (NCCL refuses two ranks of
        # one communicator on one GPU).
        try:
            gpus = subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                                  timeout=60).stdout.decode().count("GPU ")
        except (OSError, subprocess.TimeoutExpired):
            gpus = 1
        cases = [({"TAPESTRY_NCCL": "0"}, ("cuda-aware-mpi", "mpi-host-staged"))]
        if gpus >= 2:
            cases.append(({}, ("nccl",)))
        argv = ["run", plan, "--backend", "cuda", "--check", "--format", "json"]
        for env, expected in cases:
            rc, out, err, _ = mpirun(args, [(k, tmp, argv)], tmp, extra_env=env)
            check(rc == 0, f"cuda on {k} ranks with a GPU ({env}): exit {rc}")
            doc = json.loads(out) if rc == 0 else {}
            check(doc.get("cross_rank_transport") in expected,
                  f"cuda ({env}): cross_rank_transport {doc.get('cross_rank_transport')}")
        return
    check(rc == 4, f"cuda in one process without a GPU: exit {rc}, expected 4")
    for argv in (["run", plan, "--backend", "cuda"],
                 ["bench", plan, "--backend", "cuda", "--repeat", "1", "--warmup", "0"]):
        what = argv[0]
        rc, out, err, seconds = mpirun(args, [(k, tmp, argv)], tmp, timeout=120)
        check(rc == 4, f"{what} --backend cuda on {k} ranks: exit {rc}, expected 4")
        check(seconds < 60, f"{what} --backend cuda on {k} ranks took {seconds:.0f} s")
        check(err.count("error:") == 1 and out == "",
              f"{what} --backend cuda: one message (stderr {err!r})")
        check("rank " not in err, f"{what} --backend cuda: the message names a rank: {err!r}")
        rc, out, err, _ = mpirun(args, [(k, tmp, argv + ["--format", "json"])], tmp, timeout=120)
        check(rc == 4, f"{what} --backend cuda --format json: exit {rc}")
        try:
            doc = json.loads(out)  # exactly one document: rank 0's
            check(doc.get("status") == "error" and doc.get("exit_code") == 4,
                  f"{what} --backend cuda: JSON error document {doc}")
        except json.JSONDecodeError as e:
            check(False, f"{what} --backend cuda: stdout is not one JSON document ({e})")
    # Every rank's own exit code: each rank runs under a shell that records it
    # (and exits 0, so that mpirun ends no rank early).
    record = 'rc=0; "$0" "$@" || rc=$?; echo $rc > "rc.$OMPI_COMM_WORLD_RANK"'
    cmd = [args.mpirun, "--oversubscribe", "-n", str(k), "-wdir", tmp, "sh", "-c", record,
           args.bin, "run", plan, "--backend", "cuda"]
    proc = subprocess.run(cmd, cwd=tmp, env=environment(), stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=120)
    show(cmd, proc)
    codes = []
    for r in range(k):
        name = os.path.join(tmp, f"rc.{r}")
        if os.path.exists(name):
            with open(name) as f:
                codes.append(f.read().strip())
            os.remove(name)
    check(codes == ["4"] * k, f"--backend cuda: the ranks' exit codes {codes}, expected 4 each")
    check(os.listdir(tmp) == [], f"--backend cuda left {os.listdir(tmp)}")


def run_errors(args, tmp):
    k = args.ranks
    plan = os.path.join(args.testdata, "plans", "mlp_2dev.json")
    good = os.path.join(tmp, "good")
    os.mkdir(good)
    inputs = os.path.join(tmp, "inputs")  # holds none of the graph's inputs
    os.mkdir(inputs)
    # 1. Ranks 1.. read --inputs from a directory without the inputs, rank 0
    # draws them: the error, before the ranks meet, is printed once (by rank 1)
    # and every rank exits 1.
    rc0 = tapestry(args, ["run", plan, "--inputs", inputs], tmp)[0]
    check(rc0 == 1, f"an empty --inputs in one process: exit {rc0}")
    rc, out, err, secs = mpirun(args, [(1, good, ["run", plan]),
                                       (k - 1, tmp, ["run", plan, "--inputs", inputs])], tmp,
                                timeout=60)
    check(rc == 1, f"one rank's missing inputs: exit {rc}, expected 1")
    check(err.count("error:") == 1, "one rank's missing inputs: the error printed once")
    check(secs < 60, f"one rank's missing inputs took {secs:.0f} s")
    # ... in JSON: one error document on stdout, rank 1's.
    rc, out, err, secs = mpirun(args, [(1, good, ["--format", "json", "run", plan]),
                                       (k - 1, tmp, ["--format", "json", "run", plan,
                                                     "--inputs", inputs])], tmp, timeout=60)
    try:
        doc = json.loads(out)
        check(rc == 1 and doc["status"] == "error" and doc["exit_code"] == 1,
              f"one rank's missing inputs in JSON: exit {rc}, {doc}")
    except json.JSONDecodeError as e:
        check(False, f"one rank's missing inputs in JSON: stdout is not one document ({e})")
    # 2. A missing plan on every rank: once, exit 1.
    rc, out, err, secs = mpirun(args, [(k, tmp, ["run", "missing.json"])], tmp, timeout=60)
    check(rc == 1, f"missing plan: exit {rc}, expected 1")
    check(err.count("missing.json: error: cannot open file") == 1,
          "missing plan: the error printed once")
    # 3. Rank 1 fails in the middle of the run while rank 0 waits
    # for its messages: rank 1 says so and ends the job (MPI_Abort), no hang.
    for command in (["run", plan, "--check"], ["bench", plan, "--repeat", "3"]):
        rc, out, err, secs = mpirun(args, [(k, tmp, command)], tmp, timeout=60,
                                    extra_env={"TAPESTRY_TEST_FAIL_RANK": "1"})
        check(rc is not None and rc != 0, f"{command[0]}: rank 1 failing: exit {rc}")
        check(err.count("rank 1 of %d: error: test hook" % k) == 1,
              f"{command[0]}: rank 1's message printed once")
        check(secs < 60, f"{command[0]}: rank 1 failing took {secs:.0f} s")
    # 4. Rank 1 is killed (SIGKILL) at its first message: mpirun ends the
    # others, non-zero, within the minute.
    rc, out, err, secs = mpirun(args, [(k, tmp, ["run", plan])], tmp, timeout=60,
                                extra_env={"TAPESTRY_TEST_FAIL_RANK": "1:kill"})
    check(rc is not None and rc != 0, f"rank 1 killed: exit {rc}")
    check(secs < 60, f"rank 1 killed: took {secs:.0f} s")


def run_calibrate(args, tmp):
    """`mpirun -n K tapestry calibrate`: the link between ranks, measured into a
    target of K nodes that optimize reads and `mpirun -n K run` runs."""
    k = args.ranks
    cache = {"XDG_CACHE_HOME": os.path.join(tmp, "cache")}
    rc, out, err, _ = mpirun(args, [(k, tmp, ["calibrate", "--budget-seconds", "1"])], tmp,
                             extra_env=cache)
    check(rc == 2 and "give -o TARGET.yaml" in err and err.count("error:") == 1,
          f"calibrate without -o: exit {rc}, one usage error")
    rc, out, err, _ = mpirun(args, [(k, tmp, ["--format", "json", "calibrate", "--budget-seconds",
                                              "1", "-o", "ranks.yaml"])], tmp, extra_env=cache)
    check(rc == 0, f"calibrate: exit {rc}")
    doc = json.loads(out) if rc == 0 else {}
    link = doc.get("inter_rank", {})
    check(link.get("ranks") == k and link.get("latency_s", 0) > 0 and
          link.get("bandwidth_bytes_per_s", 0) > 0 and len(link.get("one_way", [])) == 8,
          f"calibrate json: inter_rank {link}")
    check(doc.get("saved") is None and not os.path.exists(cache["XDG_CACHE_HOME"]),
          "calibrate under mpirun saved a calibration for --target local")
    check(sorted(os.listdir(tmp)) == ["ranks.yaml"], f"calibrate wrote {os.listdir(tmp)}")
    if rc != 0:
        return
    plan = os.path.join(tmp, "plan.json")
    rc, _, _ = tapestry(args, ["optimize", os.path.join(args.testdata, "graphs", "mlp.json"),
                               "--target", "ranks.yaml", "--seed", "1", "--iterations", "30",
                               "-o", plan, "-q"], tmp)
    check(rc == 0, f"optimize for the calibrated {k}-rank target: exit {rc}")
    if rc == 0:
        rc, out, err, _ = mpirun(args, [(k, tmp, ["--format", "json", "run", plan, "--check"])],
                                 tmp)
        doc = json.loads(out) if rc == 0 else {}
        check(rc == 0 and doc.get("ranks") == k and doc.get("check", {}).get("ok") is True,
              f"run --check of its plan on {k} ranks: exit {rc}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--testdata", required=True)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("mode", choices=["plans", "report", "errors", "calibrate", "cuda"])
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    args.testdata = os.path.abspath(args.testdata)
    with tempfile.TemporaryDirectory(prefix="tapestry-mpi-run-") as tmp:
        {"plans": run_plans, "report": run_report, "errors": run_errors,
         "calibrate": run_calibrate, "cuda": run_cuda}[args.mode](args, tmp)
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed", file=sys.stderr)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
