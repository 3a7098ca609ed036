#!/usr/bin/env python3
"""Runs every command shown in the documentation and checks what it prints.

Every ```console block of README.md, docs/*.md and docs/**/*.md is a test:

    ```console
    $ tapestry expand testdata/graphs/tiny.json -o tiny.expanded.json
    expanded tiny: ...
    $ tapestry expand missing.json
    missing.json: error: cannot open file: No such file or directory
    [exit 1]
    ```

- A line starting with `$ ` is a command, run with `bash -c` (as a reader's
  shell runs it: a pipeline's status is its last command's unless the snippet
  says `set -o pipefail`); a
  command line ending in a backslash continues on the next line.
- The lines after it, up to the next command or the end of the block, are what
  it must print: its standard output, then its standard error (trailing blank
  lines aside). No lines means it must print nothing.
- A last line `[exit N]` says the command must exit with N; otherwise it must
  exit 0.
- `...` is a wildcard: a line that is only `...` stands for any number of lines
  (none included), and `...` inside a line for any text within that line. Use
  it for what differs from machine to machine (times, thread counts) and to
  elide long output; everything else is compared exactly.

Per documentation file, the commands run in order, in one fresh temporary
directory, so a later command can use the files an earlier one wrote. That
directory holds links to the repository's testdata/, docs/, metakernels/ and
scripts/ (so paths read as from the repository root, and nothing is written
into the checkout), the built tapestry is first on PATH, LC_ALL=C, and
XDG_CACHE_HOME is the directory's .cache (a calibration saved there lasts for
the file's later commands only).

Blocks marked ```sh, ```text, ```json, ```yaml etc. are not run.

    run_doc_snippets.py --bin build/release/bin/tapestry --src . [FILE.md ...]
    run_doc_snippets.py ... --print FILE.md     # show what each command prints
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

LINKED = ["testdata", "docs", "metakernels", "scripts"]
EXIT_RE = re.compile(r"^\[exit (-?\d+)\]$")


class Command:
    def __init__(self, path, line, text):
        self.path = path
        self.line = line  # 1-based line of the `$ ` line in the Markdown file
        self.text = text
        self.expected = []
        self.exit = 0


def parse_markdown(path):
    """Returns the commands of every ```console block, in order."""
    commands = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    in_block = False
    fence = ""
    current = None
    continuing = False
    for number, raw in enumerate(lines, 1):
        stripped = raw.strip()
        if not in_block:
            m = re.match(r"^(\s*)(```+|~~~+)\s*(\S*)", raw)
            if m:
                in_block = True
                fence = m.group(2)
                indent = len(m.group(1))
                runnable = m.group(3) == "console"
                current = None
                continuing = False
            continue
        if stripped.startswith(fence) and stripped.strip("`~") == "":
            in_block = False
            continue
        if not runnable:
            continue
        line = raw[indent:] if raw[:indent].strip() == "" else raw.lstrip()
        if continuing:
            current.text += "\n" + line
            continuing = line.endswith("\\")
            continue
        if line.startswith("$ "):
            current = Command(path, number, line[2:])
            commands.append(current)
            continuing = line.endswith("\\")
            continue
        if current is None:
            if line.strip():
                raise SystemExit(f"{path}:{number}: output before the first command of a "
                                 f"console block: {line!r}")
            continue
        current.expected.append(line)
    if in_block:
        raise SystemExit(f"{path}: a fenced block is not closed")
    for c in commands:
        while c.expected and c.expected[-1] == "":
            c.expected.pop()
        if c.expected:
            m = EXIT_RE.match(c.expected[-1])
            if m:
                c.exit = int(m.group(1))
                c.expected.pop()
    return commands


def line_regex(pattern):
    parts = pattern.split("...")
    return re.compile("".join(re.escape(p) if i == 0 else ".*" + re.escape(p)
                              for i, p in enumerate(parts)) + r"\Z", re.S)


def matches(expected, actual):
    """Matches lines with `...` wildcards (whole-line: any lines; in a line: any text)."""
    memo = {}

    def go(i, j):
        key = (i, j)
        if key in memo:
            return memo[key]
        if i == len(expected):
            result = j == len(actual)
        elif expected[i] == "...":
            result = any(go(i + 1, k) for k in range(j, len(actual) + 1))
        elif j < len(actual) and line_regex(expected[i]).match(actual[j]):
            result = go(i + 1, j + 1)
        else:
            result = False
        memo[key] = result
        return result

    return go(0, 0)


def make_workdir(src):
    work = tempfile.mkdtemp(prefix="tapestry-docs-")
    for name in LINKED:
        os.symlink(os.path.join(src, name), os.path.join(work, name))
    return work


def run(command, binary_dir, src, workdir, timeout):
    env = dict(os.environ)
    env["PATH"] = binary_dir + os.pathsep + env.get("PATH", "")
    env["LC_ALL"] = "C"
    # Saved calibrations (`tapestry calibrate`) stay within the file's run.
    env["XDG_CACHE_HOME"] = os.path.join(workdir, ".cache")
    env.pop("COLUMNS", None)
    try:
        proc = subprocess.run(["bash", "-c", command], cwd=workdir, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return [f"[timed out after {timeout}s]"], None
    out = proc.stdout.decode("utf-8", "replace").splitlines()
    err = proc.stderr.decode("utf-8", "replace").splitlines()
    out += err
    while out and not out[-1].strip():
        out.pop()  # trailing blank lines are invisible on the page
    return out, proc.returncode


def doc_files(src):
    files = [os.path.join(src, "README.md")]
    files += sorted(glob.glob(os.path.join(src, "docs", "**", "*.md"), recursive=True))
    return [f for f in files if os.path.isfile(f)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, help="path to the tapestry binary")
    ap.add_argument("--src", required=True, help="source tree root")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--print", action="store_true",
                    help="print what every command prints instead of checking it")
    ap.add_argument("files", nargs="*", help="Markdown files (default: all of them)")
    args = ap.parse_args()

    src = os.path.abspath(args.src)
    binary_dir = os.path.dirname(os.path.abspath(args.bin))
    files = [os.path.abspath(f) for f in args.files] or doc_files(src)
    total = failed = 0
    for path in files:
        commands = parse_markdown(path)
        if not commands:
            continue
        rel = os.path.relpath(path, src)
        workdir = make_workdir(src)
        try:
            for c in commands:
                total += 1
                actual, code = run(c.text, binary_dir, src, workdir, args.timeout)
                if args.print:
                    print(f"--- {rel}:{c.line}: $ {c.text}")
                    print("\n".join(actual))
                    if code != 0:
                        print(f"[exit {code}]")
                    continue
                ok = code == c.exit and matches(c.expected, actual)
                if not ok:
                    failed += 1
                    print(f"FAIL {rel}:{c.line}: $ {c.text}")
                    print(f"  exit: expected {c.exit}, got {code}")
                    print("  expected:")
                    print("\n".join("    " + l for l in c.expected) or "    (nothing)")
                    print("  actual:")
                    print("\n".join("    " + l for l in actual) or "    (nothing)")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.print:
        return 0
    print(f"{total - failed} of {total} documented commands passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
