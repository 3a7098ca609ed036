#!/usr/bin/env python3
"""`mpirun --oversubscribe -n K tapestry optimize` on localhost (issue 11).

With --ranks K: rank 0 alone writes the plan and the front and prints the
summary (rank 0 runs in one directory, ranks 1..K-1 in another, which must stay
empty); the front says it came from K ranks; two runs with the same seed, rank
count and budget give byte-identical plans and identical fronts (but for the
search's wall time); another seed gives another search.

With --errors: an input error, a usage error and a malformed flag on every rank,
and an input error on rank 1 only, end the job with the error's exit code, the
message printed once (by the lowest failing rank).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL: " + what, file=sys.stderr)


def mpirun(args, apps, cwd, timeout=240):
    """apps: [(ranks, workdir, argv)], one MPMD app context each."""
    cmd = [args.mpirun, "--oversubscribe"]
    for i, (ranks, wdir, argv) in enumerate(apps):
        if i:
            cmd.append(":")
        cmd += ["-n", str(ranks), "-wdir", wdir, args.bin] + argv
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env["LC_ALL"] = "C"
    print("$ " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=timeout)
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    if out:
        print(out, end="" if out.endswith("\n") else "\n")
    if err:
        print(err, end="" if err.endswith("\n") else "\n", file=sys.stderr)
    return proc.returncode, out, err


def without_seconds(front):
    front = dict(front)
    front["search"] = {k: v for k, v in front["search"].items() if k != "seconds"}
    return front


def optimize_args(args, seed, extra=()):
    return ["optimize", os.path.join(args.testdata, "graphs", "mlp.json"), "--target", "h100x8",
            "--seed", str(seed), "--iterations", "20", "--exchange-every", "4",
            "-o", "plan.json", "--front", "front.json"] + list(extra)


def run_ranks(args, tmp):
    k = args.ranks
    # 1. Rank 0 in root/, the others in others/: only root/ gets files.
    root = os.path.join(tmp, "root")
    others = os.path.join(tmp, "others")
    os.mkdir(root)
    os.mkdir(others)
    argv = optimize_args(args, 5, ["--format", "json"])
    rc, out, err = mpirun(args, [(1, root, argv), (k - 1, others, argv)], tmp)
    check(rc == 0, f"exit code {rc}, expected 0")
    check(sorted(os.listdir(root)) == ["front.json", "plan.json"],
          f"rank 0's directory holds {sorted(os.listdir(root))}")
    check(os.listdir(others) == [], f"ranks 1..{k - 1} wrote {os.listdir(others)}")
    check(err == "", "something on stderr")
    try:
        summary = json.loads(out)  # exactly one document: rank 0's
    except json.JSONDecodeError as e:
        check(False, f"stdout is not one JSON document: {e}")
        summary = {"search": {}}
    check(summary.get("status") == "ok", "summary status")
    check(summary["search"].get("ranks") == k, f"summary says ranks {summary['search'].get('ranks')}")
    check(summary["search"].get("iterations") == 20, "summary iterations")
    if sorted(os.listdir(root)) != ["front.json", "plan.json"]:
        return
    with open(os.path.join(root, "front.json")) as f:
        front = json.load(f)
    with open(os.path.join(root, "plan.json"), "rb") as f:
        plan = f.read()
    check(front["search"]["ranks"] == k, "front search.ranks")
    check(front["search"]["exchange_every"] == 4, "front search.exchange_every")
    check(len(front["front"]) > 1, "a front of more than one plan")
    check(json.loads(plan)["tapestry"] == "plan/v1", "plan/v1")

    # 2. The same seed, ranks and budget again (all ranks in one directory,
    # text output): the same plan, byte for byte, and the same front.
    again = os.path.join(tmp, "again")
    os.mkdir(again)
    rc, out, err = mpirun(args, [(k, again, optimize_args(args, 5))], tmp)
    check(rc == 0, f"second run: exit code {rc}")
    check(out.count("on the front after 20 iterations") == 1, "one text summary, from rank 0")
    check(f", {k} islands)" in out, "the summary names the islands")
    check(err == "", "second run: something on stderr")
    check(sorted(os.listdir(again)) == ["front.json", "plan.json"],
          f"second run left {sorted(os.listdir(again))}")
    if sorted(os.listdir(again)) == ["front.json", "plan.json"]:
        with open(os.path.join(again, "plan.json"), "rb") as f:
            check(f.read() == plan, "the same seed gave another plan")
        with open(os.path.join(again, "front.json")) as f:
            check(without_seconds(json.load(f)) == without_seconds(front),
                  "the same seed gave another front")

    # 3. Another seed is another search.
    other = os.path.join(tmp, "other")
    os.mkdir(other)
    rc, out, err = mpirun(args, [(k, other, optimize_args(args, 6, ["-q"]))], tmp)
    check(rc == 0 and out == "" and err == "", f"seed 6: exit {rc}, quiet")
    if os.path.exists(os.path.join(other, "front.json")):
        with open(os.path.join(other, "front.json")) as f:
            check(json.load(f)["front"] != front["front"], "seed 6 gave seed 5's front")


def run_errors(args, tmp):
    k = args.ranks
    wdir = os.path.join(tmp, "errors")
    os.mkdir(wdir)
    rc, out, err = mpirun(args, [(k, wdir, ["optimize", "missing.json", "-o", "plan.json"])], tmp)
    check(rc == 1, f"missing graph: exit code {rc}, expected 1")
    check(err.count("missing.json: error: cannot open file") == 1,
          "missing graph: the error printed once")
    rc, out, err = mpirun(args, [(k, wdir, optimize_args(args, 1)[:4] + ["--exhaustive"])], tmp)
    check(rc == 2, f"--exhaustive: exit code {rc}, expected 2")
    check(err.count("error: --exhaustive runs in one process") == 1,
          "--exhaustive: the error printed once")
    rc, out, err = mpirun(args, [(k, wdir, optimize_args(args, 1)[:4] + ["--iterations", "x"])],
                          tmp)
    check(rc == 2, f"malformed flag: exit code {rc}, expected 2")
    check(err.count("error: --iterations: expected a positive whole number, got 'x'") == 1,
          "malformed flag: the error printed once")
    # Only rank 1 fails (rank 0's graph loads and it searches on): rank 1
    # reports, once, in JSON too, and rank 0 does not leave before it has.
    good = optimize_args(args, 1, ["--format", "json"])
    bad = ["optimize", "missing.json", "-o", "plan.json", "--format", "json"]
    rc, out, err = mpirun(args, [(1, wdir, good), (k - 1, wdir, bad)], tmp)
    check(rc == 1, f"one rank's missing graph: exit code {rc}, expected 1")
    check(err.count("missing.json: error: cannot open file") == 1,
          "one rank's missing graph: the error printed once")
    try:
        doc = json.loads(out)  # exactly one document: rank 1's
        check(doc["status"] == "error" and doc["exit_code"] == 1, f"JSON error document {doc}")
    except json.JSONDecodeError as e:
        check(False, f"one rank's missing graph: stdout is not one JSON document ({e})")
    check(os.listdir(wdir) == [], f"failed runs left {os.listdir(wdir)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--testdata", required=True)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--errors", action="store_true")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    args.testdata = os.path.abspath(args.testdata)
    with tempfile.TemporaryDirectory(prefix="tapestry-mpi-") as tmp:
        if args.errors:
            run_errors(args, tmp)
        else:
            run_ranks(args, tmp)
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed", file=sys.stderr)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
