## render --view timeline: the golden pictures. The view places every box,
## tick and label itself (Graphviz's nop layout), so its DOT text is the
## picture, byte for byte: every testdata plan, and the transformer block
## optimized for 2x-h100x8 (16 devices), against testdata/render/timeline/.
## docs/figures/timeline-*.png are the same drawings as PNG, for a person.
$ for p in $TESTDATA/plans/*.json; do n=$(basename $p .json); tapestry render $p --view timeline | diff - $TESTDATA/render/timeline/$n.dot > /dev/null && echo "$n: same as the golden file" || echo "$n: DIFFERS"; done
convnet_2dev: same as the golden file
mlp_2dev: same as the golden file
mm_relu_2dev: same as the golden file
mobilenet_block_2dev: same as the golden file
$ tapestry optimize $TESTDATA/graphs/transformer_block.json --target 2x-h100x8 --seed 1 --iterations 30 -q -o tb.json && tapestry render tb.json --view timeline | diff - $TESTDATA/render/timeline/transformer_block_2x-h100x8.dot > /dev/null && echo "transformer_block on 2x-h100x8: same as the golden file" && rm tb.json
transformer_block on 2x-h100x8: same as the golden file
## Every format draws: svg (valid XML), png, pdf.
$ tapestry render $TESTDATA/plans/mlp_2dev.json --view timeline -o t.svg && tapestry render $TESTDATA/plans/mlp_2dev.json --view timeline -o t.png -q && tapestry render $TESTDATA/plans/mlp_2dev.json --view timeline -o t.pdf -q && python3 -c 'import xml.dom.minidom; xml.dom.minidom.parse("t.svg"); assert open("t.png", "rb").read(8) == b"\x89PNG\r\n\x1a\n"; assert open("t.pdf", "rb").read(5) == b"%PDF-"; print("svg, png and pdf ok")' && rm t.svg t.png t.pdf
rendered mlp (timeline view, 36 nodes) -> t.svg (svg)
svg, png and pdf ok
$ tapestry --format json render $TESTDATA/plans/mm_relu_2dev.json --view timeline -o t.svg | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["view"], d["nodes"], d["format"])' && rm t.svg
timeline 16 svg
## A graph draws as its single-device plan on this machine.
$ tapestry render $TESTDATA/graphs/tiny.json --view timeline -o t.svg && rm t.svg
rendered tiny (timeline view, 11 nodes) -> t.svg (svg)
## Errors: a bad plan (exit 1, located), --max-nodes, an unwritable output.
$ cd $TESTDATA && tapestry render bad/plans/selection.json --view timeline -o $OLDPWD/t.svg
! bad/plans/selection.json:109:46: error: at /operations/mm/shards/1/selections/inputs/W/0/range: selection zr[2:3, 0:6] does not match the IPF projection zr[2:4, 0:6]
!               "W": [{"tensor": "w", "range": {"start": [2, 0], "end": [3, 6]}}]
!                                              ^
[exit 1]
$ cd $TESTDATA && tapestry render plans/mlp_2dev.json --view timeline --max-nodes 10 -o $OLDPWD/t.svg
! plans/mlp_2dev.json: error: timeline has 36 nodes, more than --max-nodes 10 (one per task)
[exit 1]
$ tapestry render $TESTDATA/plans/mlp_2dev.json --view timeline -o nowhere/t.svg
! nowhere/t.svg: error: cannot write output file: No such file or directory
[exit 1]
