#!/usr/bin/env python3
"""Feeds bad and mutated inputs to every subcommand that reads them (issue 9).

  sweep_inputs.py --bin TAPESTRY --src SOURCE_DIR bad
      every file of testdata/bad/{graphs,metakernels,targets,plans,onnx}, each given
      to every subcommand that reads a file (a graph to `run`, a target to
      `expand`, ...: whatever the file, the answer is a located error)
  sweep_inputs.py --bin TAPESTRY --src SOURCE_DIR mutated [--count N] [--seed S]
      N random mutations of each valid testdata input (deterministic per seed)

For every run: the exit code is 1 or 2 (3 for `kernels check`, whose failing
examples are its documented exit 3; 0 is allowed for a mutation that happens to
stay valid, and for a file of another kind than the command reads), stderr names the input file with a location ("FILE:LINE:COL:
error:" or "FILE: error:"), a failed run leaves its output directory empty (no
output file, no temporary), and no run prints a sanitizer report or exits 70 or
by a signal. Prints one line per failure and exits 1 when any failed."""
import argparse
import concurrent.futures
import json
import os
import pathlib
import random
import re
import subprocess
import sys
import tempfile

SANITIZER = re.compile(r"AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:")

# Every subcommand that reads a file, each given the input; {F} is the input,
# {D} an empty output directory, {SRC} the source tree.
# Each with the kinds of file it is meant to read: a bad file of its kind must
# fail; a file of another kind may happen to be acceptable (an empty file is an
# empty kernel library) but must never crash, and a failure must be located.
COMMANDS = [
    (("graphs",), ["expand", "{F}", "-o", "{D}/expanded.json"]),
    (("graphs",), ["optimize", "{F}", "--iterations", "1", "-o", "{D}/plan.json",
                   "--front", "{D}/front.json"]),
    (("targets",), ["optimize", "{SRC}/testdata/graphs/tiny.json", "--target", "{F}",
                    "--iterations", "1", "-o", "{D}/plan.json"]),
    (("graphs", "plans"), ["render", "{F}", "-o", "{D}/out.svg"]),
    (("plans",), ["run", "{F}", "--check", "--outputs", "{D}/outputs"]),
    (("plans",), ["bench", "{F}", "--repeat", "1", "--warmup", "0"]),
    (("graphs", "plans"), ["trace", "{F}", "-o", "{D}/trace.json"]),
    (("plans",), ["render", "{F}", "--view", "timeline", "-o", "{D}/timeline.svg"]),
    (("metakernels",), ["kernels", "check", "-k", "{F}"]),
    (("onnx",), ["import", "{F}", "-o", "{D}/graph.json", "--weights", "{D}/weights"]),
]
KINDS = ["graphs", "metakernels", "targets", "plans", "onnx"]
# With --one-command: the one command each kind's bad files go to (the
# commands that read a kind share its loader).
ONE_COMMAND = {"graphs": "expand", "metakernels": "kernels", "targets": "optimize",
               "plans": "run", "onnx": "import"}

# Valid inputs the mutation sweep starts from, per kind.
VALID = {
    "graphs": ["testdata/graphs/*.json", "testdata/expanded/*.json"],
    "metakernels": ["testdata/metakernels/*.yaml", "metakernels/*.yaml"],
    "targets": ["testdata/targets/*.yaml", "core/cost/targets/*.yaml"],
    "plans": ["testdata/plans/*.json"],
    "onnx": ["testdata/onnx/*.onnx"],
}
# Mutants run the command of their kind (the loaders are shared between commands).
MUTANT_COMMANDS = {
    "graphs": COMMANDS[0][1],
    "metakernels": ["expand", "{SRC}/testdata/graphs/tiny.json", "-k", "{F}", "-o",
                    "{D}/expanded.json"],
    "targets": COMMANDS[2][1],
    "plans": COMMANDS[3][1],
    "onnx": COMMANDS[-1][1],
}

NUMBERS = [b"0", b"-1", b"9223372036854775807", b"9223372036854775808", b"-9223372036854775809",
           b"1e308", b"1e999", b"1.5", b"65536", b"4294967296", b"3037000500", b"17", b"-0"]
TOKENS = [b"{", b"}", b"[", b"]", b",", b":", b"\"", b"null", b"true", b"\\u0000", b"\xff",
          b"\xc3\x28", b"&a", b"*a", b"- ", b"\t", b"$", b"@", b"...", b":>", b"\n"]


def mutate(data: bytes, rng: random.Random) -> bytes:
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(8)
        n = len(data)
        if n == 0:
            return rng.choice(TOKENS)
        i = rng.randrange(n)
        j = min(n, i + rng.randint(1, 64))
        if op == 0:
            numbers = list(re.finditer(rb"-?\d+(\.\d+)?", data))
            if numbers:
                m = rng.choice(numbers)
                data = data[:m.start()] + rng.choice(NUMBERS) + data[m.end():]
        elif op == 1:
            data = data[:i] + data[j:]
        elif op == 2:
            data = data[:j] + data[i:j] + data[j:]
        elif op == 3:
            data = data[:i] + rng.choice(TOKENS) + data[i:]
        elif op == 4:
            words = list(re.finditer(rb"[A-Za-z_][A-Za-z_0-9]*", data))
            if len(words) > 1:
                a, b = rng.sample(words, 2)
                data = data[:a.start()] + b.group() + data[a.end():]
        elif op == 5:
            data = data[:i] + bytes([rng.randrange(256)]) + data[i + 1:]
        elif op == 6:
            data = data[:i]
        else:
            depth = rng.choice([64, 300, 5000])
            data = data[:i] + b"[" * depth + b"1" + b"]" * depth + data[i:]
    return data


def run_one(binary, src, kind, command, path, allow_ok, as_json=False):
    """Runs one command on one input; returns a failure text or None. With
    as_json, the run is `tapestry --format json ...` and a failure must also
    print one JSON error document on stdout."""
    with tempfile.TemporaryDirectory(prefix="tapestry-sweep-") as out:
        args = [binary] + (["--format", "json"] if as_json else []) + [a.replace("{F}", str(path)).replace("{D}", out).replace("{SRC}", src)
                           for a in command]
        try:
            proc = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=300, cwd=out)
        except subprocess.TimeoutExpired:
            return f"timed out: {' '.join(args)}"
        err = proc.stderr.decode("utf-8", "replace")
        shown = " ".join(args[1:])
        allowed = {1, 2} | ({3} if command[:2] == ["kernels", "check"] else set())
        if SANITIZER.search(err):
            return f"sanitizer report: {shown}\n{err}"
        if proc.returncode == 0 and allow_ok:
            return None
        if proc.returncode not in allowed:
            return f"exit {proc.returncode} (expected {sorted(allowed)}): {shown}\n{err}"
        located = re.compile(r"^" + re.escape(str(path)) + r"(:\d+:\d+)?: error: ", re.M)
        if proc.returncode != 3 and not located.search(err):
            return f"error not located in {path}: {shown}\n{err}"
        left = sorted(os.listdir(out))
        if left:
            return f"output left behind {left}: {shown}"
        if as_json:
            try:
                doc = json.loads(proc.stdout.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                return f"no JSON error document ({e}): {shown}\n{proc.stdout[:500]!r}"
            if doc.get("status") != "error" or doc.get("exit_code") != proc.returncode:
                return f"JSON document does not report the error: {shown}\n{doc}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--count", type=int, default=12, help="mutants per valid input")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--keep", help="directory to write failing mutants to")
    ap.add_argument("--one-command", action="store_true",
                    help="bad: each file to one command that reads its kind (the loaders are "
                         "shared by the commands; sanitizer builds)")
    ap.add_argument("mode", choices=["bad", "mutated"])
    opts = ap.parse_args()
    src = pathlib.Path(opts.src).resolve()
    binary = str(pathlib.Path(opts.bin).resolve())

    # A tapestry built without the ONNX library refuses `import` (exit 2, not
    # located at the file): ONNX inputs and the import command are left out.
    probe = subprocess.run([binary, "import", str(src / "testdata" / "onnx" / "relu.onnx"), "-q"],
                           stdin=subprocess.DEVNULL, capture_output=True)
    if b"without the ONNX library" in probe.stderr:
        KINDS.remove("onnx")
        VALID.pop("onnx")
        COMMANDS[:] = [c for c in COMMANDS if c[1][0] != "import"]

    jobs = []  # (kind, command, path, allow_ok, as_json)
    scratch = tempfile.TemporaryDirectory(prefix="tapestry-mutants-")
    if opts.mode == "bad":
        for kind in KINDS:
            files = sorted(p for p in (src / "testdata" / "bad" / kind).rglob("*") if p.is_file())
            if not files:
                print(f"no inputs in testdata/bad/{kind}", file=sys.stderr)
                return 1
            for path in files:
                for kinds, command in COMMANDS:
                    if opts.one_command and (kind not in kinds or
                                             command[0] != ONE_COMMAND[kind]):
                        continue
                    jobs.append((kind, command, path, kind not in kinds, False))
    else:
        rng = random.Random(opts.seed)
        for kind, patterns in VALID.items():
            command = MUTANT_COMMANDS[kind]
            for pattern in patterns:
                for base in sorted(src.glob(pattern)):
                    data = base.read_bytes()
                    for k in range(opts.count):
                        mutant = pathlib.Path(scratch.name) / f"{base.stem}.m{k}{base.suffix}"
                        mutant.write_bytes(mutate(data, rng))
                        jobs.append((kind, command, mutant, True, k % 2 == 1))

    failures = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=opts.jobs) as pool:
        futures = {pool.submit(run_one, binary, str(src), *job): job for job in jobs}
        for future in concurrent.futures.as_completed(futures):
            failure = future.result()
            if failure:
                failures.append(failure)
                if opts.keep:
                    os.makedirs(opts.keep, exist_ok=True)
                    path = futures[future][2]
                    pathlib.Path(opts.keep, path.name).write_bytes(path.read_bytes())
    for f in sorted(failures):
        print("FAIL " + f)
    print(f"{len(jobs)} runs, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
