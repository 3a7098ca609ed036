#!/usr/bin/env python3
"""Check that no source file is over 800 lines and no function over 120 lines,
unless a comment says why (docs/architecture.md, "Sizes").

A file over the limit passes when one of its first 15 lines is a comment that
mentions "800 lines". A function over the limit passes when a comment in the
10 lines before its first line, or in its first 5 lines, mentions "120 lines".
Functions are found by brace matching after comments, strings and character
literals are blanked: a "{" at the level of a namespace, class or struct that
follows a ")" (optionally with const, noexcept, override, a trailing return
type or a constructor's initializer list) opens a function body; lambdas and
nested blocks count toward the function that holds them.

    python3 scripts/check_sizes.py [--src DIR]
"""
import argparse
import os
import re
import sys

FILE_LIMIT = 800
FUNCTION_LIMIT = 120
TOPS = ("core", "backends", "cli", "bench", "tests")
SUFFIXES = (".cpp", ".hpp", ".h", ".cu", ".c")
FILE_WHY = re.compile(r"800 lines")
FUNCTION_WHY = re.compile(r"120 lines")
SCOPE_HEAD = re.compile(r"\b(namespace|class|struct|union|enum|extern\s+\"C\")\b[^;{()]*$")


def blank(text):
    """Comments, strings and character literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + (m.group(1) if m else "") + '"', i)
            j = n if end < 0 else end + len(m.group(1) if m else "") + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # digit separator 1'000
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(code):
    """(first line, last line) of each function body, 1-based, from blanked code."""
    found = []
    stack = []  # entries: "scope" or ("function", start line) or "block"
    line = 1
    last_token_end = 0
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c == "{":
            head = code[last_token_end:i]
            head_line = head.rstrip().split("\n")[-1] if head.strip() else ""
            in_function = any(isinstance(s, tuple) for s in stack)
            if in_function:
                stack.append("block")
            elif SCOPE_HEAD.search(head.replace("\n", " ")):
                stack.append("scope")
            elif re.search(r"\)\s*(const|noexcept|override|final|mutable|\s|->\s*[\w:<>,&*\s]+)*$",
                           head) or re.search(r"\)\s*:\s*[\s\S]*\)\s*$", head):
                start = line - head[head.rfind(")") :].count("\n") if ")" in head else line
                stack.append(("function", start))
            else:
                stack.append("block")  # an initializer, an array, a brace-init at namespace level
            del head_line
            last_token_end = i + 1
        elif c == "}":
            if stack:
                top = stack.pop()
                if isinstance(top, tuple):
                    found.append((top[1], line))
            last_token_end = i + 1
        elif c == ";":
            last_token_end = i + 1
    return found


def signature_start(lines, brace_line):
    """The line where the declaration that owns a body starts (walks back over its head)."""
    k = brace_line - 1
    while k > 0:
        prev = lines[k - 1].strip()
        if not prev or prev.endswith((";", "}", "{")) or prev.startswith(("#", "//", "template")):
            break
        k -= 1
    return k + 1


def sources(src):
    """(path relative to src, text) of every C/C++/CUDA source under TOPS."""
    for top in TOPS:
        for root, dirs, names in os.walk(os.path.join(src, top)):
            dirs[:] = [d for d in dirs if d not in ("build", "generated")]
            for name in sorted(n for n in names if n.endswith(SUFFIXES)):
                path = os.path.join(root, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    yield os.path.relpath(path, src), f.read()


def problems_in(rel, text):
    lines = text.split("\n")
    count = len(lines) - (1 if text.endswith("\n") else 0)
    if count > FILE_LIMIT and not any(FILE_WHY.search(l) for l in lines[:15]):
        yield (f"{rel}: {count} lines (over {FILE_LIMIT}) with no comment in its first 15 "
               f"lines saying why it must be ({FILE_WHY.pattern!r})")
    for first, last in functions(blank(text)):
        length = last - first + 1
        if length <= FUNCTION_LIMIT:
            continue
        start = signature_start(lines, first)
        if not any(FUNCTION_WHY.search(l) for l in lines[max(0, start - 11) : first + 5]):
            yield (f"{rel}:{start}: a function of {length} lines (over {FUNCTION_LIMIT}) with "
                   f"no comment saying why ({FUNCTION_WHY.pattern!r} just above it)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default=os.path.join(os.path.dirname(__file__), ".."))
    src = os.path.abspath(ap.parse_args().src)
    problems = []
    files = 0
    for rel, text in sources(src):
        files += 1
        problems.extend(problems_in(rel, text))
    for p in problems:
        print(p)
    if problems:
        print(f"check_sizes: {len(problems)} problem(s) in {files} files")
        return 1
    print(f"check_sizes: {files} files: no file or function too long without a reason")
    return 0


if __name__ == "__main__":
    sys.exit(main())
