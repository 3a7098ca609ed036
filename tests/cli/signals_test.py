#!/usr/bin/env python3
"""Signals (issue 9). SIGINT and SIGTERM on a running `tapestry optimize`: the search stops
at the next generation boundary, the best front so far is written (plan and
front, complete JSON), nothing else is left in the output directory, and the
exit code is 130. A second signal ends the process at once, still without a
partial file. A closed standard output (SIGPIPE) is a write error, exit 1, never
death by the signal.

  signals_test.py --bin TAPESTRY --src SOURCE_DIR"""
import argparse
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time


def start(binary, src, out):
    graph = pathlib.Path(src) / "testdata" / "graphs" / "transformer_block.json"
    return subprocess.Popen(
        [binary, "optimize", str(graph), "--target", "h100x8", "--budget-seconds", "300",
         "-o", f"{out}/plan.json", "--front", f"{out}/front.json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--src", required=True)
    opts = ap.parse_args()
    opts.src = str(pathlib.Path(opts.src).resolve())
    binary = str(pathlib.Path(opts.bin).resolve())
    failures = []

    for sig in (signal.SIGINT, signal.SIGTERM):
        with tempfile.TemporaryDirectory(prefix="tapestry-interrupt-") as out:
            proc = start(binary, opts.src, out)
            time.sleep(3)  # loading and the baselines take well under this
            began = time.monotonic()
            proc.send_signal(sig)
            try:
                stdout, stderr = proc.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                failures.append(f"{sig.name}: did not stop within 120 s")
                continue
            waited = time.monotonic() - began
            err = stderr.decode("utf-8", "replace")
            if proc.returncode != 130:
                failures.append(f"{sig.name}: exit {proc.returncode}, expected 130\n{err}")
                continue
            if "interrupted after" not in err:
                failures.append(f"{sig.name}: no 'interrupted after' message:\n{err}")
            files = sorted(os.listdir(out))
            if files != ["front.json", "plan.json"]:
                failures.append(f"{sig.name}: output directory holds {files}")
                continue
            plan = json.loads(pathlib.Path(out, "plan.json").read_text())
            front = json.loads(pathlib.Path(out, "front.json").read_text())
            if plan.get("tapestry") != "plan/v1" or front.get("tapestry") != "front/v1":
                failures.append(f"{sig.name}: outputs are not a plan and a front")
            print(f"{sig.name}: exit 130 after {waited:.2f} s, wrote plan.json and front.json")

    # Two signals: the second ends the process (by the signal) at once.
    with tempfile.TemporaryDirectory(prefix="tapestry-interrupt-") as out:
        proc = start(binary, opts.src, out)
        time.sleep(3)
        proc.send_signal(signal.SIGINT)
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            failures.append("double SIGINT: did not stop within 120 s")
        else:
            files = sorted(os.listdir(out))
            # Either the first signal's graceful stop finished writing (both
            # files, complete) or the second killed it: never a partial file.
            if proc.returncode not in (130, -signal.SIGINT):
                failures.append(f"double SIGINT: exit {proc.returncode}")
            for name in files:
                if name not in ("plan.json", "front.json"):
                    failures.append(f"double SIGINT: left {name}")
                else:
                    json.loads(pathlib.Path(out, name).read_text())
            print(f"double SIGINT: exit {proc.returncode}, left {files}")

    # Standard output is a pipe nobody reads: EPIPE, exit 1, a message, no signal.
    read_end, write_end = os.pipe()
    os.close(read_end)
    graph = pathlib.Path(opts.src) / "testdata" / "graphs" / "transformer_block.json"
    proc = subprocess.run([binary, "expand", str(graph)], stdout=write_end,
                          stderr=subprocess.PIPE, timeout=120)
    os.close(write_end)
    err = proc.stderr.decode("utf-8", "replace")
    if proc.returncode != 1 or "cannot write to standard output" not in err:
        failures.append(f"closed stdout: exit {proc.returncode}, expected 1\n{err}")
    else:
        print("closed stdout: exit 1, " + err.strip())

    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
