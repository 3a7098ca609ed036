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
## Every exported model of testdata/onnx, imported, goes on through expand and optimize for
## h100x8 (a front of more than 3 plans) and render: the transformers' and ResNet-18's plans
## shard by shard, the larger CNNs' (more than 60 operations, hundreds of ranks) as the plan
## overview, one node per operation with its split and devices (docs/render.md).
## The BERT layer, the GPT-2 block (its causal mask a bool input) and MobileNetV2 run a
## 2-device cpu-2 plan with --check; the ResNets run against PyTorch in tests/torch.
## ResNet-50's overview (306 nodes) takes Graphviz 21-28 s to lay out on a slow 2-core VM,
## close to the quarter of the default --layout-seconds that a drawing of 300 nodes or more
## gets before it is drawn collapsed (the fresh-clone CI of 3ae9ac2 crossed it under load):
## the full drawing gets 120 s here.
$ d=$(mktemp -d) && for m in resnet18 resnet50 mobilenet_v2 bert_layer gpt2_block; do tapestry expand $m.json -o $d/$m.x.json -q && tapestry --format json optimize $d/$m.x.json --target h100x8 --seed 1 --iterations 20 -o $d/$m.p.json | jq -r --arg m $m '"\($m): front of more than 3 plans: \(.front_size > 3)"' && tapestry render $d/$m.p.json -o $d/$m.svg --layout-seconds 480 | sed -E 's/ [0-9]+ nodes/ N nodes/; s/ -> .*//'; done; rm -rf $d
resnet18: front of more than 3 plans: true
rendered resnet18 (plan view, N nodes)
resnet50: front of more than 3 plans: true
rendered resnet50 (plan overview, N nodes)
mobilenet_v2: front of more than 3 plans: true
rendered mobilenet_v2 (plan overview, N nodes)
bert_layer: front of more than 3 plans: true
rendered bert_layer (plan view, N nodes)
gpt2_block: front of more than 3 plans: true
rendered gpt2_block (plan view, N nodes)
## On h100x8 the plan chosen for the BERT layer and the GPT-2 block beats the tensor-parallel
## baseline in predicted time.
$ for m in bert_layer gpt2_block; do tapestry --format json optimize $m.json --target h100x8 --seed 1 -o /dev/null | jq -r --arg m $m '"\($m): \(.selected.objectives.time_s < .baselines.tensor_parallel.time_s)"'; done
bert_layer: true
gpt2_block: true
$ d=$(mktemp -d) && for m in bert_layer gpt2_block mobilenet_v2; do tapestry optimize $m.json --target cpu-2 --seed 1 --iterations 20 --baseline data_parallel -q -o $d/$m.p.json && tapestry --format json run $d/$m.p.json --check | jq -r --arg m $m '"\($m): \(.devices_used) devices, check \(.check.ok)"'; done; rm -rf $d
bert_layer: 2 devices, check true
gpt2_block: 2 devices, check true
mobilenet_v2: 2 devices, check true
## A layout past its time is stopped instead of running on (ResNet-50's graph takes dot seconds
## here): a drawing of 300 nodes or more gets a quarter of --layout-seconds, then is drawn
## collapsed in the rest, with a note; asked to collapse, it is drawn so at once.
$ tapestry --format json render resnet50.json -o r.svg --layout-seconds 2 | jq -c '{nodes, collapsed}'
{"nodes":24,"collapsed":true}
! resnet50.json: note: the drawing of 306 nodes did not lay out within 0.5 s (a quarter of --layout-seconds); drew it collapsed (24 nodes) instead: --collapse asks for that at once, a longer --layout-seconds gives the full drawing more time
[created r.svg]
## A drawing under 300 nodes gets the whole time at once; past it, render stops (exit 1, no
## picture) and says what else to draw (MobileNetV2's graph takes dot about half a second here).
$ tapestry render mobilenet_v2.json -o m.svg --layout-seconds 0.1
! mobilenet_v2.json: error: Graphviz did not lay out the drawing (268 nodes) within 0.1 s, and was stopped (--layout-seconds): give it longer, or draw less (--collapse)
[exit 1]
