#!/usr/bin/env bash
# Regenerates every picture of the documentation (docs/figures/*.svg and *.png)
# from the bundled examples: for docs/render.md the graph view of mlp and
# concat_split_embedding, the collapsed stacked MLP, the plan `optimize` picks
# for mlp on two devices, the Pareto front of mlp on eight H100s and the
# timelines of mlp, convnet and a 16-device transformer block; for
# docs/tutorial.md the transformer block's graph, front and collapsed plan on
# h100x8 (the tutorial's own commands); for docs/concepts.md the mm_relu plan's
# graph and plan; for docs/language.md the worked example's graph (a -k kernel).
# Every step is deterministic (fixed seeds and iteration budgets), so rerunning
# it only changes the pictures when tapestry does.
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

# docs/tutorial.md: the same commands as the tutorial.
"$tapestry" optimize testdata/graphs/transformer_block.json --target h100x8 --seed 1 -q \
  -o "$work/tb.plan.json" --front "$work/tb.front.json"
draw graph-transformer-block testdata/graphs/transformer_block.json
draw front-transformer-block-h100x8 "$work/tb.front.json"
draw plan-transformer-block-h100x8-collapsed "$work/tb.plan.json" --collapse
# docs/render.md: the plan view at scale (plan-transformer-block-h100x8-collapsed-before.png
# is the picture before device panels, kept as it was drawn).
draw plan-transformer-block-h100x8 "$work/tb.plan.json"
"$tapestry" optimize testdata/graphs/transformer_block.json --target 2x-h100x8 --seed 1 -q \
  -o "$work/tb16-full.plan.json"
draw plan-transformer-block-2x-h100x8-collapsed "$work/tb16-full.plan.json" --collapse

# docs/concepts.md: a matmul split along m and k (partials, reductions) and a relu.
draw graph-mm-relu testdata/plans/mm_relu_2dev.json --view graph
draw plan-mm-relu-2dev testdata/plans/mm_relu_2dev.json

# docs/language.md: the worked example of a user metakernel.
draw graph-pool-net docs/examples/pool_net.json -k docs/examples/pooling.yaml

# docs/render.md: the timeline view of a plan's prediction (2 and 16 devices).
draw timeline-mlp-2dev testdata/plans/mlp_2dev.json --view timeline
draw timeline-convnet-2dev testdata/plans/convnet_2dev.json --view timeline
"$tapestry" optimize testdata/graphs/transformer_block.json --target 2x-h100x8 --seed 1 \
  --iterations 30 -q -o "$work/tb16.plan.json"
draw timeline-transformer-block-2x-h100x8 "$work/tb16.plan.json" --view timeline
# ... and of a measured run beside it (bench --trace on this machine: the one
# figure that changes from run to run).
"$tapestry" bench testdata/plans/mlp_2dev.json --repeat 10 --max-repeat 10 -q \
  --trace "$work/mlp.trace.json"
draw timeline-mlp-2dev-bench "$work/mlp.trace.json"
