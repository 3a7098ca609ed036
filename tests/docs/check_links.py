#!/usr/bin/env python3
"""Checks the relative links and images of README.md and docs/**/*.md: every
target file must exist, and a #fragment on a Markdown page must name one of its
headings (GitHub's anchor rules: lower case, punctuation dropped, spaces to -).

    check_links.py --src .
"""
import argparse
import glob
import os
import re
import sys


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def anchors(path):
    out = set()
    in_code = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.lstrip().startswith("```"):
                in_code = not in_code
            if in_code or not line.startswith("#"):
                continue
            title = line.lstrip("#").strip()
            title = re.sub(r"`", "", title)
            slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
            out.add(slug)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", required=True)
    args = ap.parse_args()
    src = os.path.abspath(args.src)
    pages = [os.path.join(src, "README.md")]
    pages += sorted(glob.glob(os.path.join(src, "docs", "**", "*.md"), recursive=True))
    bad = []
    count = 0
    for page in pages:
        text = open(page, encoding="utf-8").read()
        text = re.sub(r"```.*?```", "", text, flags=re.S)  # links in code are not links
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target):
                continue  # http(s), mailto
            count += 1
            path, _, fragment = target.partition("#")
            full = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            rel = os.path.relpath(page, src)
            if not os.path.exists(full):
                bad.append(f"{rel}: link to {target}: no such file")
            elif fragment and full.endswith(".md") and fragment not in anchors(full):
                bad.append(f"{rel}: link to {target}: no heading #{fragment} there")
    for b in bad:
        print("FAIL " + b)
    print(f"{count - len(bad)} of {count} links resolve")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
