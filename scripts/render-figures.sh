#!/usr/bin/env bash
# Regenerates the pictures of docs/render.md (docs/figures/*.svg and *.png) from the
# bundled examples: the graph view of mlp and concat_split_embedding, the collapsed
# stacked MLP, the plan `optimize` picks for mlp on two devices, and the Pareto
# front of mlp on eight H100s. Every step is deterministic (fixed seeds and
# iteration budgets), so rerunning it only changes the pictures when tapestry does.
#   scripts/render-figures.sh [path/to/tapestry]
set -euo pipefail
cd "$(dirname "$0")/.."
tapestry=${1:-build/release/bin/tapestry}
figures=docs/figures
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$figures"

# NAME INPUT [render flags...]: NAME.svg and NAME.png in docs/figures.
draw() {
  local name=$1 input=$2
  shift 2
  "$tapestry" render "$input" -o "$figures/$name.svg" -q "$@"
  "$tapestry" render "$input" -o "$figures/$name.png" -q "$@"
  echo "$figures/$name.svg $figures/$name.png"
}

draw graph-mlp testdata/graphs/mlp.json
draw graph-concat-split-embedding testdata/graphs/concat_split_embedding.json
draw graph-stacked-mlp-collapsed testdata/render/stacked_mlp.json --collapse

"$tapestry" optimize testdata/graphs/mlp.json --target cpu-2 --seed 1 --iterations 30 -q \
  -o "$work/mlp-cpu2.plan.json"
draw plan-mlp-cpu2 "$work/mlp-cpu2.plan.json"
draw plan-mlp-cpu2-collapsed "$work/mlp-cpu2.plan.json" --collapse

"$tapestry" optimize testdata/graphs/mlp.json --target h100x8 --seed 1 --iterations 30 -q \
  -o "$work/mlp-h100x8.plan.json" --front "$work/mlp-h100x8.front.json"
draw front-mlp-h100x8 "$work/mlp-h100x8.front.json"
draw front-tiny-cpu2 testdata/fronts/tiny_cpu2.front.json
