#!/usr/bin/env bash
# The GPU kit and first-light scripts, on a machine with or without a GPU
# (ctest "scripts: gpu kit and first light"): scripts/gpu-kit.sh packs the
# build; gpu-first-light.sh refuses to run without a GPU (exit 4, nothing
# unpacked) and, with a stand-in nvidia-smi on PATH, unpacks the kit, runs
# the env and tests steps from it and writes its report. Without a GPU the
# CUDA-only test exits 77 and the script exits 1; everything else passes.
#
#   gpu_first_light_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
SRC="$1"
BUILD="$2"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

bash "$SRC/scripts/gpu-kit.sh" --build "$BUILD" --kit "$T/kit" --no-build --fast
[[ -s "$T/kit/kit.tar.xz" ]] || fail "no kit.tar.xz"
grep -q "^binaries=.*tapestry" "$T/kit/manifest.txt" || fail "the manifest lists no tapestry"
grep -q "^source_dir=$SRC$" "$T/kit/manifest.txt" || fail "the manifest's source_dir is not $SRC"

# No GPU: nvidia-smi finds none.
mkdir -p "$T/none" "$T/fake"
printf '#!/bin/sh\necho "No devices were found"\nexit 6\n' >"$T/none/nvidia-smi"
chmod +x "$T/none/nvidia-smi"
set +e
PATH="$T/none:$PATH" bash "$SRC/scripts/gpu-first-light.sh" --kit "$T/kit/kit.tar.xz" \
  --out "$T/none-out" >"$T/none.log" 2>&1
rc=$?
set -e
[[ $rc -eq 4 ]] || fail "without a GPU: exit $rc, expected 4 ($(cat "$T/none.log"))"
grep -q "no NVIDIA GPU here" "$T/none.log" || fail "without a GPU: no message"

# A stand-in for nvidia-smi: the steps run; the CUDA ones find no GPU here.
cat >"$T/fake/nvidia-smi" <<'SMI'
#!/bin/sh
case "$*" in
  -L) echo "GPU 0: Stand-in (UUID: none)" ;;
  *--query-gpu*) echo "name, driver_version"; echo "Stand-in, 0.0" ;;
  *) echo "stand-in nvidia-smi" ;;
esac
SMI
chmod +x "$T/fake/nvidia-smi"
set +e
PATH="$T/fake:$PATH" bash "$SRC/scripts/gpu-first-light.sh" --kit "$T/kit/kit.tar.xz" \
  --out "$T/out" --only env,tests >"$T/run.log" 2>&1
rc=$?
set -e
for f in summary.md results.json logs.tar.gz; do
  [[ -s "$T/out/$f" ]] || fail "no $f in the report ($(tail -20 "$T/run.log"))"
done
python3 - "$T/out/results.json" "$rc" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rc = int(sys.argv[2])
steps = {s["step"]: s["exit"] for s in r["steps"]}
want = ["env-gpu", "env-smi", "env-version", "test-unit_cuda_probe", "test-unit_cuda_plan",
        "test-unit_cuda_body", "test-unit_executor", "test-gpu_cuda_backend"]
assert list(steps) == want, f"steps {list(steps)}, expected {want}"
for s in want[:-1]:
    assert steps[s] == "0", f"{s} exited {steps[s]}"
# 77 (no usable GPU) is a failure of the run; 0 where this machine has a GPU.
gpu = steps["test-gpu_cuda_backend"]
assert gpu in ("0", "77"), f"gpu_cuda_backend exited {gpu}"
assert r["failed"] == ([] if gpu == "0" else ["test-gpu_cuda_backend"]), r["failed"]
assert rc == (0 if gpu == "0" else 1), f"exit {rc} with gpu_cuda_backend {gpu}"
print(f"ok: {len(steps)} steps, gpu_cuda_backend {gpu}, exit {rc}")
PY
# The listing goes to a file first: `tar | grep -q` under pipefail fails when
# grep stops reading at its match and tar dies of SIGPIPE (a CI flake).
tar -tzf "$T/out/logs.tar.gz" >"$T/logs.list"
grep -q "logs/test-unit_cuda_plan.log" "$T/logs.list" || fail "no logs in logs.tar.gz"
