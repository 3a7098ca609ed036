#!/usr/bin/env python3
"""The PyTorch eager reference for scripts/gpu-measure.sh (issue 8, part b).

Runs a Tapestry graph file (graph/v1; by default testdata/graphs/
transformer_block.json) op by op in PyTorch eager mode on the GPU, with the
same shapes and dtypes, and times it with CUDA events: warm-up runs, then the
median of --repeat runs. Prints one JSON object on stdout:

  {"graph": ..., "device": ..., "torch": ..., "median_s": ..., "times_s": [...]}

Only the kernels the transformer block (and the MLP and tiny test graphs) use
are mapped: layernorm, linear, matmul, reshape, transpose, add, sub, mul, div,
softmax, gelu, relu, tanh, exp, sigmoid, neg. Inputs are standard normal,
except tensors named *mask*, which get a causal mask (0 on and below the
diagonal, -inf above) as in the Tapestry graph's doc.

    python3 bench/torch_transformer.py [GRAPH.json] [--repeat 50] [--warmup 10] [--tf32]
"""
import argparse
import json
import pathlib
import statistics
import sys

import torch
import torch.nn.functional as F

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int32": torch.int32,
    "int64": torch.int64,
}


def make_inputs(graph, device):
    produced = {out for op in graph["operations"] for out in op["outputs"].values()}
    tensors = {}
    for name, spec in graph["tensors"].items():
        if name in produced:
            continue
        dtype = DTYPES[spec["dtype"]]
        shape = spec["shape"]
        if "mask" in name and len(shape) >= 2:
            rows, cols = shape[-2], shape[-1]
            upper = torch.triu(torch.ones(rows, cols, device=device, dtype=torch.bool), 1)
            mask = torch.zeros(rows, cols, device=device, dtype=dtype)
            mask = mask.masked_fill(upper, float("-inf"))
            tensors[name] = mask.expand(*shape).contiguous()
        elif dtype.is_floating_point:
            tensors[name] = torch.randn(*shape, device=device, dtype=dtype)
        else:
            tensors[name] = torch.randint(0, 8, shape, device=device, dtype=dtype)
    return tensors


def run_graph(graph, tensors):
    env = dict(tensors)
    for op in graph["operations"]:
        kernel = op["kernel"]
        ins = op["inputs"]
        params = op.get("params", {})
        out_name = op["outputs"]["result"]
        if kernel == "layernorm":
            x = env[ins["input"]]
            env[out_name] = F.layer_norm(
                x, (x.shape[-1],), env[ins["gamma"]], env[ins["beta"]], params.get("eps", 1e-5)
            )
        elif kernel == "linear":
            env[out_name] = torch.addmm(
                env[ins["bias"]], env[ins["X"]].reshape(-1, env[ins["W"]].shape[0]), env[ins["W"]]
            ).reshape(*env[ins["X"]].shape[:-1], env[ins["W"]].shape[1])
        elif kernel == "matmul":
            env[out_name] = torch.matmul(env[ins["X"]], env[ins["W"]])
        elif kernel == "reshape":
            env[out_name] = env[ins["input"]].reshape(params["shape"])
        elif kernel == "transpose":
            # Tapestry materializes the permuted tensor; so does .contiguous().
            env[out_name] = env[ins["input"]].permute(params["perm"]).contiguous()
        elif kernel in ("add", "sub", "mul", "div"):
            fn = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}[kernel]
            env[out_name] = fn(env[ins["A"]], env[ins["B"]])
        elif kernel == "softmax":
            env[out_name] = torch.softmax(env[ins["input"]], dim=params.get("axis", -1))
        elif kernel == "gelu":
            env[out_name] = F.gelu(env[ins["input"]])  # the exact (erf) form, as Tapestry's
        elif kernel in ("relu", "tanh", "exp", "sigmoid", "neg"):
            env[out_name] = getattr(torch, kernel)(env[ins["input"]])
        else:
            raise SystemExit(f"torch_transformer.py: kernel {kernel} is not mapped")
    return [env[name] for name in graph["outputs"]]


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph", nargs="?", default=str(root / "testdata/graphs/transformer_block.json"))
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--tf32", action="store_true", help="allow TF32 in float32 matmuls")
    args = parser.parse_args()

    if not torch.cuda.is_available():
        print("torch_transformer.py: no CUDA GPU visible to PyTorch", file=sys.stderr)
        return 4
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    graph = json.loads(pathlib.Path(args.graph).read_text())
    device = torch.device("cuda")
    tensors = make_inputs(graph, device)
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    times = []
    with torch.no_grad():
        for i in range(args.warmup + args.repeat):
            start.record()
            run_graph(graph, tensors)
            stop.record()
            stop.synchronize()
            if i >= args.warmup:
                times.append(start.elapsed_time(stop) / 1e3)
    print(
        json.dumps(
            {
                "graph": graph.get("name", args.graph),
                "device": torch.cuda.get_device_name(0),
                "torch": torch.__version__,
                "tf32": args.tf32,
                "median_s": statistics.median(times),
                "times_s": times,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
