#!/usr/bin/env bash
# The main job end to end on a bundled example (testdata/graphs/mlp.json) with
# the embedded defaults: expand -> optimize -> render -> run --check (CPU backend).
set -euo pipefail
tapestry=${1:-build/release/bin/tapestry}
here=$(cd "$(dirname "$0")/.." && pwd)
graph="$here/testdata/graphs/mlp.json"
out=${DEMO_OUT:-build/demo}
mkdir -p "$out"

step() { printf '\n== %s\n' "$*"; }

step "tapestry --version"
"$tapestry" --version
step "expand: apply metakernels, infer shapes, index spaces and IPFs"
"$tapestry" expand "$graph" -o "$out/mlp.expanded.json"
step "optimize: Pareto-front search of shardings on this machine (target local)"
"$tapestry" optimize "$graph" --seed 0 -o "$out/mlp.plan.json" --front "$out/mlp.front.json"
step "render: the graph, the selected plan, and the front"
"$tapestry" render "$out/mlp.expanded.json" -o "$out/mlp.graph.svg"
"$tapestry" render "$out/mlp.plan.json" -o "$out/mlp.plan.svg"
"$tapestry" render "$out/mlp.front.json" -o "$out/mlp.front.svg"
step "run --check: execute the plan shard by shard on the CPU, compare with the unsharded graph"
"$tapestry" run "$out/mlp.plan.json" --check --outputs "$out/outputs"
echo
echo "demo: done; outputs in $out:"
ls "$out"
