## Pictures for real: every testdata graph as SVG (valid XML) and PNG (PNG signature),
## then each optimized for cpu-2 and its plan and front drawn the same way; every stored
## plan too; and PDF. The files are removed after checking so the list stays short.
$ for g in $TESTDATA/graphs/*.json; do n=$(basename $g .json); tapestry render $g -o $n.svg -q && tapestry render $g -o $n.png -q && python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1]); assert open(sys.argv[2], "rb").read(8) == b"\x89PNG\r\n\x1a\n"; print(sys.argv[3], "graph: svg and png ok")' $n.svg $n.png $n && rm $n.svg $n.png || break; done
concat_split_embedding graph: svg and png ok
convnet graph: svg and png ok
mlp graph: svg and png ok
mobilenet_block graph: svg and png ok
tiny graph: svg and png ok
transformer_block graph: svg and png ok
$ for g in $TESTDATA/graphs/*.json; do n=$(basename $g .json); tapestry optimize $g --target cpu-2 --seed 1 --iterations 2 -q -o p.json --front f.json && for v in p f; do tapestry render $v.json -o $v.svg -q && tapestry render $v.json -o $v.png -q || break 2; done && python3 -c 'import sys, xml.dom.minidom; [xml.dom.minidom.parse(f) for f in ("p.svg", "f.svg")]; assert all(open(f, "rb").read(8) == b"\x89PNG\r\n\x1a\n" for f in ("p.png", "f.png")); print(sys.argv[1], "plan and front: svg and png ok")' $n && rm p.* f.* || break; done
concat_split_embedding plan and front: svg and png ok
convnet plan and front: svg and png ok
mlp plan and front: svg and png ok
mobilenet_block plan and front: svg and png ok
tiny plan and front: svg and png ok
transformer_block plan and front: svg and png ok
$ for p in $TESTDATA/plans/*.json; do n=$(basename $p .json); tapestry render $p -o $n.svg -q && tapestry render $p -o $n.png -q && python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1]); assert open(sys.argv[2], "rb").read(8) == b"\x89PNG\r\n\x1a\n"; print(sys.argv[3], "plan: svg and png ok")' $n.svg $n.png $n && rm $n.svg $n.png || break; done
convnet_2dev plan: svg and png ok
mlp_2dev plan: svg and png ok
mm_relu_2dev plan: svg and png ok
mobilenet_block_2dev plan: svg and png ok
$ tapestry render $TESTDATA/graphs/mlp.json -o mlp.pdf -q && head -c 5 mlp.pdf && echo && rm mlp.pdf
%PDF-
