#!/usr/bin/env python3
"""Golden CLI tests for tapestry, in a cram-like format.

A case file (tests/cli/cases/*.t) holds commands and what they must print:

    ## a comment (lines starting with '## ' are ignored everywhere)
    $ tapestry --version
    tapestry 0.1.0
    $ tapestry expand missing.json
    ! missing.json: error: cannot open file: No such file or directory
    [exit 1]

After a '$ ' line comes the expected output: stdout lines as they are, stderr
lines prefixed with '! ', then '[exit N]' when the exit code is not 0, then
'[created NAME]' for every file the command left in the working directory (so a
failing command that leaves a partial output file fails its test).

Each command runs with bash in a fresh empty working directory, with the
tapestry binary first on PATH, $TESTDATA / $SRC pointing into the source
tree and $XDG_CACHE_HOME an empty directory of its own (saved calibrations). Run with --update to rewrite the expected output from what happens.
"""
import argparse
import difflib
import os
import shutil
import subprocess
import sys
import tempfile


def parse_case(text):
    """Returns ([(comments, command, [expected lines])], trailing comments): each
    command with the '## ' comment lines written before it."""
    cases = []
    comments = []
    for line in text.splitlines():
        if line.startswith("## "):
            comments.append(line)
            continue
        if line.startswith("$ "):
            cases.append((comments, line[2:], []))
            comments = []
        elif cases:
            cases[-1][2].append(line)
        elif line.strip():
            raise SystemExit(f"line before the first command: {line!r}")
    return cases, comments


def run_command(command, binary_dir, src, workdir, timeout):
    env = dict(os.environ)
    env["PATH"] = binary_dir + os.pathsep + env.get("PATH", "")
    env["SRC"] = src
    env["TESTDATA"] = os.path.join(src, "testdata")
    env["LC_ALL"] = "C"
    # A cache of its own (no saved calibration of this machine leaks in).
    cache = tempfile.mkdtemp(prefix="tapestry-cache.")
    env["XDG_CACHE_HOME"] = cache
    before = set(os.listdir(workdir))
    try:
        proc = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=workdir, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return [f"[timed out after {timeout}s]"]
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    out = []
    out += proc.stdout.decode("utf-8", "replace").splitlines()
    out += ["! " + l for l in proc.stderr.decode("utf-8", "replace").splitlines()]
    if proc.returncode != 0:
        # A signal shows as a negative code: a crash is never a passing outcome.
        out.append(f"[exit {proc.returncode}]")
    for name in sorted(set(os.listdir(workdir)) - before):
        out.append(f"[created {name}]")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, help="path to the tapestry binary")
    ap.add_argument("--src", required=True, help="source tree root")
    ap.add_argument("--update", action="store_true", help="rewrite expected output")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("cases", nargs="+")
    args = ap.parse_args()

    binary_dir = os.path.dirname(os.path.abspath(args.bin))
    failed = 0
    for case_path in args.cases:
        with open(case_path, encoding="utf-8") as f:
            text = f.read()
        commands, trailer = parse_case(text)
        if not commands:
            print(f"{case_path}: no commands", file=sys.stderr)
            failed += 1
            continue
        workdir = tempfile.mkdtemp(prefix="tapestry-golden-")
        try:
            new_text = []
            case_failed = False
            for comments, command, expected in commands:
                actual = run_command(command, binary_dir, args.src, workdir, args.timeout)
                new_text += comments
                new_text.append("$ " + command)
                new_text += actual
                if actual != expected:
                    case_failed = True
                    print(f"--- {case_path}: $ {command}")
                    for l in difflib.unified_diff(expected, actual, "expected", "actual",
                                                  lineterm=""):
                        print(l)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        if args.update:
            # Every comment stays in front of the command it was written before.
            with open(case_path, "w", encoding="utf-8") as f:
                f.write("\n".join(new_text + trailer) + "\n")
        elif case_failed:
            failed += 1
    if failed:
        print(f"0 passed, {failed} failed" if len(args.cases) == 1 else
              f"{len(args.cases) - failed} passed, {failed} failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
