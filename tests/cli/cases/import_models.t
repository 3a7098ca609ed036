## The exported models end to end (the release suite only: under the sanitizers the CNNs'
## searches take minutes). Imports first, as import.t shows them.
$ for m in resnet18 resnet50 mobilenet_v2 bert_layer gpt2_block; do tapestry import $TESTDATA/onnx/$m.onnx -o $m.json -q; done; ls *.json
bert_layer.json
gpt2_block.json
mobilenet_v2.json
resnet18.json
resnet50.json
[created bert_layer.json]
[created gpt2_block.json]
[created mobilenet_v2.json]
[created resnet18.json]
[created resnet50.json]
## Every exported model of testdata/onnx, imported, goes on through
## expand and optimize for h100x8 (a front of more than 3 plans). The plans of the BERT layer
## and the GPT-2 block render; the CNNs' plans (1,000+ shards on 8 devices) are more than
## Graphviz's dot lays out in minutes, so their graphs render instead (docs/render.md).
## The BERT layer, the GPT-2 block (its causal mask a bool input) and MobileNetV2 run a
## 2-device cpu-2 plan with --check; the ResNets run against PyTorch in tests/torch.
$ d=$(mktemp -d) && for m in resnet18 resnet50 mobilenet_v2 bert_layer gpt2_block; do tapestry expand $m.json -o $d/$m.x.json -q && tapestry --format json optimize $d/$m.x.json --target h100x8 --seed 1 --iterations 20 -o $d/$m.p.json | jq -r --arg m $m '"\($m): front of more than 3 plans: \(.front_size > 3)"'; done; for m in bert_layer gpt2_block; do tapestry render $d/$m.p.json -o $d/$m.svg -q && echo "$m: plan rendered"; done; for m in resnet18 mobilenet_v2; do tapestry render $m.json -o $d/$m.svg -q && echo "$m: graph rendered"; done; rm -rf $d
resnet18: front of more than 3 plans: true
resnet50: front of more than 3 plans: true
mobilenet_v2: front of more than 3 plans: true
bert_layer: front of more than 3 plans: true
gpt2_block: front of more than 3 plans: true
bert_layer: plan rendered
gpt2_block: plan rendered
resnet18: graph rendered
mobilenet_v2: graph rendered
$ d=$(mktemp -d) && for m in bert_layer gpt2_block mobilenet_v2; do tapestry optimize $m.json --target cpu-2 --seed 1 --iterations 20 --baseline data_parallel -q -o $d/$m.p.json && tapestry --format json run $d/$m.p.json --check | jq -r --arg m $m '"\($m): \(.devices_used) devices, check \(.check.ok)"'; done; rm -rf $d
bert_layer: 2 devices, check true
gpt2_block: 2 devices, check true
mobilenet_v2: 2 devices, check true
## A plan too deep for dot's crossing minimization stops at --layout-seconds with a clear
## error (exit 1, no picture) instead of running for hours.
$ tapestry optimize mobilenet_v2.json --target h100x8 --seed 1 --iterations 20 -q -o mb.p.json && tapestry render mb.p.json -o mb.svg --layout-seconds 1
! mb.p.json: error: Graphviz did not lay out the drawing (241 nodes) within 1 s, and was stopped; a plan that deep is more than dot's crossing minimization handles: draw its graph (--view graph) or its schedule (--view timeline)
[exit 1]
[created mb.p.json]
