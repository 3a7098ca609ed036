## The plan view at scale (issue 24): the transformer block on h100x8 and on
## 2x-h100x8 (16 devices). Device panels in a grid; nothing crosses a
## cluster (what arrives on a device comes in through its arrivals node);
## at most 4,000 px wide at 96 dpi; --collapse draws devices that do the same
## work once. tests/cli/check_plan_picture.py checks the SVG and the DOT text.
$ tapestry optimize $TESTDATA/graphs/transformer_block.json --target h100x8 --seed 1 -q -o tb8.json && tapestry render tb8.json -o tb8.svg -q && tapestry render tb8.json -o tb8.dot -q && python3 $SRC/tests/cli/check_plan_picture.py tb8.svg tb8.dot && rm tb8.svg tb8.dot
8 device clusters, overlapping: 0, edges between clusters: 0, at most 4000 px wide: True
[created tb8.json]
$ tapestry render tb8.json --collapse -o tb8.svg -q && tapestry render tb8.json --collapse -o tb8.dot -q && python3 $SRC/tests/cli/check_plan_picture.py tb8.svg tb8.dot && grep -o 'devices \[[0-9, ]*\] alike' tb8.dot && rm tb8.svg tb8.dot tb8.json
7 device clusters, overlapping: 0, edges between clusters: 0, at most 4000 px wide: True
devices [2, 3] alike
$ tapestry optimize $TESTDATA/graphs/transformer_block.json --target 2x-h100x8 --seed 1 -q -o tb16.json && tapestry render tb16.json -o tb16.svg -q && tapestry render tb16.json -o tb16.dot -q && python3 $SRC/tests/cli/check_plan_picture.py tb16.svg tb16.dot && rm tb16.svg tb16.dot
16 device clusters, overlapping: 0, edges between clusters: 0, at most 4000 px wide: True
[created tb16.json]
$ tapestry render tb16.json --collapse -o tb16.svg -q && tapestry render tb16.json --collapse -o tb16.dot -q && python3 $SRC/tests/cli/check_plan_picture.py tb16.svg tb16.dot && grep -o 'devices \[[0-9, ]*\] alike' tb16.dot && rm tb16.svg tb16.dot tb16.json
8 device clusters, overlapping: 0, edges between clusters: 0, at most 4000 px wide: True
devices [3, 4, 5, 6] alike
devices [8, 9] alike
devices [11, 12, 13, 14, 15] alike
