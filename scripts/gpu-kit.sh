#!/usr/bin/env bash
# Packs what scripts/gpu-first-light.sh needs on a GPU machine that has the
# NVIDIA driver and the CUDA toolkit but none of the build's other libraries
# (no package installs, no network): the release build's tapestry, its GPU
# test and bench binaries (stripped), and every shared library they load
# except the C library's own, into one compressed archive.
#
#   scripts/gpu-kit.sh [--build DIR] [--kit DIR] [--no-build] [--fast]
#
# --build: a release build with the CUDA backend (default build/release; it
# is brought up to date first, unless --no-build). --kit: where to write
# kit.tar.xz and manifest.txt (default .gpukit, which git ignores). --fast:
# the quickest xz level (a larger kit; the scripts' own test uses it). Copy
# the repository and the kit to the GPU machine, then there: bash
# scripts/gpu-first-light.sh.
#
# The binaries find testdata/ by the absolute path of the checkout they were
# built in (the manifest's source_dir); gpu-first-light.sh links that path to
# the copy it runs in when it does not exist there. cuBLASLt and the CUDA
# driver are not packed: the GPU machine's own are used (the runtime is linked
# statically).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build/release"
KIT="$ROOT/.gpukit"
BRING_UP=1
XZ_LEVEL=-6
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --kit) KIT="$2"; shift 2 ;;
    --no-build) BRING_UP=0; shift ;;
    --fast) XZ_LEVEL=-0; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "gpu-kit.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
log() { echo "gpu-kit: $*" >&2; }

[[ -f "$BUILD/CMakeCache.txt" ]] || { log "no build in $BUILD (cmake --preset release first)"; exit 2; }
grep -q "^TAPESTRY_CUDA:BOOL=ON" "$BUILD/CMakeCache.txt" ||
  { log "$BUILD is not built with the CUDA backend (TAPESTRY_CUDA=ON)"; exit 2; }
if [[ $BRING_UP -eq 1 ]]; then
  log "bringing $BUILD up to date"
  cmake --build "$BUILD" -j"$(nproc)" >/dev/null
fi

# The binaries the first-light script runs, by their place in the build.
BINARIES=(
  bin/tapestry
  bin/bench_plans_cuda
  tests/unit/gpu_cuda_backend
  tests/unit/unit_cuda_probe
  tests/unit/unit_cuda_plan
  tests/unit/unit_cuda_body
  tests/unit/unit_executor
)
STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/kit/libexec" "$STAGE/kit/lib"
for b in "${BINARIES[@]}"; do
  [[ -x "$BUILD/$b" ]] || { log "missing $BUILD/$b"; exit 1; }
  cp "$BUILD/$b" "$STAGE/kit/libexec/"
done
strip "$STAGE"/kit/libexec/*
# A library the tests open by path (extern kernels), kept at that path's name.
cp "$BUILD/tests/unit/libtapestry_example_kernels.so" "$STAGE/kit/lib/"

# Every library the loader resolves for them, but glibc's (the GPU machine has
# its own, and a copy would not match its loader) and the driver's.
for b in "$STAGE"/kit/libexec/*; do
  ldd "$b"
done | awk '/=>/ && $3 ~ /^\// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libpthread|libdl|librt|libresolv|libutil|ld-linux-x86-64|libcuda|libnvidia-[a-z-]+)\.so' \
    >"$STAGE/libs.txt"
missing="$(for b in "$STAGE"/kit/libexec/*; do ldd "$b"; done | grep "not found" || true)"
[[ -z "$missing" ]] || { log "unresolved libraries here: $missing"; exit 1; }
while read -r lib; do
  cp -L "$lib" "$STAGE/kit/lib/"
done <"$STAGE/libs.txt"

SOURCE_DIR="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD/CMakeCache.txt")"
{
  echo "source_dir=$SOURCE_DIR"
  echo "build_dir=$BUILD"
  echo "commit=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "dirty=$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null | wc -l)"
  echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  NVCC="$(sed -n 's/^CMAKE_CUDA_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")"
  echo "nvcc=$("$NVCC" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  ARCHS="$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$BUILD/CMakeCache.txt")"
  echo "cuda_architectures=${ARCHS:-80 90 (the CMakeLists default)}"
  echo "glibc=$(ldd --version | head -1 | awk '{print $NF}')"
  echo "binaries=$(cd "$STAGE/kit/libexec" && echo *)"
  echo "libraries=$(cd "$STAGE/kit/lib" && echo *)"
} >"$STAGE/kit/manifest.txt"

mkdir -p "$KIT"
log "compressing $(du -sh "$STAGE/kit" | cut -f1) (a minute or two)"
XZ_OPT="$XZ_LEVEL -T0" tar -cJf "$KIT/kit.tar.xz.part" -C "$STAGE" kit
mv "$KIT/kit.tar.xz.part" "$KIT/kit.tar.xz"
cp "$STAGE/kit/manifest.txt" "$KIT/manifest.txt"
log "wrote $KIT/kit.tar.xz ($(du -h "$KIT/kit.tar.xz" | cut -f1)) and $KIT/manifest.txt"
