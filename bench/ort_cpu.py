#!/usr/bin/python3
"""ONNX Runtime as the CPU speed reference (issue 32, docs/performance.md).

For each model of testdata/onnx, in one run on this machine: Tapestry on one
device and Tapestry's plan for a calibrated `local` target (one `tapestry
bench` of the plan `optimize --target local` chose measures both), and ONNX
Runtime (the npm package onnxruntime-node, CPU) with 1 and 2 intra-op
threads. Each round runs every variant once, round robin (the order rotates
from round to round), and each figure is the median over the rounds of each
run's median; every variant reads the same weights and the same input.
Prints a table of the times and of Tapestry's best over ORT with 2 threads
(below 1: Tapestry is faster), and their geometric mean.

    /usr/bin/python3 bench/ort_cpu.py --bin build/release/bin/tapestry [--models ...]
        [--rounds 3] [--image-size 224] [--layer-size 768,128] [--json FILE]
        [--figure FILE.png] [--quick]

--image-size exports the CNNs anew at that image side (testdata's are 64 x
64, where per-run costs weigh more and tensors stay small: a cache bug that
only regions of 512 KiB to 1 MiB hit went unseen there). --layer-size D,S
exports the transformer layers anew at width D (D/64 heads, a 4D MLP) on one
sequence of S tokens, with seeded weights (testdata's are D 64 or 32 on
2 x 8 tokens, where a fused attention 9x slower than the chain it replaced
went unseen).

ONNX Runtime is installed on first use with the machine's npm into a cache
folder (--ort-dir); where node or npm is missing or the npm registry cannot be
reached, the script says so and exits 77 (the ctest's skip code).
"""
import argparse
import datetime
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import mapping, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ORT_VERSION = "1.30.0"
UNAVAILABLE = 77  # exit code: ONNX Runtime cannot be had on this machine

# The models of testdata/onnx (the same names as tests/torch/torch_models.py,
# which bench/torch_cpu.py measures), each with its own inputs; every other
# graph input is a weight. The _dynamic variants repeat mlp3 and bert_layer
# with named dims, and relu is one node: they add nothing to a speed table.
MODELS = {
    "mlp3": ["x"],
    "resnet18": ["image"],
    "resnet50": ["image"],
    "mobilenet_v2": ["image"],
    "bert_layer": ["x"],
    "bert_padded_layer": ["x"],  # Hugging Face's BERT layer, a padding mask on the scores
    "gpt2_block": ["x"],
    "gpt2_block_opset14": ["x"],  # the same block, LayerNorm as its opset-14 chain
    "llama_layer": ["x"],  # RMSNorm, rotary embedding, causal attention, SwiGLU (opset 14)
}
# Models outside testdata, exported by this script (structure only), asked for
# by name with --models: not in the default set, so the default table and its
# geometric mean stay those of testdata.
EXTRA_MODELS = {
    # torchvision's LR-ASPP MobileNetV3-Large segmentation (its `out` map):
    # bilinear Resize to the image size, hardswish, squeeze-excitation.
    "lraspp_mobilenet_v3": ["image"],
    # DCGAN's generator (64 x 64 images from a 100-d code): transposed
    # convolutions of kernel 4 and stride 2, batch norms, ReLUs, a tanh.
    "dcgan_generator": ["z"],
    # torchvision's Swin-T at 224 x 224: shifted windows (the attention mask
    # folds at import), patch merging by slices of step 2.
    "swin_t": ["image"],
    # torchvision's RegNetX-400MF and ResNeXt-50 32x4d at 224 x 224: grouped
    # convolutions (groups of 16 channels; 32 groups).
    "regnet_x_400mf": ["image"],
    "resnext50_32x4d": ["image"],
    # More torchvision classifiers at 224 x 224, to find where Tapestry is
    # slow: MobileNetV3 (hardswish, squeeze-excitation, 5 x 5 depthwise),
    # EfficientNet-B0 (SiLU, squeeze-excitation), ConvNeXt-T (7 x 7
    # depthwise, LayerNorm over channels), ShuffleNetV2 (channel shuffles),
    # DenseNet-121 (concatenations), ViT-B/16 (attention over 197 tokens).
    "mobilenet_v3_large": ["image"],
    "efficientnet_b0": ["image"],
    "convnext_tiny": ["image"],
    "shufflenet_v2_x1_0": ["image"],
    "densenet121": ["image"],
    "vit_b_16": ["image"],
}
# The EXTRA_MODELS that are torchvision classifiers, exported at 224 x 224.
TORCHVISION_CLASSIFIERS = ["swin_t", "regnet_x_400mf", "resnext50_32x4d", "mobilenet_v3_large",
                           "efficientnet_b0", "convnext_tiny", "shufflenet_v2_x1_0",
                           "densenet121", "vit_b_16"]
VARIANTS = ["tapestry", "ort1", "ort2"]
# The CNNs, which --image-size exports anew at that size (testdata's are 64 x 64).
CNNS = ["resnet18", "resnet50", "mobilenet_v2"]
TESTDATA_IMAGE_SIDE = 64


class Unavailable(Exception):
    """ONNX Runtime cannot be installed or run here (no node, no npm registry)."""


def npy_name(tensor):
    """A tensor's .npy file name: its name percent-encoded (docs/reference/formats.md)."""
    safe = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
    return "".join(chr(b) if b in safe else "%%%02X" % b for b in tensor.encode()) + ".npy"


def run(cmd, env=None, what=None):
    proc = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{what or ' '.join(cmd)}: exit {proc.returncode}\n{proc.stderr}")
    return proc.stdout


# ---------------------------------------------------------------- ONNX Runtime

def default_ort_dir():
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "tapestry-bench", f"onnxruntime-node-{ORT_VERSION}")


def installed_version(ort_dir):
    try:
        with open(os.path.join(ort_dir, "node_modules", "onnxruntime-node", "package.json")) as f:
            return json.load(f).get("version")
    except (OSError, ValueError):
        return None


def ensure_ort(ort_dir):
    """Installs onnxruntime-node into ort_dir unless it is there; returns its NODE_PATH.

    --ignore-scripts: the CPU library ships inside the package, and its install
    script only downloads GPU binaries (which fails offline). The package holds
    the libraries of every platform (290 MB); those of other platforms are
    removed. The install goes to a fresh folder renamed into place, so a
    failed one leaves nothing."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        raise Unavailable("node and npm are not on PATH (scripts/install-deps.sh installs them)")
    node_path = os.path.join(ort_dir, "node_modules")
    if installed_version(ort_dir) != ORT_VERSION:
        parent = os.path.dirname(ort_dir)
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".install-", dir=parent)
        with open(os.path.join(tmp, "package.json"), "w") as f:
            json.dump({"private": True, "description": "ONNX Runtime for bench/ort_cpu.py"}, f)
        print(f"ort_cpu: installing onnxruntime-node@{ORT_VERSION} into {ort_dir}",
              file=sys.stderr)
        proc = subprocess.run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund",
                               "--fetch-retries", "1", "--prefix", tmp,
                               f"onnxruntime-node@{ORT_VERSION}"],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
            raise Unavailable(f"npm install onnxruntime-node@{ORT_VERSION} failed "
                              f"(exit {proc.returncode}):\n{tail}")
        here = run(["node", "-p", "process.platform + '/' + process.arch"]).strip()
        libs = os.path.join(tmp, "node_modules", "onnxruntime-node", "bin", "napi-v6")
        for platform in os.listdir(libs):
            for arch in os.listdir(os.path.join(libs, platform)):
                if f"{platform}/{arch}" != here:
                    shutil.rmtree(os.path.join(libs, platform, arch))
        shutil.rmtree(ort_dir, ignore_errors=True)
        os.rename(tmp, ort_dir)
    env = dict(os.environ, NODE_PATH=node_path)
    run(["node", "-e", "require('onnxruntime-node')"], env,
        f"node cannot load onnxruntime-node from {node_path}")
    return node_path


def ort_run(node_path, model, feeds, threads, warmup, repeat, outputs=None):
    """One ort_run.js process: the median of `repeat` runs after `warmup`."""
    cmd = ["node", os.path.join(HERE, "ort_run.js"), model, "--threads", str(threads),
           "--warmup", str(warmup), "--repeat", str(repeat)]
    for name, path in feeds.items():
        cmd += ["--feed", f"{name}={path}"]
    if outputs is not None:
        cmd += ["--outputs", outputs]
    out = run(cmd, dict(os.environ, NODE_PATH=node_path), f"ONNX Runtime on {model}")
    return json.loads(out)["median_s"]


# ---------------------------------------------------------------- models

def export_cnn(name, side, work):
    """testdata's CNN `name` (torchvision's, structure only) with a 1 x 3 x
    side x side image; returns the .onnx path."""
    import torch
    import torchvision
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import make_onnx_models
    torch.manual_seed(0)
    path = os.path.join(work, f"{name}_{side}.onnx")
    make_onnx_models.export(getattr(torchvision.models, name)(), torch.randn(1, 3, side, side),
                            path, ["image"], ["logits"], params=False)
    return path


def export_segmentation(name, side, work):
    """An EXTRA_MODELS segmentation model (structure only) with a 1 x 3 x
    side x side image; returns the .onnx path."""
    import torch
    import torchvision
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    sys.path.insert(0, os.path.join(ROOT, "tests", "torch"))
    import make_onnx_models
    from torch_models import SegmentationOut
    torch.manual_seed(0)
    path = os.path.join(work, f"{name}_{side}.onnx")
    model = torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None,
                                                                      weights_backbone=None)
    make_onnx_models.export(SegmentationOut(model).eval(), torch.randn(1, 3, side, side), path,
                            ["image"], ["out"], params=False)
    return path


def export_dcgan(work):
    """The EXTRA_MODELS DCGAN generator (Radford et al.'s, 64 feature maps;
    structure only) on one 100-d code; returns the .onnx path."""
    import torch
    from torch import nn
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import make_onnx_models
    torch.manual_seed(0)

    def up(i, o, k, s, p):
        return [nn.ConvTranspose2d(i, o, k, s, p, bias=False), nn.BatchNorm2d(o), nn.ReLU()]

    model = nn.Sequential(*up(100, 512, 4, 1, 0), *up(512, 256, 4, 2, 1), *up(256, 128, 4, 2, 1),
                          *up(128, 64, 4, 2, 1), nn.ConvTranspose2d(64, 3, 4, 2, 1, bias=False),
                          nn.Tanh()).eval()
    path = os.path.join(work, "dcgan_generator.onnx")
    make_onnx_models.export(model, torch.randn(1, 100, 1, 1), path, ["z"], ["image"], params=False)
    return path


def export_classifier(name, work):
    """A TORCHVISION_CLASSIFIERS model (torchvision's `name`, structure only)
    on one 224 x 224 image; returns the .onnx path."""
    import torch
    import torchvision
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import make_onnx_models
    torch.manual_seed(0)
    path = os.path.join(work, f"{name}.onnx")
    model = getattr(torchvision.models, name)(weights=None).eval()
    make_onnx_models.export(model, torch.randn(1, 3, 224, 224), path, ["image"], ["logits"],
                            params=False)
    return path


# The transformer layers, which --layer-size exports anew at that size.
TRANSFORMERS = ["bert_layer", "bert_padded_layer", "gpt2_block", "gpt2_block_opset14",
                "llama_layer"]


def export_transformer(name, d, s, work):
    """testdata's transformer layer `name` at width d (d/64 heads, a 4d MLP;
    LLaMA's SwiGLU MLP 8d/3 wide, rounded up to a multiple of 64) on one
    sequence of s tokens, with its seeded weights; returns the .onnx path."""
    import torch
    import torch.nn as nn
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import make_onnx_models
    torch.manual_seed(0)
    heads = max(1, d // 64)
    if name == "bert_layer":
        model = nn.TransformerEncoderLayer(d_model=d, nhead=heads, dim_feedforward=4 * d,
                                           dropout=0.0, batch_first=True)
    elif name == "bert_padded_layer":  # one sequence, its last eighth padding
        model = make_onnx_models.PaddedBertLayer(d=d, heads=heads, batch=1, seq=s)
        model.attention.mask[0, s - max(1, s // 8):] = 0
    elif name == "llama_layer":
        hidden = (8 * d // 3 + 63) // 64 * 64
        model = make_onnx_models.LlamaLayer(d=d, heads=heads, hidden=hidden, seq=s)
    else:
        model = make_onnx_models.Gpt2Block(d=d, heads=heads, seq=s)
    path = os.path.join(work, f"{name}_{d}_{s}.onnx")
    make_onnx_models.export(model, torch.randn(1, s, d), path, ["x"], ["y"],
                            opset=14 if name.endswith("opset14") or name == "llama_layer"
                            else make_onnx_models.OPSET)
    return path


def prepare_model(name, work, rng, source=None):
    """The testdata model with every weight an initializer, and its inputs.

    Weights that are graph inputs as well as initializers stop being graph
    inputs (ORT treats such weights as overridable, not constant, and skips
    folding and pre-packing them). Structure-only models (the CNNs, exported
    without their weights) get seeded He-normal weights: the times do not
    depend on the values, as long as they stay finite. Returns the model's
    path and {input: .npy path} of its own inputs, standard normal."""
    model = onnx.load(source or os.path.join(ROOT, "testdata", "onnx", name + ".onnx"))
    graph = model.graph
    initialized = {t.name for t in graph.initializer}
    # A BatchNormalization's variance must be positive, or its square root is
    # NaN and so are the outputs (DenseNet-121's max pool then ran its NaN
    # path: the times measured NaN, not the model).
    # (The exporter passes shared initializers through Identity nodes.)
    identity = {node.output[0]: node.input[0] for node in graph.node if node.op_type == "Identity"}
    variances = set()
    for node in graph.node:
        if node.op_type == "BatchNormalization" and len(node.input) > 4:
            v = node.input[4]
            while v in identity and v not in variances:
                variances.add(v)
                v = identity[v]
            variances.add(v)
    own = (MODELS | EXTRA_MODELS)[name]
    feeds = {}
    keep = []
    for value in graph.input:
        shape = [d.dim_value if d.HasField("dim_value") else None
                 for d in value.type.tensor_type.shape.dim]
        if value.name in own:
            if None in shape:
                raise RuntimeError(f"{name}: input {value.name} has symbolic dims {shape}")
            dtype = mapping.TENSOR_TYPE_TO_NP_TYPE[value.type.tensor_type.elem_type]
            path = os.path.join(work, "feeds", npy_name(value.name))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            np.save(path, rng.standard_normal(shape).astype(dtype))
            feeds[value.name] = path
            keep.append(value)
        elif value.name not in initialized:
            if value.type.tensor_type.elem_type != onnx.TensorProto.FLOAT or None in shape:
                raise RuntimeError(f"{name}: cannot make weights for input {value.name}")
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 0
            data = (rng.standard_normal(shape) * math.sqrt(2 / fan_in) if fan_in > 0
                    else rng.standard_normal(shape) * 0.01)
            if value.name in variances:
                data = 0.5 + np.abs(data)
            graph.initializer.append(numpy_helper.from_array(data.astype(np.float32), value.name))
    for i, t in enumerate(graph.initializer):
        if t.name in variances:
            data = numpy_helper.to_array(t)
            if np.issubdtype(data.dtype, np.floating) and not np.all(data > 0):
                graph.initializer[i].CopyFrom(
                    numpy_helper.from_array((0.5 + np.abs(data)).astype(data.dtype), t.name))
    missing = set(own) - set(feeds)
    if missing:
        raise RuntimeError(f"{name}: no graph input {sorted(missing)}")
    del graph.input[:]
    graph.input.extend(keep)
    path = os.path.join(work, name + ".onnx")
    onnx.save(model, path)
    return path, feeds


# ---------------------------------------------------------------- tapestry

def bench_takes_inputs(binary):
    return "--inputs" in run([binary, "bench", "--help"])


def plan_key(path):
    """What makes two plans the same plan: each operation's split and devices."""
    with open(path) as f:
        p = json.load(f)
    return json.dumps({name: [op["split"], [s["device"] for s in op["shards"]]]
                       for name, op in p["operations"].items()}, sort_keys=True)


def tapestry_plan(binary, name, model, feeds, env, args, work):
    """Imports the model (its weights to DIR), adds its inputs to DIR, and
    optimizes for the calibrated `local`; returns the plan, DIR, and whether
    the plan is the single-device baseline that bench measures beside it."""
    tensors = os.path.join(work, "tensors")
    graph = os.path.join(work, name + ".graph.json")
    run([binary, "import", model, "-o", graph, "--weights", tensors, "-q"], env)
    for path in feeds.values():
        shutil.copy(path, os.path.join(tensors, os.path.basename(path)))
    plan = os.path.join(work, name + ".plan.json")
    opt = [binary, "optimize", graph, "--target", "local", "--seed", "1", "-o", plan, "-q",
           "--rewrites", args.rewrites]
    if args.iterations:
        opt += ["--iterations", str(args.iterations)]
    run(opt, env)
    single = os.path.join(work, name + ".single.json")
    run([binary, "optimize", graph, "--target", "local", "--iterations", "1", "--baseline",
         "single", "-o", single, "-q", "--rewrites", args.rewrites], env)
    return plan, tensors, plan_key(plan) == plan_key(single)


def tapestry_bench(binary, plan, tensors, env, args):
    """One `tapestry bench` (--repeat runs, no adaptive extra ones): the
    measured medians of the plan and of the single-device baseline."""
    cmd = [binary, "--format", "json", "bench", plan, "--repeat", str(args.repeat),
           "--max-repeat", str(args.repeat), "--warmup", str(args.warmup)]
    if tensors is not None:
        cmd += ["--inputs", tensors]
    d = json.loads(run(cmd, env))
    return d["plan"], d["single_device"]


# ---------------------------------------------------------------- measuring

# Both sides compute the same model on the same data, so their outputs differ
# only by the rounding of float32 sums taken in other orders: relative to the
# output's largest magnitude that stays below 1e-5 on these models, while a
# wrong weight, input or operator gives differences of order 1.
SAME_OUTPUT = 1e-3


def compare_outputs(name, binary, plan, tensors, node_path, model, feeds, env, work):
    """Runs the plan (`tapestry run --inputs`) and ORT once each on the same
    inputs and returns the largest difference of their outputs, relative to
    the largest magnitude of ORT's; raises when it exceeds SAME_OUTPUT."""
    ours = os.path.join(work, "outputs.tapestry")
    theirs = os.path.join(work, "outputs.ort")
    run([binary, "run", plan, "--inputs", tensors, "--outputs", ours, "-q"], env)
    ort_run(node_path, model, feeds, 1, 0, 1, theirs)
    files = sorted(os.listdir(theirs))
    if not files or sorted(os.listdir(ours)) != files:
        raise RuntimeError(f"{name}: tapestry wrote outputs {sorted(os.listdir(ours))}, "
                           f"ONNX Runtime {files}")
    worst = 0.0
    for f in files:
        a, b = np.load(os.path.join(ours, f)), np.load(os.path.join(theirs, f))
        if a.shape != b.shape:
            raise RuntimeError(f"{name}: output {f}: shape {a.shape}, ONNX Runtime's {b.shape}")
        # Python's max() drops a NaN difference; and a model whose made-up
        # weights give NaN or infinite outputs times other code paths.
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            raise RuntimeError(f"{name}: output {f} is not finite (tapestry: "
                               f"{np.count_nonzero(~np.isfinite(a))}, ONNX Runtime: "
                               f"{np.count_nonzero(~np.isfinite(b))} elements)")
        scale = float(np.max(np.abs(b))) or 1.0
        worst = max(worst, float(np.max(np.abs(a.astype(np.float64) - b))) / scale)
    if not worst <= SAME_OUTPUT:
        raise RuntimeError(f"{name}: tapestry's outputs differ from ONNX Runtime's by {worst:.3g} "
                           f"of their largest magnitude (more than {SAME_OUTPUT:g})")
    return worst

def profile_both(name, binary, node_path, env, args, plan, tensors, model, feeds, work):
    """bench/ort_profile.py's comparison of the plan's operations (one
    `tapestry bench`) with ORT's nodes (its profiler, 2 threads)."""
    import ort_profile
    cmd = [binary, "--format", "json", "bench", plan, "--repeat", str(args.repeat),
           "--max-repeat", str(args.repeat), "--warmup", str(args.warmup)]
    if args.bench_inputs:
        cmd += ["--inputs", tensors]
    ours = json.loads(run(cmd, env))
    prefix = os.path.join(work, "ort_profile")
    cmd = ["node", os.path.join(HERE, "ort_run.js"), model, "--threads", "2", "--warmup",
           str(args.warmup), "--repeat", str(args.repeat), "--profile", prefix]
    for feed, path in feeds.items():
        cmd += ["--feed", f"{feed}={path}"]
    theirs = json.loads(run(cmd, dict(os.environ, NODE_PATH=node_path), f"ORT's profile of {model}"))
    return ort_profile.report(name, theirs["profile"], args.repeat, args.warmup + args.repeat,
                              ours, args.profile)


def measure(name, binary, node_path, env, args, work):
    model_work = os.path.join(work, name)
    os.makedirs(model_work)
    # One stream per model: its data is the same whichever models run with it.
    rng = np.random.default_rng([args.seed, list(MODELS | EXTRA_MODELS).index(name)])
    source = (export_cnn(name, args.image_size, model_work)
              if name in CNNS and args.image_size != TESTDATA_IMAGE_SIDE else None)
    if name == "dcgan_generator":
        source = export_dcgan(model_work)
    elif name in TORCHVISION_CLASSIFIERS:
        source = export_classifier(name, model_work)
    elif name in EXTRA_MODELS:
        source = export_segmentation(name, args.image_size, model_work)
    if name in TRANSFORMERS and args.layer_size is not None:
        source = export_transformer(name, *args.layer_size, model_work)
    model, feeds = prepare_model(name, model_work, rng, source)
    plan, tensors, plan_is_single = tapestry_plan(binary, name, model, feeds, env, args,
                                                  model_work)
    difference = compare_outputs(name, binary, plan, tensors, node_path, model, feeds, env,
                                 model_work)
    rounds = {"plan": [], "single": [], "ort1": [], "ort2": []}
    ran_with = {}  # the devices, workers and BLAS threads bench ran each plan with
    for r in range(args.rounds):
        order = VARIANTS[r % len(VARIANTS):] + VARIANTS[:r % len(VARIANTS)]
        for variant in order:
            print(f"ort_cpu: {name} round {r + 1}/{args.rounds}: {variant}", file=sys.stderr)
            if variant == "tapestry":
                plan_t, single_t = tapestry_bench(binary, plan,
                                                  tensors if args.bench_inputs else None, env, args)
                rounds["plan"].append(plan_t["measured_s"])
                rounds["single"].append(single_t["measured_s"])
                for key, t in (("plan", plan_t), ("single", single_t)):
                    ran_with[key] = {k: t[k] for k in ("devices", "workers", "blas_threads")}
            else:
                threads = int(variant[-1])
                rounds[variant].append(ort_run(node_path, model, feeds, threads, args.warmup,
                                               args.repeat))
    if args.profile > 0:
        print(profile_both(name, binary, node_path, env, args, plan, tensors, model, feeds,
                           model_work), file=sys.stderr)
    med = {k: statistics.median(v) for k, v in rounds.items()}
    # One plan, one figure: where the chosen plan is the single-device one,
    # bench timed it twice a round, and the better of two medians of the same
    # plan would flatter it; the median of both series is its time.
    best = (statistics.median(rounds["plan"] + rounds["single"]) if plan_is_single
            else min(med["plan"], med["single"]))
    return {
        "model": name,
        "tapestry_single_s": med["single"],
        "tapestry_plan_s": med["plan"],
        "plan_devices": ran_with["plan"]["devices"],
        "tapestry_threads": ran_with,
        "plan_is_single_device": plan_is_single,
        "ort_1_thread_s": med["ort1"],
        "ort_2_threads_s": med["ort2"],
        "tapestry_best_s": best,
        "best_over_ort2": best / med["ort2"],
        "best_over_ort_best": best / min(med["ort1"], med["ort2"]),
        "output_difference": difference,
        "rounds_s": rounds,
    }


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def fmt_s(s):
    return f"{s * 1e3:.3g} ms" if s >= 1e-3 else f"{s * 1e6:.3g} us"


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return "unknown"
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def source_commit():
    """The checkout's commit (with -dirty for local changes), or "unknown"."""
    proc = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty", "--abbrev=7"],
                          capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else "unknown"


def print_table(doc):
    m = doc["machine"]
    print(f"{doc['date']}, {m['cpu']}, {m['cores']} cores; tapestry {doc['tapestry_version']} "
          f"({doc['commit']}), ONNX Runtime {doc['ort_version']} (onnxruntime-node, CPU)")
    print(f"command: {doc['command']}")
    print(f"medians of {doc['rounds']} interleaved rounds, each the median of {doc['repeat']} "
          f"runs after {doc['warmup']} warm-up; Tapestry's inputs: {doc['tapestry_inputs']}; "
          f"the CNNs' images {doc['image_size']} x {doc['image_size']}"
          + (f"; the transformer layers {doc['layer_size'][0]} wide on {doc['layer_size'][1]} "
             "tokens" if doc.get("layer_size") else "") + "\n")
    print("| model | Tapestry one device | Tapestry plan (devices) | ORT 1 thread | "
          "ORT 2 threads | Tapestry best / ORT 2 threads | Tapestry best / ORT best |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in doc["models"]:
        devices = "the one-device plan" if r["plan_is_single_device"] else r["plan_devices"]
        print(f"| {r['model']} | {fmt_s(r['tapestry_single_s'])} | "
              f"{fmt_s(r['tapestry_plan_s'])} ({devices}) | "
              f"{fmt_s(r['ort_1_thread_s'])} | {fmt_s(r['ort_2_threads_s'])} | "
              f"{r['best_over_ort2']:.2f} | {r['best_over_ort_best']:.2f} |")
    print(f"| geometric mean | | | | | {doc['geomean_best_over_ort2']:.2f} | "
          f"{doc['geomean_best_over_ort_best']:.2f} |")


def draw_figure(doc, path):
    """Bars: each variant's time over ORT with 2 threads, per model (log scale)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = [("Tapestry, one device", "tapestry_single_s"),
              ("Tapestry, plan for calibrated local", "tapestry_plan_s"),
              ("ONNX Runtime, 1 thread", "ort_1_thread_s"),
              ("ONNX Runtime, 2 threads", "ort_2_threads_s")]
    rows = doc["models"]
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for i, (label, key) in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(rows))]
        ax.bar(xs, [r[key] / r["ort_2_threads_s"] for r in rows], width, label=label)
    ax.set_yscale("log")
    ax.axhline(1, color="black", linewidth=0.8)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([r["model"] for r in rows])
    ax.set_ylabel("time / ONNX Runtime with 2 threads (log)")
    ax.set_title(f"CPU inference, {doc['machine']['cpu']}, {doc['machine']['cores']} cores "
                 f"({doc['date']})")
    ax.legend(fontsize="small", ncol=len(series), loc="upper center",
              bbox_to_anchor=(0.5, -0.08), frameon=False)
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/bin/tapestry"))
    ap.add_argument("--models",
                    help="comma-separated, of: " + ", ".join(MODELS | EXTRA_MODELS)
                    + " (default: all but " + ", ".join(EXTRA_MODELS) + ")")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (the median is kept)")
    ap.add_argument("--repeat", type=int, default=20, help="timed runs per variant and round")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs before them")
    ap.add_argument("--calibrate-seconds", type=float, default=60,
                    help="tapestry calibrate --budget-seconds for the local target")
    ap.add_argument("--iterations", type=int, default=0, help="optimize --iterations (0: default)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the inputs and made-up weights")
    ap.add_argument("--rewrites", default="default",
                    help="optimize --rewrites (default: the pre-pass's fusions; none: as imported)")
    ap.add_argument("--ort-dir", default=default_ort_dir(),
                    help="where onnxruntime-node is installed (on first use)")
    ap.add_argument("--json", help="also write the results here as JSON (- for stdout, "
                                   "which then replaces the table)")
    ap.add_argument("--figure", help="also draw the bar chart into this PNG (needs matplotlib)")
    ap.add_argument("--image-size", type=int, default=TESTDATA_IMAGE_SIDE,
                    help="the CNNs' image side: testdata's models are 64 x 64; another size "
                         "exports them anew from torchvision (224: ImageNet's)")
    ap.add_argument("--layer-size", metavar="D,S",
                    help="the transformer layers' width and tokens: testdata's are 64 or 32 "
                         "wide on 2 x 8 tokens; D,S exports them anew, D/64 heads, batch 1 "
                         "(768,128: BERT-base and GPT-2 small on 128 tokens)")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="after the rounds, profile each model's chosen plan (tapestry bench) and "
                         "ORT on 2 threads (its profiler), and print the time by kernel on each "
                         "side and the N operations that lose the most against ORT's nodes "
                         "(bench/ort_profile.py)")
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run: mlp3 (unless --models), 1 round, short calibration")
    args = ap.parse_args()
    if args.models is None:
        args.models = "mlp3" if args.quick else ",".join(MODELS)
    if args.quick:
        args.rounds = 1
        args.repeat = min(args.repeat, 5)
        args.warmup = min(args.warmup, 1)
        args.calibrate_seconds = min(args.calibrate_seconds, 0.5)
        args.iterations = args.iterations or 20
    if args.layer_size is not None:
        try:
            args.layer_size = [int(v) for v in args.layer_size.split(",")]
        except ValueError:
            args.layer_size = []
        if len(args.layer_size) != 2 or min(args.layer_size) < 1:
            ap.error("--layer-size takes D,S: two positive integers (768,128)")
    models = args.models.split(",")
    unknown = [m for m in models if m not in MODELS and m not in EXTRA_MODELS]
    if unknown or args.rounds < 1 or args.repeat < 1 or args.warmup < 0 or args.image_size < 32:
        ap.error(f"unknown models {unknown}" if unknown else
                 "needs --rounds >= 1, --repeat >= 1, --warmup >= 0, --image-size >= 32")

    try:
        node_path = ensure_ort(args.ort_dir)
    except Unavailable as e:
        print(f"ort_cpu: ONNX Runtime is unavailable: {e}", file=sys.stderr)
        return UNAVAILABLE
    args.bench_inputs = bench_takes_inputs(args.bin)
    doc = {
        "date": datetime.date.today().isoformat(),
        "machine": {"cpu": cpu_model(), "cores": len(os.sched_getaffinity(0))},
        "tapestry_version": run([args.bin, "--version"]).strip().split()[-1],
        "ort_version": installed_version(args.ort_dir),
        "commit": source_commit(),
        "command": " ".join(["/usr/bin/python3"] + sys.argv),
        "rounds": args.rounds,
        "repeat": args.repeat,
        "warmup": args.warmup,
        "calibrate_seconds": args.calibrate_seconds,
        "image_size": args.image_size,
        "layer_size": args.layer_size,
        "tapestry_inputs": ("the same files as ORT (bench --inputs)" if args.bench_inputs else
                            "drawn by bench (seed 0; this build's bench has no --inputs)"),
    }
    with tempfile.TemporaryDirectory(prefix="tapestry-ort-bench-") as work:
        # A private calibration: the user's saved one is left alone.
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"))
        print(f"ort_cpu: calibrating local ({args.calibrate_seconds:g} s)", file=sys.stderr)
        run([args.bin, "calibrate", "--budget-seconds", str(args.calibrate_seconds), "-q"], env)
        doc["models"] = [measure(m, args.bin, node_path, env, args, work) for m in models]
    doc["geomean_best_over_ort2"] = geomean([r["best_over_ort2"] for r in doc["models"]])
    doc["geomean_best_over_ort_best"] = geomean([r["best_over_ort_best"] for r in doc["models"]])
    if args.json == "-":
        json.dump(doc, sys.stdout, indent=1)
        print()
    else:
        print_table(doc)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(doc, f, indent=1)
    if args.figure:
        draw_figure(doc, args.figure)
    return 0


if __name__ == "__main__":
    sys.exit(main())
