#!/usr/bin/env bash
# Installs every Debian package that Tapestry's build and tests need on a fresh
# Debian 12 machine. Idempotent, and quiet when everything is already there.
# Run as root (or through sudo when it exists).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  clang clang-format libclang-rt-14-dev
  libcli11-dev nlohmann-json3-dev libyaml-cpp-dev
  antlr4 libantlr4-runtime-dev
  libgraphviz-dev graphviz
  catch2 libopenblas-dev libdnnl-dev libsleef-dev
  # dnnl-config.cmake (find_package(dnnl CONFIG)) looks for OpenCL, its GPU runtime.
  ocl-icd-opencl-dev
  python3 python3-jsonschema python3-yaml jq
  libopenmpi-dev openmpi-bin
  libonnx-dev libprotobuf-dev protobuf-compiler
  # ONNX's backend test suite (/usr/share/libonnx-testdata), run by the onnx-suite tests.
  libonnx-testdata
  # The torch tests (tests/torch) and bench/torch_cpu.py: PyTorch 1.13 (CPU)
  # for Debian's /usr/bin/python3, and the onnx module that makes the models.
  python3-torch python3-torchvision python3-onnx python3-numpy
  # bench/ort_cpu.py's bar chart (docs/performance.md).
  python3-matplotlib
)

missing=()
# bench/ort_cpu.py runs ONNX Runtime (the npm package onnxruntime-node) under
# Node.js: Debian's nodejs and npm, unless a node and npm are there already
# (another distribution's nodejs package bundles npm and conflicts with Debian's).
if ! command -v node >/dev/null 2>&1; then missing+=(nodejs); fi
if ! command -v npm >/dev/null 2>&1; then missing+=(npm); fi

for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "install-deps: missing packages (${missing[*]}) and not root; run as root" >&2
    exit 1
  fi
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
