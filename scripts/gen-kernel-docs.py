#!/usr/bin/env python3
"""Writes docs/reference/kernels.md, the standard library's reference, from the
templates in metakernels/*.yaml (the same files that are embedded in tapestry),
so the page cannot drift from the kernels.

    scripts/gen-kernel-docs.py            # rewrite docs/reference/kernels.md
    scripts/gen-kernel-docs.py --check    # exit 1 if the checked-in page differs
    scripts/gen-kernel-docs.py --stdout   # print the page

tests/docs (ctest -L docs) runs --check.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "docs", "reference", "kernels.md")
TOP_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*):")


def kernel_sources(text):
    """{name: the kernel's lines of the file}, as `tapestry kernels show` prints them."""
    lines = text.splitlines()
    starts = [(i, m.group(1)) for i, l in enumerate(lines) if (m := TOP_KEY.match(l))]
    out = {}
    for n, (start, name) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        body = lines[start:end]
        while body and (not body[-1].strip() or body[-1].lstrip().startswith("#")):
            body.pop()
        out[name] = "\n".join(body)
    return out


def code(text):
    text = str(text)
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def cell(text):
    return str(text).replace("|", "\\|")


def yaml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(yaml_value(x) for x in v) + "]"
    return str(v)


def signature(name, k):
    ins = []
    for port, spec in (k.get("inputs") or {}).items():
        ins.append(port + ("[]" if spec.get("list") else "") + ("?" if spec.get("optional") else ""))
    params = []
    for p, spec in (k.get("params") or {}).items():
        s = f"{p}: {spec['type']}"
        if "default" in spec:
            s += f" = {yaml_value(spec['default'])}"
        params.append(s)
    outs = [o + ("[]" if spec.get("list") else "") for o, spec in k["outputs"].items()]
    inner = ", ".join(ins) + ("; " + ", ".join(params) if params else "")
    return f"{name}({inner}) -> {', '.join(outs)}"


def dtypes(k):
    c = (k.get("constraints") or {})
    parts = []
    for var, spec in c.items():
        var = var if var.startswith("$") else "$" + var
        parts.append(f"{code(var)} in " + ", ".join(spec["enum"]))
    return "; ".join(parts) if parts else "any"


def section(name, k, family, source):
    out = [f"### {name}", ""]
    out.append(f"{code(signature(name, k))} — family `{family}` (`metakernels/{family}.yaml`)")
    out.append("")
    out.append(" ".join(str(k.get("doc", "")).split()))
    out.append("")
    out.append("| | |")
    out.append("| --- | --- |")
    out.append(f"| dtypes | {cell(dtypes(k))} |")
    for port, spec in (k.get("inputs") or {}).items():
        kind = "input list" if spec.get("list") else "input"
        kind = "optional " + kind if spec.get("optional") else kind
        ipf = spec.get("ipf", '"[@...] :> [1...]" (identity, the default)')
        out.append(f"| {kind} `{port}` | shape {cell(code(spec['shape']))}, "
                   f"IPF {cell(code(ipf))} |")
    for p, spec in (k.get("params") or {}).items():
        d = f", default {code(yaml_value(spec['default']))}" if "default" in spec else ", required"
        out.append(f"| param `{p}` | {spec['type']}{d} |")
    for clause in k.get("where") or []:
        if isinstance(clause, dict):
            out.append(f"| where | {cell(code(clause['check']))}: {cell(clause['message'])} |")
        else:
            out.append(f"| where | {cell(code(clause))} |")
    for name, value in (k.get("let") or {}).items():
        shown = code(value) if len(str(value)) <= 120 else "(long; see the template)"
        out.append(f"| let `${name}` | {cell(shown)} |")
    out.append(f"| index space | {cell(code(k['index']))} |")
    for port, spec in k["outputs"].items():
        kind = "output list" if spec.get("list") else "output"
        shape = spec.get("shape", "the index space (the default)")
        ipf = spec.get("ipf", "identity (the default)")
        combine = f", combine `{spec['combine']}`" if spec.get("combine") else ""
        extra = f", count {code(spec['count'])}" if spec.get("count") else ""
        out.append(f"| {kind} `{port}` | shape {cell(code(shape) if 'shape' in spec else shape)}, "
                   f"IPF {cell(code(ipf) if 'ipf' in spec else ipf)}{combine}{extra} |")
    cost = k.get("cost") or {}
    if cost:
        out.append("| cost | " + ", ".join(f"{key} {cell(code(v))}" for key, v in cost.items())
                   + " per index point |")
    if k.get("body"):
        out.append(f"| body | {cell(code(k['body']))} |")
    else:
        out.append("| body | none (the doc says why); runs only where a backend has a native kernel |")
    out.append(f"| examples | {len(k.get('examples') or [])} (run by `tapestry kernels check`) |")
    out.append("")
    out.append("<details><summary>template</summary>")
    out.append("")
    out.append("```yaml")
    out.append(source)
    out.append("```")
    out.append("")
    out.append("</details>")
    out.append("")
    return out


def page():
    kernels = []
    for path in sorted(glob.glob(os.path.join(ROOT, "metakernels", "*.yaml"))):
        family = os.path.splitext(os.path.basename(path))[0]
        with open(path, encoding="utf-8") as f:
            text = f.read()
        data = yaml.safe_load(text) or {}
        sources = kernel_sources(text)
        for name, k in data.items():
            kernels.append((name, family, k, sources[name]))
    kernels.sort(key=lambda x: x[0])

    out = [
        "# Standard library kernels",
        "",
        "<!-- GENERATED by scripts/gen-kernel-docs.py from metakernels/*.yaml; do not edit."
        " A test (ctest -L docs) fails when this page differs from the generator's output. -->",
        "",
        f"The {len(kernels)} kernels compiled into `tapestry` (`tapestry kernels list`). Port and",
        "param names are what graph files use. Each template is plain YAML in",
        "`metakernels/`, written in the language of [the language reference](../language.md);",
        "`tapestry kernels show NAME` prints it and `tapestry kernels check` runs its examples.",
        "How the templates were designed (reduction dims, rows that must not be split,",
        "list ports): [metakernels-design.md](../metakernels-design.md).",
        "",
        "In signatures `port[]` is a list port, `port?` an optional one (an operation may leave it",
        "out), `name: type = default` a param. In IPFs `@` is the index point (see",
        "[concepts](../concepts.md)).",
        "",
        f"{sum(1 for _, _, k, _ in kernels if k.get('body'))} kernels have a `body`: what one shard computes, as a block",
        "expression ([language.md](../language.md#bodies-what-a-kernel-computes)). A test runs each",
        "native CPU kernel against its body on random shards, reduction dims split",
        "included, for every dtype the kernel allows; the others say in their doc why no body can say",
        "what they do.",
        "",
        "| kernel | inputs | params | outputs | reduction (combine) | family |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, family, k, _ in kernels:
        ins = ", ".join(p + ("[]" if s.get("list") else "") + ("?" if s.get("optional") else "")
                        for p, s in (k.get("inputs") or {}).items())
        params = ", ".join((k.get("params") or {}).keys()) or "-"
        outs = ", ".join(p + ("[]" if s.get("list") else "") for p, s in k["outputs"].items())
        combines = sorted({s["combine"] for s in k["outputs"].values() if s.get("combine")})
        out.append(f"| [{name}](#{name}) | {ins} | {params} | {outs} | "
                   f"{', '.join(combines) or '-'} | {family} |")
    out.append("")
    out.append("## Kernels")
    out.append("")
    for name, family, k, source in kernels:
        out += section(name, k, family, source)
    return "\n".join(out).rstrip("\n") + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--stdout", action="store_true")
    ap.add_argument("--bin", help="with --check: also require the kernels `BIN kernels list` "
                    "lists (the embedded library) to be the ones of metakernels/")
    args = ap.parse_args()
    text = page()
    if args.stdout:
        sys.stdout.write(text)
        return 0
    if args.check:
        try:
            with open(PAGE, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = ""
        if current != text:
            print(f"{os.path.relpath(PAGE, ROOT)} is out of date: run scripts/gen-kernel-docs.py")
            return 1
        if args.bin:
            listed = json.loads(subprocess.run([args.bin, "--format", "json", "kernels", "list"],
                                               check=True, capture_output=True).stdout)
            embedded = sorted(k["name"] for k in listed["kernels"])
            documented = sorted(re.findall(r"^### (\S+)$", text, re.M))
            if embedded != documented:
                print(f"tapestry kernels list gives {embedded}, the page documents {documented}")
                return 1
        print(f"{os.path.relpath(PAGE, ROOT)} is up to date")
        return 0
    with open(PAGE, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(PAGE, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
