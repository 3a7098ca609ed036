## `kernels list`: the standard library plus -k files, as text or JSON.
$ tapestry kernels list | grep -c '^matmul(X, W; transpose_x: bool = false, transpose_w: bool = false) -> result$'
1
$ cd $TESTDATA && tapestry kernels list -k metakernels/user_ops.yaml | grep -A1 -E '^(scale|rowsum)\('
rowsum(input) -> result
    Sums each row of a matrix.
--
scale(input; factor: float = 2.0) -> result
    result = factor * input, elementwise.
$ cd $TESTDATA && tapestry --format json kernels list -k metakernels/user_ops.yaml | python3 -c 'import json,sys; ks=json.load(sys.stdin)["kernels"]; print(json.dumps([k for k in ks if k["name"] in ("scale","rowsum")], indent=1))'
[
 {
  "name": "rowsum",
  "file": "metakernels/user_ops.yaml",
  "line": 20,
  "inputs": [
   {
    "name": "input",
    "list": false,
    "optional": false,
    "shape": "[$m, $n]"
   }
  ],
  "outputs": [
   {
    "name": "result",
    "list": false,
    "combine": "sum"
   }
  ],
  "params": [],
  "doc": "Sums each row of a matrix."
 },
 {
  "name": "scale",
  "file": "metakernels/user_ops.yaml",
  "line": 2,
  "inputs": [
   {
    "name": "input",
    "list": false,
    "optional": false,
    "shape": "[$s...]"
   }
  ],
  "outputs": [
   {
    "name": "result",
    "list": false,
    "combine": null
   }
  ],
  "params": [
   {
    "name": "factor",
    "type": "float",
    "default": 2.0
   }
  ],
  "doc": "result = factor * input, elementwise."
 }
]
$ tapestry kernels list -k missing.yaml
! missing.yaml: error: cannot open file: No such file or directory
[exit 1]
