#!/usr/bin/env python3
"""Validates the files of testdata/ (and the built-in targets, and the docs'
examples) against the JSON Schemas in docs/schemas/, checks that the bad inputs
whose fault is structural are rejected by them, and, with --bin, that what the
built tapestry writes now (expanded graphs, a plan, a front) still validates.

    validate_schemas.py --src . [--bin build/release/bin/tapestry]

Target YAML files are validated as the JSON that loading the YAML gives.
Works with python3-jsonschema 4.10 (Debian 12) and later (>= 4.18 uses the
`referencing` registry).
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import jsonschema
import yaml

SCHEMAS = ["graph", "expanded", "target", "plan", "front"]
TAGS = {"graph/v1": "graph", "expanded/v1": "expanded", "plan/v1": "plan", "front/v1": "front"}

# Bad inputs that are structurally fine: only the tool can reject them (the
# reason is in the comment). Every other file in testdata/bad/{graphs,targets,plans}
# must fail its schema. Keeping this list exact makes a schema that becomes
# looser or stricter show up here.
SEMANTIC_ONLY = {
    # graphs: well-formed JSON of the right shape, wrong meaning
    "graphs/bad_param_type.json": "param types are the kernel's",
    "graphs/bad_param_value.json": "param values are the kernel's",
    "graphs/conv_two_activations.json": "a kernel's where clause (silu and hard_swish both set)",
    "graphs/bad_perm.json": "a where clause of transpose",
    "graphs/bad_reshape.json": "reshape's element counts",
    "graphs/broadcast_mismatch.json": "shapes of two inputs",
    "graphs/constant_produced.json": "which tensors an operation produces",
    "graphs/cycle.json": "a cycle",
    "graphs/declared_dtype_conflict.json": "declared vs inferred dtype",
    "graphs/declared_shape_conflict.json": "declared vs inferred shape",
    "graphs/default_name_collision.json": "OPERATION.PORT names another tensor",
    "graphs/dtype_mismatch.json": "dtypes of two inputs",
    "graphs/dtype_not_allowed.json": "the kernel's dtype constraint",
    "graphs/duplicate_key.json": "JSON parsers keep the last of two equal keys",
    "graphs/duplicate_operation_name.json": "uniqueness of names in an array",
    "graphs/empty_list_port.json": "a list port needs at least one tensor",
    "graphs/expanded_edited_flops.json": "stored flops differ from the expansion's",
    "graphs/expanded_wrong_producer.json": "stored producer differs from the expansion's",
    "graphs/list_port_given_name.json": "which ports are lists is the kernel's",
    "graphs/missing_input_port.json": "the kernel's ports",
    "graphs/missing_param.json": "the kernel's params",
    "graphs/missing_required_port.json": "which ports are optional is the kernel's",
    "graphs/optional_port_mismatch.json": "shapes of two inputs",
    "graphs/self_cycle.json": "a cycle",
    "graphs/shape_mismatch.json": "shapes of two inputs",
    "graphs/single_port_given_list.json": "which ports are lists is the kernel's",
    "graphs/split_count_mismatch.json": "split's sections vs its outputs",
    "graphs/two_producers.json": "two operations write one tensor",
    "graphs/unknown_input_port.json": "the kernel's ports",
    "graphs/unknown_kernel.json": "kernel names",
    "graphs/unknown_kernel_no_hint.json": "kernel names",
    "graphs/unknown_output_port.json": "the kernel's ports",
    "graphs/unknown_param.json": "the kernel's params",
    "graphs/unknown_tensor.json": "an input no one declares or produces",
    "graphs/unknown_graph_output.json": "an output no one declares or produces",
    "graphs/unnamed_list_output.json": "list outputs need names",
    "graphs/element_count_overflow.json": "the product of the dims overflows int64",
    # targets
    "targets/duplicate_key.yaml": "YAML loaders keep the last of two equal keys",
    "targets/nodes_mismatch.yaml": "nodes.count x devices_per_node vs devices.count",
    "targets/not_whole_bytes.yaml": "0.1KiB is not a whole number of bytes",
    "targets/size_too_large.yaml": "the size overflows int64",
    # plans: each is a valid plan shape whose content disagrees with the rebuilt plan
    "plans/bad_split.json": "the split vs the search space",
    "plans/device.json": "a stored device vs the rebuilt plan",
    "plans/schedule_task.json": "a stored schedule task vs the rebuilt plan",
    "plans/selection.json": "a stored selection vs the IPF projection",
    "plans/shard_index.json": "a stored shard index vs the split",
    "plans/transfer_region.json": "a stored transfer vs the rebuilt plan",
}
# Bad inputs that no schema can see because they do not parse.
UNPARSABLE = {"graphs/invalid_utf8.json", "graphs/malformed.json", "graphs/trailing_comma.json",
              "graphs/empty.json", "targets/invalid_yaml.yaml",
              # nested 2000 levels deep, and invalid UTF-8 (tests/cli/cases/limits.t)
              "targets/deep_yaml.yaml", "targets/fuzz_invalid_utf8.yaml",
              "targets/fuzz_escaped_utf8.yaml"}


def make_validators(schema_dir):
    schemas = {}
    for name in SCHEMAS:
        with open(os.path.join(schema_dir, f"{name}.schema.json"), encoding="utf-8") as f:
            schemas[name] = json.load(f)
    for name, schema in schemas.items():
        jsonschema.Draft202012Validator.check_schema(schema)
    validators = {}
    try:
        from referencing import Registry, Resource  # jsonschema >= 4.18
        registry = Registry().with_resources(
            (s["$id"], Resource.from_contents(s)) for s in schemas.values())
        for name, schema in schemas.items():
            validators[name] = jsonschema.Draft202012Validator(schema, registry=registry)
    except ImportError:
        store = {s["$id"]: s for s in schemas.values()}
        for name, schema in schemas.items():
            resolver = jsonschema.RefResolver.from_schema(schema, store=store)
            validators[name] = jsonschema.Draft202012Validator(schema, resolver=resolver)
    return validators


def load(path):
    with open(path, encoding="utf-8") as f:
        if path.endswith((".yaml", ".yml")):
            return yaml.safe_load(f)
        return json.load(f)


def schema_for(path, doc):
    if path.endswith((".yaml", ".yml")):
        return "target"
    if isinstance(doc, dict) and doc.get("tapestry") in TAGS:
        return TAGS[doc["tapestry"]]
    if isinstance(doc, dict) and "devices" in doc and "links" in doc:
        return "target"
    return None


def errors(validator, doc):
    return sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))


def describe(error):
    where = "/" + "/".join(str(p) for p in error.absolute_path)
    return f"at {where}: {error.message[:300]}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", required=True)
    ap.add_argument("--bin", help="the built tapestry: also validate what it writes now")
    args = ap.parse_args()
    src = os.path.abspath(args.src)
    validators = make_validators(os.path.join(src, "docs", "schemas"))
    failures = []
    checked = {name: 0 for name in SCHEMAS}

    def validate(path, doc, schema, label=None):
        label = label or os.path.relpath(path, src)
        found = errors(validators[schema], doc)
        checked[schema] += 1
        for e in found[:5]:
            failures.append(f"{label} ({schema} schema) {describe(e)}")

    # Good files: every one must validate.
    good = []
    for pattern in ["testdata/graphs/*.json", "testdata/expanded/*.json", "testdata/plans/*.json",
                    "testdata/plans/stale/*.json", "testdata/fronts/*.json", "testdata/render/*.json", "testdata/targets/*.yaml",
                    "core/cost/targets/*.yaml", "core/cost/targets/local/*.yaml",
                    "docs/examples/*.json"]:
        good += sorted(glob.glob(os.path.join(src, pattern)))
    for path in good:
        doc = load(path)
        schema = schema_for(path, doc)
        if schema is None:
            failures.append(f"{os.path.relpath(path, src)}: no schema for this file")
            continue
        validate(path, doc, schema)
        if schema == "plan":
            validate(path, doc["target"], "target", os.path.relpath(path, src) + " /target")

    # Bad files: structural faults must be rejected.
    rejected = 0
    for path in sorted(glob.glob(os.path.join(src, "testdata", "bad", "*", "*"))):
        rel = os.path.relpath(path, os.path.join(src, "testdata", "bad"))
        kind = rel.split("/")[0]
        if kind not in ("graphs", "targets", "plans"):
            continue
        if rel in UNPARSABLE:
            try:
                load(path)
            except Exception:
                continue
            failures.append(f"testdata/bad/{rel}: listed as unparsable but it parses")
            continue
        doc = load(path)
        schema = {"targets": "target", "plans": "plan"}.get(kind) or \
            ("expanded" if isinstance(doc, dict) and doc.get("tapestry") == "expanded/v1" else "graph")
        invalid = bool(errors(validators[schema], doc))
        if rel in SEMANTIC_ONLY and invalid:
            failures.append(f"testdata/bad/{rel}: listed as semantic only, but the {schema} "
                            f"schema rejects it: {describe(errors(validators[schema], doc)[0])}")
        elif rel not in SEMANTIC_ONLY and not invalid:
            failures.append(f"testdata/bad/{rel}: the {schema} schema accepts it (a structural "
                            f"fault the schema should catch, or add it to SEMANTIC_ONLY)")
        rejected += invalid

    # What the tool writes now.
    if args.bin:
        tapestry = os.path.abspath(args.bin)
        with tempfile.TemporaryDirectory(prefix="tapestry-schemas-") as work:
            def tool(*argv):
                proc = subprocess.run([tapestry, *argv], cwd=src, capture_output=True, text=True)
                if proc.returncode != 0:
                    failures.append(f"tapestry {' '.join(argv)}: exit {proc.returncode}: "
                                    f"{proc.stderr.strip()[:300]}")
                return proc.returncode == 0
            for graph in sorted(glob.glob(os.path.join(src, "testdata", "graphs", "*.json"))):
                out = os.path.join(work, os.path.basename(graph))
                if tool("expand", graph, "-o", out, "-q"):
                    validate(out, load(out), "expanded", f"expand {os.path.basename(graph)}")
            plan, front = os.path.join(work, "p.json"), os.path.join(work, "f.json")
            if tool("optimize", "testdata/graphs/transformer_block.json", "--target", "2x-h100x8",
                    "--iterations", "3", "-q", "-o", plan, "--front", front):
                validate(plan, load(plan), "plan", "optimize transformer_block plan")
                validate(front, load(front), "front", "optimize transformer_block front")
            # Rewrites: the plan records the original graph, the front the sites.
            if tool("optimize", "testdata/graphs/convnet.json", "--target", "cpu-2",
                    "--iterations", "3", "-q", "-o", plan, "--front", front):
                doc = load(front)
                validate(plan, load(plan), "plan", "optimize convnet plan (rewritten)")
                validate(front, doc, "front", "optimize convnet front (rewritten)")
                if not doc.get("rewrites") or "rewrites" not in doc["front"][0]:
                    failures.append("optimize convnet front: no rewrites recorded")
            if tool("optimize", "testdata/graphs/tiny.json", "--target", "cpu-2", "--exhaustive",
                    "--select", "knee", "-q", "-o", plan, "--front", front):
                validate(plan, load(plan), "plan", "optimize --exhaustive tiny plan")
                validate(front, load(front), "front", "optimize --exhaustive tiny front")
            # A plan made with -k embeds its user templates ("kernels").
            scaled = os.path.join(work, "scaled.json")
            with open(scaled, "w") as f:
                json.dump({"tapestry": "graph/v1", "name": "scaled",
                           "tensors": {"x": {"dtype": "float32", "shape": [4, 8]}},
                           "operations": [{"name": "s", "kernel": "scale",
                                           "inputs": {"input": "x"},
                                           "outputs": {"result": "y"}}]}, f)
            if tool("optimize", scaled, "-k", "testdata/metakernels/user_ops.yaml", "--target",
                    "cpu-2", "--iterations", "3", "-q", "-o", plan):
                doc = load(plan)
                if "scale" not in doc.get("kernels", {}):
                    failures.append("optimize -k: the plan does not embed kernel scale")
                validate(plan, doc, "plan", "optimize -k plan with embedded kernels")

    for f in failures:
        print("FAIL " + f)
    counts = ", ".join(f"{n} {name}" for name, n in checked.items())
    print(f"validated {counts}; {rejected} bad inputs rejected by their schema")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
