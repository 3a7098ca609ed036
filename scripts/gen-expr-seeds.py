#!/usr/bin/env python3
"""Writes the expression fuzzer's seed corpus (testdata/fuzz/expr/) from the
standard library: every shape pattern, IPF and expression string of
metakernels/*.yaml, each as one fuzz input (mode byte, then "PATTERN\\nTEXT",
see tests/fuzz/fuzz_expr.cpp). Re-run after changing the standard library."""
import hashlib
import pathlib
import sys

import yaml

root = pathlib.Path(__file__).resolve().parent.parent
out = root / "testdata" / "fuzz" / "expr"
out.mkdir(parents=True, exist_ok=True)

seeds = set()
for path in sorted((root / "metakernels").glob("*.yaml")):
    for name, k in (yaml.safe_load(path.read_text()) or {}).items():
        ports = list((k.get("inputs") or {}).values())
        pattern = ports[0]["shape"] if ports and isinstance(ports[0], dict) else "[$a, $b, $c]"
        list_input = isinstance(pattern, str) and "[$i]" in pattern
        for port in list((k.get("inputs") or {}).values()) + list((k.get("outputs") or {}).values()):
            if not isinstance(port, dict):
                continue
            if "shape" in port:
                seeds.add((1, "[$a, $b, $c]\n" + port["shape"]))
            if "ipf" in port:
                seeds.add((2, pattern + "\n" + port["ipf"]))
        for key in ("index",):
            if isinstance(k.get(key), str):
                seeds.add((3 if list_input else 0, pattern + "\n" + k[key]))
        for key, value in (k.get("let") or {}).items():
            seeds.add((3 if list_input else 0, pattern + "\n" + str(value)))
        for clause in k.get("where") or []:
            text = clause if isinstance(clause, str) else clause.get("check", "")
            if text:
                seeds.add((3 if list_input else 0, pattern + "\n" + text))
        flops = (k.get("cost") or {}).get("flops")
        if isinstance(flops, str):
            seeds.add((0, pattern + "\n" + flops))

for old in out.glob("seed-*"):
    old.unlink()
for mode, text in sorted(seeds):
    data = bytes([mode]) + text.encode()
    (out / ("seed-" + hashlib.sha1(data).hexdigest()[:12])).write_bytes(data)
print(f"wrote {len(seeds)} seeds to {out.relative_to(root)}", file=sys.stderr)
