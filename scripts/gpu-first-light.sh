#!/usr/bin/env bash
# shellcheck disable=SC2317  # the step functions run in a child bash, through `step`
# The CUDA backend's checks on a machine with an NVIDIA GPU (docs/cuda.md,
# "First light"), run from binaries packed elsewhere by scripts/gpu-kit.sh:
# the machine needs the NVIDIA driver, cuBLASLt (the CUDA toolkit, or
# PyTorch's copy of it) and python3 with PyTorch, and nothing else. One run,
# every step under its own time limit, a failed step not stopping the rest:
#
#   env        the GPU, its driver, the kit's manifest
#   tests      the GPU test binaries (every case, none skipped): cuBLASLt
#              products, native kernels and bodies against the CPU backend
#   check      run --check --backend cuda on every testdata plan, and on an
#              h100x8 plan of every testdata graph and ONNX model (8 plan
#              devices as 8 streams of the one GPU)
#   measure    scripts/gpu-measure.sh's three measurements
#   calibrate  calibrate --backend cuda, then predicted against measured time
#              of testdata graphs' plans for the calibrated target
#   mpi        two ranks on one GPU (mpirun -n 2 ... --backend cuda), where
#              the machine has an mpirun
#   memcheck   compute-sanitizer memcheck on small plans of each kernel family
#
#   bash scripts/gpu-first-light.sh [--kit FILE] [--out DIR] [--only STEP,...] [--iterations N]
#                                   [--deadline SECONDS]
#
# --deadline: no step starts after this many seconds (default 540), so that
# the report is written inside a 10-minute call; the steps left are listed as
# not run (a failure). steps.tsv in the report grows step by step, so a run
# killed from outside still says how far it got.
# --kit: kit.tar.xz (default .gpukit/kit.tar.xz). --out: where the report goes
# (default $OUT when set, else out/gpu-first-light): summary.md (a table of
# the steps, the figures, the failures' last lines), results.json, and
# logs.tar.gz with every step's log and output. Exit status: 0 when every
# step passed, 1 when one failed, 2 on bad arguments, 4 without a GPU.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KIT_ARCHIVE="$ROOT/.gpukit/kit.tar.xz"
REPORT="${OUT:-$ROOT/out/gpu-first-light}"
ONLY="env,tests,check,measure,calibrate,mpi,memcheck"
ITERATIONS=20
DEADLINE=540
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kit) KIT_ARCHIVE="$2"; shift 2 ;;
    --out) REPORT="$2"; shift 2 ;;
    --only) ONLY="$2"; shift 2 ;;
    --iterations) ITERATIONS="$2"; shift 2 ;;
    --deadline) DEADLINE="$2"; shift 2 ;;
    -h|--help) sed -n '3,33p' "$0"; exit 0 ;;
    *) echo "gpu-first-light.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
log() { echo "first-light: $*" >&2; }
wants() { [[ ",$ONLY," == *",$1,"* ]]; }

[[ -f "$KIT_ARCHIVE" ]] || { log "no kit at $KIT_ARCHIVE (make it with scripts/gpu-kit.sh)"; exit 2; }
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  log "no NVIDIA GPU here (nvidia-smi finds none)"
  exit 4
fi

WORK="$(mktemp -d /tmp/tapestry-first-light.XXXXXX)"
LOGS="$WORK/logs"
mkdir -p "$REPORT" "$LOGS" "$WORK/plans"
# tar's xz, else Python's (a machine without the xz program).
tar -xJf "$KIT_ARCHIVE" -C "$WORK" 2>/dev/null ||
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    "$KIT_ARCHIVE" "$WORK" || { log "cannot unpack $KIT_ARCHIVE"; exit 2; }
KIT="$WORK/kit"
cp "$KIT/manifest.txt" "$LOGS/"

# The binaries look for testdata/ where they were built.
SOURCE_DIR="$(sed -n 's/^source_dir=//p' "$KIT/manifest.txt")"
if [[ -n "$SOURCE_DIR" && "$SOURCE_DIR" != "$ROOT" && ! -e "$SOURCE_DIR/testdata" ]]; then
  if ! { mkdir -p "$(dirname "$SOURCE_DIR")" && ln -sfn "$ROOT" "$SOURCE_DIR"; }; then
    log "cannot link $SOURCE_DIR to $ROOT: tests that read testdata/ will fail"
  fi
fi

# cuBLASLt: the toolkit's, else any on the loader's path or in PyTorch's wheels.
CUBLAS_DIR=""
for candidate in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
  $(ldconfig -p 2>/dev/null | awk '/libcublasLt\.so/ {print $NF}' | xargs -r -n1 dirname) \
  $(python3 -c 'import nvidia, os; [print(os.path.join(p, d, "lib")) for p in nvidia.__path__ for d in os.listdir(p)]' 2>/dev/null); do
  if compgen -G "$candidate/libcublasLt.so.*" >/dev/null; then
    CUBLAS_DIR="$candidate"
    break
  fi
done
[[ -n "$CUBLAS_DIR" ]] || log "no libcublasLt found: products will fail"
echo "cublaslt_dir=$CUBLAS_DIR" >>"$LOGS/manifest.txt"

# Wrappers: each binary with the kit's libraries, so nothing else (python3,
# PyTorch) sees them.
mkdir -p "$WORK/bin"
for exe in "$KIT"/libexec/*; do
  name="$(basename "$exe")"
  cat >"$WORK/bin/$name" <<EOF
#!/bin/sh
LD_LIBRARY_PATH="$KIT/lib${CUBLAS_DIR:+:$CUBLAS_DIR}\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$exe" "\$@"
EOF
  chmod +x "$WORK/bin/$name"
done
TAPESTRY="$WORK/bin/tapestry"

# ---------------------------------------------------------------- steps
# step NAME LIMIT_S COMMAND...: its output in logs/NAME.log, a row in summary.tsv.
SUMMARY="$WORK/summary.tsv"
: >"$SUMMARY"
# COMMAND may be a function of this script (exported, run by a child bash).
export TAPESTRY WORK ITERATIONS
STARTED="$(date +%s)"
step() {
  local name="$1" limit="$2"
  shift 2
  local start rc
  if (($(date +%s) - STARTED > DEADLINE)); then
    printf '%s\tnot run: past the %ss deadline\t0\n' "$name" "$DEADLINE" >>"$SUMMARY"
    cp "$SUMMARY" "$REPORT/steps.tsv"
    log "skip  $name (past the deadline)"
    return 0
  fi
  start="$(date +%s%N)"
  echo "\$ $*" >"$LOGS/$name.log"
  timeout --kill-after=10 "$limit" bash -c '"$@"' step "$@" >>"$LOGS/$name.log" 2>&1
  rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" \
    "$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN {printf "%.1f", (b - a) / 1e9}')" >>"$SUMMARY"
  cp "$SUMMARY" "$REPORT/steps.tsv"
  if [[ $rc -eq 0 ]]; then log "ok    $name"; else log "FAIL  $name (exit $rc)"; fi
  return 0
}

if wants env; then
  step env-gpu 30 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,clocks.max.sm --format=csv
  step env-smi 30 nvidia-smi
  step env-version 30 "$TAPESTRY" --version
fi

if wants tests; then
  for t in unit_cuda_probe unit_cuda_plan unit_cuda_body unit_executor; do
    step "test-$t" 300 "$WORK/bin/$t"
  done
  # 77: skipped (no usable GPU), a failure here.
  step test-gpu_cuda_backend 300 "$WORK/bin/gpu_cuda_backend"
fi

if wants check; then
  for plan in "$ROOT"/testdata/plans/*.json; do
    step "check-plan-$(basename "$plan" .json)" 120 "$TAPESTRY" run "$plan" --backend cuda --check
  done
  check_graph() { # NAME GRAPH: an h100x8 plan of it, run and checked on the one GPU
    "$TAPESTRY" optimize "$2" --target h100x8 --iterations "$ITERATIONS" --seed 1 \
      -o "$WORK/plans/$1.h100x8.json" &&
      "$TAPESTRY" run "$WORK/plans/$1.h100x8.json" --backend cuda --check
  }
  export -f check_graph
  for graph in "$ROOT"/testdata/graphs/*.json; do
    step "check-graph-$(basename "$graph" .json)" 180 check_graph "$(basename "$graph" .json)" "$graph"
  done
  check_onnx() { # NAME MODEL [IMPORT FLAGS]
    local name="$1" model="$2"
    shift 2
    "$TAPESTRY" import "$model" "$@" -o "$WORK/plans/$name.graph.json" -q &&
      check_graph "$name" "$WORK/plans/$name.graph.json"
  }
  export -f check_onnx
  for model in "$ROOT"/testdata/onnx/*.onnx; do
    name="$(basename "$model" .onnx)"
    case "$name" in # the symbolic dims of the dynamic exports
      mlp3_dynamic) dims=(--dim batch=4) ;;
      bert_layer_dynamic) dims=(--dim batch=2 --dim seq=8) ;;
      *) dims=() ;;
    esac
    step "check-onnx-$name" 240 check_onnx "$name" "$model" "${dims[@]}"
  done
fi

if wants measure; then
  step measure 420 bash "$ROOT/scripts/gpu-measure.sh" --bin "$WORK/bin" --out "$WORK/measure"
  cp "$WORK/measure/gpu-measure.md" "$WORK/measure/gpu-measure.json" "$REPORT/" 2>/dev/null
fi

if wants calibrate; then
  step calibrate 180 "$TAPESTRY" calibrate --backend cuda --budget-seconds 60 --no-save \
    -o "$WORK/cuda-calibrated.yaml"
  predict() { # NAME GRAPH: bench JSON of its plan for the calibrated target
    "$TAPESTRY" optimize "$2" --target "$WORK/cuda-calibrated.yaml" --inputs-on free \
      --iterations "$ITERATIONS" --seed 1 -o "$WORK/plans/$1.calibrated.json" &&
      "$TAPESTRY" --format json bench "$WORK/plans/$1.calibrated.json" --backend cuda \
        --repeat 20 --warmup 3 >"$WORK/plans/$1.calibrated.bench.json"
  }
  export -f predict
  if [[ -s "$WORK/cuda-calibrated.yaml" ]]; then
    for graph in "$ROOT"/testdata/graphs/*.json; do
      step "predict-$(basename "$graph" .json)" 120 predict "$(basename "$graph" .json)" "$graph"
    done
  fi
fi

if wants mpi; then
  if command -v mpirun >/dev/null; then
    step mpi-2-ranks 180 mpirun --allow-run-as-root --oversubscribe -n 2 "$TAPESTRY" run \
      "$ROOT/testdata/plans/mlp_2dev.json" --backend cuda --check
  else
    printf 'mpi-2-ranks\tskipped: no mpirun on this machine\t0\n' >>"$SUMMARY"
    log "skip  mpi-2-ranks (no mpirun here)"
  fi
fi

if wants memcheck; then
  if command -v compute-sanitizer >/dev/null; then
    for plan in mm_relu_2dev convnet_2dev mobilenet_block_2dev; do
      step "memcheck-$plan" 120 compute-sanitizer --tool memcheck --error-exitcode 9 \
        --target-processes all "$TAPESTRY" run "$ROOT/testdata/plans/$plan.json" --backend cuda
    done
    if [[ -f "$WORK/plans/transformer_block.h100x8.json" ]]; then
      step memcheck-transformer_block 180 compute-sanitizer --tool memcheck --error-exitcode 9 \
        --target-processes all "$TAPESTRY" run "$WORK/plans/transformer_block.h100x8.json" \
        --backend cuda
    fi
  else
    printf 'memcheck\tskipped: no compute-sanitizer on this machine\t0\n' >>"$SUMMARY"
  fi
fi

# ---------------------------------------------------------------- report
cp "$SUMMARY" "$LOGS/"
cp -r "$WORK/plans" "$LOGS/" 2>/dev/null
[[ -d "$WORK/measure" ]] && cp -r "$WORK/measure" "$LOGS/"
[[ -f "$WORK/cuda-calibrated.yaml" ]] && cp "$WORK/cuda-calibrated.yaml" "$LOGS/"
tar -czf "$REPORT/logs.tar.gz" -C "$WORK" logs
FIRST_LIGHT_DEADLINE="$DEADLINE" python3 - "$SUMMARY" "$LOGS" "$WORK/plans" "$REPORT" <<'EOF'
import glob, json, os, statistics, sys
summary, logs, plans, report = sys.argv[1:5]
rows = [line.rstrip("\n").split("\t") for line in open(summary) if line.strip()]
errors = []
for path in sorted(glob.glob(os.path.join(plans, "*.calibrated.bench.json"))):
    try:
        plan = json.load(open(path))["plan"]
        errors.append((os.path.basename(path).split(".")[0], plan["predicted_s"], plan["measured_s"]))
    except (ValueError, KeyError):
        pass
manifest = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(logs, "manifest.txt")) if "=" in l)
gpu = open(os.path.join(logs, "env-gpu.log")).read().strip().splitlines()[-1] \
    if os.path.exists(os.path.join(logs, "env-gpu.log")) else "unknown"
failed = [r for r in rows if r[1] not in ("0",) and not r[1].startswith("skipped")]
md = [f"# GPU first light: {gpu}", "",
      f"kit: commit {manifest.get('commit', '?')} built {manifest.get('date', '?')} "
      f"(nvcc {manifest.get('nvcc', '?')}); cuBLASLt from {manifest.get('cublaslt_dir', '?')}", "",
      "| step | exit | seconds |", "| --- | --- | --- |"]
md += [f"| {r[0]} | {r[1]} | {r[2]} |" for r in rows]
result = {"gpu": gpu, "manifest": manifest,
          "steps": [{"step": r[0], "exit": r[1], "seconds": float(r[2])} for r in rows],
          "deadline_s": float(os.environ.get("FIRST_LIGHT_DEADLINE", "0")),
          "failed": [r[0] for r in failed]}
if errors:
    ratios = [abs(m / p - 1) for _, p, m in errors if p > 0]
    result["prediction"] = {"plans": [{"plan": n, "predicted_s": p, "measured_s": m}
                                      for n, p, m in errors],
                            "median_abs_error": statistics.median(ratios) if ratios else None}
    md += ["", "Predicted against measured after calibrate --backend cuda:", "",
           "| plan | predicted | measured | measured/predicted |", "| --- | --- | --- | --- |"]
    md += [f"| {n} | {p * 1e6:.1f} us | {m * 1e6:.1f} us | {m / p:.2f} |" for n, p, m in errors]
    if ratios:
        md += ["", f"median |error| {100 * statistics.median(ratios):.1f}% (target at most 20%)"]
measure = os.path.join(report, "gpu-measure.md")
if os.path.exists(measure):
    md += ["", open(measure).read().strip()]
for r in failed:
    log = os.path.join(logs, r[0] + ".log")
    if not os.path.exists(log):  # not run
        continue
    tail = open(log, errors="replace").read().strip().splitlines()[-6:]
    md += ["", f"## {r[0]} (exit {r[1]})", "", "```", *tail, "```"]
not_run = sum(r[1].startswith("not run") for r in rows)
md += ["", f"{len(rows) - len(failed)} of {len(rows)} steps passed or were skipped"
       + (f"; {not_run} not run (past the deadline)" if not_run else "")]
open(os.path.join(report, "summary.md"), "w").write("\n".join(md) + "\n")
json.dump(result, open(os.path.join(report, "results.json"), "w"), indent=1)
print("\n".join(md))
EOF
status=0
awk -F'\t' '$2 != "0" && $2 !~ /^skipped/ {bad = 1} END {exit bad}' "$SUMMARY" || status=1
rm -rf "$WORK"
exit "$status"
