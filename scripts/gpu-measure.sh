#!/usr/bin/env bash
# The CUDA backend's measurements (issue 8), for a machine with an NVIDIA GPU,
# the CUDA toolkit and PyTorch. Builds Tapestry with the CUDA backend, runs the
# GPU tests (ctest label `cuda`, which must pass, not skip), then measures:
#
#   (a) an 8192^3 bfloat16 matmul split 4 ways along m (4 plan devices: 4
#       streams on one GPU) against the single cuBLASLt call on whole tensors:
#       the plan's TFLOP/s over the call's (target >= 0.9);
#   (b) the transformer block (testdata/graphs/transformer_block.json, its
#       fastest plan for one GPU) against the same block in PyTorch eager
#       (bench/torch_transformer.py): the time ratio;
#   (c) predicted against measured time for several plans: the cost model's
#       error on this GPU.
#
# Writes $OUT/gpu-measure.md (date, device, commands, tables; paste it into
# docs/cuda.md) and $OUT/gpu-measure.json, with every bench output beside them.
#
#   scripts/gpu-measure.sh [--build DIR | --bin DIR] [--out DIR] [--repeat N] [--size N]
#
# --bin DIR takes tapestry and bench_plans_cuda from DIR, built elsewhere (a
# GPU machine without the build's libraries: scripts/gpu-first-light.sh),
# and skips the build and the tests.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build/gpu-measure"
BIN=""
OUT=""
REPEAT=20
WARMUP=5
SIZE=8192
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --repeat) REPEAT="$2"; shift 2 ;;
    --size) SIZE="$2"; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "gpu-measure.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
OUT="${OUT:-$BUILD/measurements}"
mkdir -p "$OUT"
log() { echo "gpu-measure: $*" >&2; }

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  log "no NVIDIA GPU here (nvidia-smi finds none); nothing to measure"
  exit 4
fi
GPU_NAME="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
GPU_MEM_MIB="$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)"
GPU_COUNT="$(nvidia-smi -L | wc -l)"
log "$GPU_COUNT GPU(s): $GPU_NAME, $GPU_MEM_MIB MiB"

# ---------------------------------------------------------------- build and test
if [[ -n "$BIN" ]]; then
  TAPESTRY="$BIN/tapestry"
  BENCH_PLANS="$BIN/bench_plans_cuda"
else
  JOBS="$(nproc)"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTAPESTRY_WERROR=ON \
    -DTAPESTRY_CUDA=ON >"$OUT/cmake.log"
  grep -q "CUDA backend ON" "$OUT/cmake.log" || { log "the CUDA backend is not built (see $OUT/cmake.log)"; exit 1; }
  cmake --build "$BUILD" -j"$JOBS" >"$OUT/build.log"
  TAPESTRY="$BUILD/bin/tapestry"
  BENCH_PLANS="$BUILD/bin/bench_plans_cuda"
  log "running the cuda-labelled tests"
  ctest --test-dir "$BUILD" -L cuda --output-on-failure -j1 | tee "$OUT/ctest-cuda.log" >&2
  if grep -q "Skipped" "$OUT/ctest-cuda.log"; then
    log "the GPU tests were skipped on a GPU machine: the backend cannot use this GPU"
    exit 1
  fi
  # The rest of the suite too; a failure is reported but does not stop the
  # measurements (tests written for GPU-less machines may assume there is none).
  ctest --test-dir "$BUILD" -j"$JOBS" >"$OUT/ctest-all.log" 2>&1 ||
    log "WARNING: the full suite has failures on this machine (see $OUT/ctest-all.log)"
fi

# ---------------------------------------------------------------- targets
# Figures per GPU (dense tensor-core peaks). One GPU as 1 device, and as 4
# devices (4 streams sharing it: a quarter of its flops and bandwidth each,
# copies between them at device-memory speed).
case "$GPU_NAME" in
  *H200*) BW=4.8e12 ;;
  *H100*PCIe*) BW=2.0e12 ;;
  *H100*) BW=3.35e12 ;;
  *A100*) BW=2.0e12 ;;
  *) BW=2.0e12 ;;
esac
case "$GPU_NAME" in
  *H100*|*H200*) BF16=989e12; F32=67e12; TF32=494e12; F64=67e12 ;;
  *A100*) BF16=312e12; F32=19.5e12; TF32=156e12; F64=19.5e12 ;;
  *) BF16=300e12; F32=20e12; TF32=150e12; F64=10e12 ;;
esac
write_target() { # NAME COUNT DIVISOR
  python3 - "$OUT/$1.yaml" "$1" "$2" "$3" <<EOF
import sys
path, name, count, div = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
mem = int($GPU_MEM_MIB * 1024 * 1024 / div)
text = f"""# Written by scripts/gpu-measure.sh for $GPU_NAME.
name: {name}
description: "$GPU_NAME as {count} device(s)"
devices:
  count: {count}
  kind: gpu
  memory: {mem}
  memory_bandwidth: {$BW / div}
  flops: {{float32: {$F32 / div}, bfloat16: {$BF16 / div}, float16: {$BF16 / div}, float64: {$F64 / div}}}
  launch_overhead: 0.000005
links: {{bandwidth: {$BW / 2}, latency: 0.000005}}
host: {{bandwidth: 25e9, latency: 0.00001}}
"""
open(path, "w").write(text)
EOF
}
write_target gpu-1 1 1
write_target gpu-4 4 4

bench() { # NAME PLAN [extra flags]: bench JSON into $OUT/NAME.bench.json
  local name="$1" plan="$2"; shift 2
  log "bench $name"
  echo "$TAPESTRY --format json bench $plan --backend cuda --repeat $REPEAT --warmup $WARMUP $*" >>"$OUT/commands.txt"
  "$TAPESTRY" --format json bench "$plan" --backend cuda --repeat "$REPEAT" --warmup "$WARMUP" "$@" \
    >"$OUT/$name.bench.json"
}
optimize() { # NAME GRAPH TARGET
  log "optimize $2 for $3"
  echo "$TAPESTRY optimize $2 --target $OUT/$3.yaml --inputs-on free --iterations 100 -o $OUT/$1.plan.json" >>"$OUT/commands.txt"
  "$TAPESTRY" optimize "$2" --target "$OUT/$3.yaml" --inputs-on free --iterations 100 \
    -o "$OUT/$1.plan.json" 2>>"$OUT/optimize.log"
}
: >"$OUT/commands.txt"

# ---------------------------------------------------------------- (a)
"$BENCH_PLANS" "$OUT/gpu-4.yaml" "$OUT/gpu-1.yaml" "$OUT" --size "$SIZE" \
  --dtype bfloat16 --parts 4 >&2
bench matmul_split "$OUT/matmul_split.json"
bench matmul_single "$OUT/matmul_single.json"

# ---------------------------------------------------------------- (b)
optimize transformer_1gpu "$ROOT/testdata/graphs/transformer_block.json" gpu-1
bench transformer_1gpu "$OUT/transformer_1gpu.plan.json"
log "PyTorch eager reference"
echo "python3 $ROOT/bench/torch_transformer.py --repeat $REPEAT --warmup $WARMUP" >>"$OUT/commands.txt"
python3 "$ROOT/bench/torch_transformer.py" --repeat "$REPEAT" --warmup "$WARMUP" >"$OUT/torch_transformer.json"

# ---------------------------------------------------------------- (c)
optimize transformer_4streams "$ROOT/testdata/graphs/transformer_block.json" gpu-4
bench transformer_4streams "$OUT/transformer_4streams.plan.json"
optimize mlp_1gpu "$ROOT/testdata/graphs/mlp.json" gpu-1
bench mlp_1gpu "$OUT/mlp_1gpu.plan.json"
optimize convnet_1gpu "$ROOT/testdata/graphs/convnet.json" gpu-1
bench convnet_1gpu "$OUT/convnet_1gpu.plan.json"

# ---------------------------------------------------------------- report
python3 - "$OUT" "$GPU_NAME" "$GPU_COUNT" <<'EOF'
import datetime, json, pathlib, sys
out, gpu, count = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
load = lambda name: json.loads((out / name).read_text())
split, single = load("matmul_split.bench.json"), load("matmul_single.bench.json")
tr, torch_ref = load("transformer_1gpu.bench.json"), load("torch_transformer.json")
call = split.get("single_call")
a_ratio = split.get("plan_over_single_call")
rows = []
for name in ["matmul_single", "matmul_split", "transformer_1gpu", "transformer_4streams",
             "mlp_1gpu", "convnet_1gpu"]:
    b = load(f"{name}.bench.json")["plan"]
    rows.append((name, b["predicted_s"], b["measured_s"], b["measured_over_predicted"]))
tflops = lambda t: t["flops_per_s"] / 1e12 if t and t.get("flops_per_s") else float("nan")
result = {
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "device": f"{count} x {gpu}",
    "a": {"plan_tflops": tflops(split["plan"]), "cublaslt_call_tflops": tflops(call),
          "ratio": a_ratio, "target": 0.9},
    "b": {"tapestry_s": tr["plan"]["measured_s"], "torch_eager_s": torch_ref["median_s"],
          "tapestry_over_torch": tr["plan"]["measured_s"] / torch_ref["median_s"],
          "torch": torch_ref["torch"]},
    "c": [{"plan": n, "predicted_s": p, "measured_s": m, "measured_over_predicted": r}
          for n, p, m, r in rows],
}
(out / "gpu-measure.json").write_text(json.dumps(result, indent=2) + "\n")
md = [f"Measured {result['date']} on {result['device']} with scripts/gpu-measure.sh "
      f"(commands in commands.txt).", "",
      f"(a) 8192^3 bfloat16 matmul split 4 ways (4 streams, one GPU): "
      f"{result['a']['plan_tflops']:.0f} TFLOP/s; one cuBLASLt call: "
      f"{result['a']['cublaslt_call_tflops']:.0f} TFLOP/s; ratio {a_ratio:.3f} (target >= 0.9).", "",
      f"(b) transformer block: Tapestry {tr['plan']['measured_s']*1e3:.3f} ms, PyTorch "
      f"{torch_ref['torch']} eager {torch_ref['median_s']*1e3:.3f} ms: Tapestry/PyTorch "
      f"{result['b']['tapestry_over_torch']:.2f}.", "",
      "(c) the cost model on this GPU:", "",
      "| plan | predicted | measured | measured/predicted |", "|---|---|---|---|"]
md += [f"| {n} | {p*1e3:.3f} ms | {m*1e3:.3f} ms | {r:.2f} |" for n, p, m, r in rows]
(out / "gpu-measure.md").write_text("\n".join(md) + "\n")
print("\n".join(md))
EOF
log "wrote $OUT/gpu-measure.md and $OUT/gpu-measure.json"
