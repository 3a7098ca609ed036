## Errors: a bad -o extension is a usage error (exit 2) reported before the input is
## read; a missing or malformed input is exit 1; a view the file cannot give is exit 2;
## no output file is left behind by any of them. Then standard input, the summary line,
## --format json, -o - (DOT on stdout) and -v (the summary on stderr).
$ tapestry render $TESTDATA/graphs/mlp.json -o out.jpg
! tapestry: error: cannot tell the picture format of "out.jpg" from its extension (expected .svg, .png, .pdf or .dot)
[exit 2]
$ tapestry render missing.json -o out.svg
! missing.json: error: cannot open file: No such file or directory
[exit 1]
$ cd $TESTDATA && tapestry render graphs/mlp.json --view plan -o $OLDPWD/out.svg
! tapestry: error: --view plan cannot draw graphs/mlp.json: it is a graph/v1 file (use --view graph or timeline)
[exit 2]
$ cd $TESTDATA && tapestry render graphs/mlp.json --view front
! tapestry: error: --view front cannot draw graphs/mlp.json: it is a graph/v1 file (use --view graph or timeline)
[exit 2]
$ tapestry render $TESTDATA/graphs/mlp.json --rankdir XY
! tapestry: error: --rankdir: XY not in {TB,LR,BT,RL}
[exit 2]
$ tapestry render $TESTDATA/graphs/mlp.json --max-nodes 0
! tapestry: error: --max-nodes: Value 0 not in range 1 to 1000000000
[exit 2]
$ echo '{"tapestry": "picture/v1"}' > x.json && tapestry render x.json -o out.svg
! x.json:1:14: error: at /tapestry: unknown format "picture/v1" (expected "graph/v1", "expanded/v1", "plan/v1" or "front/v1")
! {"tapestry": "picture/v1"}
!              ^
[exit 1]
[created x.json]
$ echo '[1, 2]' > y.json && tapestry render y.json
! y.json:1:1: error: expected an object, got array
! [1, 2]
! ^
[exit 1]
[created y.json]
$ cd $TESTDATA && tapestry render bad/graphs/bad_graph_name.json -o $OLDPWD/out.svg
! bad/graphs/bad_graph_name.json:3:11: error: at /name: invalid graph name "my graph": names are 1 to 256 printable ASCII characters other than space, '"' and '\'
!   "name": "my graph",
!           ^
[exit 1]
$ tapestry render - -o mlp.svg < $TESTDATA/graphs/mlp.json
rendered mlp (graph view, 19 nodes) -> mlp.svg (svg)
[created mlp.svg]
$ tapestry render - -o mlp2.dot --format json < $TESTDATA/graphs/mlp.json
{
  "status": "ok",
  "view": "graph",
  "name": "mlp",
  "nodes": 19,
  "collapsed": false,
  "format": "dot",
  "output": "mlp2.dot",
  "bytes": 9035
}
[created mlp2.dot]
$ tapestry render $TESTDATA/graphs/mlp.json -o - | sed -n 1p
digraph mlp {
$ tapestry render $TESTDATA/graphs/mlp.json -v -o - > /dev/null
! rendered mlp (graph view, 19 nodes) -> <stdout> (dot)
