## Every example graph under testdata/graphs expands to its golden file under
## testdata/expanded, and expanding that expanded file gives it back byte for byte.
## To refresh a golden file after a deliberate change:
##   tapestry expand testdata/graphs/NAME.json -o testdata/expanded/NAME.expanded.json
## Then: '-' for stdin/stdout; -o FILE puts a summary on stdout (-q: none; --format json:
## a JSON summary); -v with stdout puts the summary on stderr; -k adds user kernels.
$ tapestry expand $TESTDATA/graphs/mlp.json | diff - $TESTDATA/expanded/mlp.expanded.json && echo same
same
$ tapestry expand $TESTDATA/expanded/mlp.expanded.json | diff - $TESTDATA/expanded/mlp.expanded.json && echo same
same
$ tapestry expand $TESTDATA/graphs/transformer_block.json | diff - $TESTDATA/expanded/transformer_block.expanded.json && echo same
same
$ tapestry expand $TESTDATA/expanded/transformer_block.expanded.json | diff - $TESTDATA/expanded/transformer_block.expanded.json && echo same
same
$ tapestry expand $TESTDATA/graphs/convnet.json | diff - $TESTDATA/expanded/convnet.expanded.json && echo same
same
$ tapestry expand $TESTDATA/expanded/convnet.expanded.json | diff - $TESTDATA/expanded/convnet.expanded.json && echo same
same
$ tapestry expand $TESTDATA/graphs/concat_split_embedding.json | diff - $TESTDATA/expanded/concat_split_embedding.expanded.json && echo same
same
$ tapestry expand $TESTDATA/expanded/concat_split_embedding.expanded.json | diff - $TESTDATA/expanded/concat_split_embedding.expanded.json && echo same
same
$ tapestry expand $TESTDATA/graphs/mobilenet_block.json | diff - $TESTDATA/expanded/mobilenet_block.expanded.json && echo same
same
$ tapestry expand $TESTDATA/expanded/mobilenet_block.expanded.json | diff - $TESTDATA/expanded/mobilenet_block.expanded.json && echo same
same
$ tapestry expand - -o - < $TESTDATA/graphs/mlp.json | diff - $TESTDATA/expanded/mlp.expanded.json && echo same
same
$ tapestry expand $TESTDATA/graphs/convnet.json -o out.json
expanded convnet: 10 operations, 17 tensors, 26.4 MFLOP -> out.json
[created out.json]
$ diff out.json $TESTDATA/expanded/convnet.expanded.json && echo same
same
$ tapestry expand $TESTDATA/graphs/mlp.json -o out.json -q
$ tapestry expand $TESTDATA/graphs/transformer_block.json -o out.json --format json
{
  "status": "ok",
  "graph": "transformer_block",
  "operations": 24,
  "tensors": 43,
  "flops": 1763966976,
  "output": "out.json"
}
$ tapestry expand $TESTDATA/graphs/mlp.json -v | cmp - $TESTDATA/expanded/mlp.expanded.json && echo same
same
! expanded mlp: 6 operations, 13 tensors, 68.6 MFLOP -> <stdout>
$ printf '%s' '{"tapestry": "graph/v1", "name": "scaled", "tensors": {"x": {"dtype": "float32", "shape": [4, 8]}}, "operations": [{"name": "s", "kernel": "scale", "params": {"factor": 3.5}, "inputs": {"input": "x"}}]}' | tapestry expand - -k $TESTDATA/metakernels/user_ops.yaml | sed -n 1,12p
{
  "tapestry": "expanded/v1",
  "name": "scaled",
  "tensors": {
    "x": {"dtype": "float32", "shape": [4, 8], "producer": null},
    "s.result": {"dtype": "float32", "shape": [4, 8], "producer": "s"}
  },
  "operations": [
    {
      "name": "s",
      "kernel": "scale",
      "params": {"factor": 3.5},
