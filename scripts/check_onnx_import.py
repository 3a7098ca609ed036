#!/usr/bin/python3
"""Check `tapestry import` numerically: run an imported graph in PyTorch, one
operation at a time with the kernels' documented semantics, and compare with
the PyTorch module the model was exported from.

    /usr/bin/python3 scripts/check_onnx_import.py --bin build/release/bin/tapestry [MODEL...]

MODEL is one of mlp3, bert_layer, bert_layer_dynamic (imported with --dim
batch=3 --dim seq=5: the shape arithmetic of a dynamic export folded) and
gpt2_block (its causal mask a bool constant), models of
scripts/make_onnx_models.py; default all four. Needs torch 1.13 (Debian's
/usr/bin/python3). Until the standard library has every kernel the imported
graphs use, this is how their mapping is checked beyond shapes; then `tapestry
run --check` on the imported graph is the real test. Prints the largest
absolute difference per model and exits 1 when one is above 1e-5.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_onnx_models as models  # noqa: E402

UNARY = {"relu": torch.relu, "tanh": torch.tanh, "exp": torch.exp, "sigmoid": torch.sigmoid,
         "neg": torch.neg, "erf": torch.erf, "sqrt": torch.sqrt, "log": torch.log,
         "abs": torch.abs, "reciprocal": torch.reciprocal,
         "gelu": torch.nn.functional.gelu}
BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
          "pow": torch.pow}
SCALAR = {"add_scalar": lambda x, v: x + v, "mul_scalar": lambda x, v: x * v,
          "rsub_scalar": lambda x, v: v - x, "rdiv_scalar": lambda x, v: v / x,
          "div_scalar": lambda x, v: x / v,
          "pow_scalar": lambda x, v: x ** v}


def npy_name(name):
    safe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
    return "".join(c if c in safe else "%%%02X" % b for c, b in zip(name, name.encode())) + ".npy"


def evaluate(op, env):
    k, p = op["kernel"], op.get("params", {})
    ins = {port: [env[t] for t in v] if isinstance(v, list) else env[v]
           for port, v in op["inputs"].items()}
    x = ins.get("input")
    if k in UNARY:
        return UNARY[k](x)
    if k in BINARY:
        return BINARY[k](ins["A"], ins["B"])
    if k in SCALAR:
        return SCALAR[k](x, p["value"])
    if k == "clip":
        return torch.clamp(x, p["min"], p["max"])
    if k == "where":
        return torch.where(ins["condition"].bool(), ins["X"], ins["Y"])
    if k == "matmul":
        return ins["X"] @ ins["W"]
    if k == "linear":
        return ins["X"] @ ins["W"] + ins["bias"]
    if k == "transpose":
        return x.permute(*p["perm"])
    if k == "reshape":
        return x.reshape(p["shape"])
    if k == "softmax":
        return torch.softmax(x, p["axis"])
    if k == "layernorm":
        return nn.functional.layer_norm(x, [x.shape[-1]], ins["gamma"], ins["beta"],
                                        p.get("eps", 1e-5))
    if k == "slice":
        return x[tuple(slice(s, e) for s, e in zip(p["starts"], p["ends"]))]
    if k in ("mean", "sum", "max"):
        r = getattr(x, k)(p["axis"], keepdim=p["keepdims"])
        return r.values if k == "max" else r
    if k == "concat":
        return torch.cat(ins["tensors"], p["axis"])
    if k == "split":
        return list(torch.split(x, p["sections"], dim=p["axis"]))
    raise SystemExit(f"check_onnx_import: no reference for kernel {k}")


def module_and_input(name):
    torch.manual_seed(0)
    if name == "mlp3":
        return models.Mlp3(), torch.randn(4, 16)
    if name in ("bert_layer", "bert_layer_dynamic"):
        return nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0,
                                          batch_first=True), torch.randn(2, 8, 64)
    if name == "gpt2_block":
        return models.Gpt2Block(), torch.randn(2, 8, 32)
    raise SystemExit(f"check_onnx_import: unknown model {name}")


def check(binary, src, name, work):
    weights = os.path.join(work, name)
    graph_path = os.path.join(work, name + ".json")
    dims = ["--dim", "batch=3", "--dim", "seq=5"] if name.endswith("_dynamic") else []
    subprocess.run([binary, "import", os.path.join(src, "testdata", "onnx", name + ".onnx"),
                    "-q", "-o", graph_path, "--weights", weights] + dims, check=True)
    graph = json.load(open(graph_path))
    module, x = module_and_input(name)
    module.eval()
    x = torch.randn(3, 5, 64) if name.endswith("_dynamic") else torch.randn(*x.shape)
    env = {"x": x}
    for tensor in graph["tensors"]:
        path = os.path.join(weights, npy_name(tensor))
        if os.path.exists(path):
            env[tensor] = torch.from_numpy(np.load(path))
    for op in graph["operations"]:
        result = evaluate(op, env)
        for port, names in op["outputs"].items():
            if isinstance(names, list):
                env.update(zip(names, result))
            else:
                env[names] = result
    with torch.no_grad():
        expected = module(x)
    diff = (env[graph["outputs"][0]] - expected).abs().max().item()
    print(f"{name}: {len(graph['operations'])} operations, max abs difference {diff:.3g}")
    return diff <= 1e-5


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--src", default=root)
    ap.add_argument("models", nargs="*", default=["mlp3", "bert_layer", "bert_layer_dynamic", "gpt2_block"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        ok = all([check(os.path.abspath(args.bin), args.src, m, work) for m in args.models])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
