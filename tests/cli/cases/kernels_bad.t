## Bad -k files: one file per problem under testdata/bad/metakernels, each with its exact diagnostic (exit 1).
## A -k directory loads its *.yaml files in name order (the first bad one stops it).
## Redefining a kernel is an error naming both places, unless --override-kernels.
$ cd $TESTDATA && tapestry kernels list -k bad/metakernels/pattern_syntax.yaml
! bad/metakernels/pattern_syntax.yaml:4:32: error: in shape pattern "[$batch..., $m $k]": expected ',' or ']' at column 16
!     X: {shape: "[$batch..., $m $k]", dtype: "$dtype"}
!                                ^
[exit 1]
$ cd $TESTDATA && tapestry kernels list -k bad/metakernels/bad_ipf.yaml
! bad/metakernels/bad_ipf.yaml:6:21: error: in ipf "[@[0] * , @[1]] :> [1...]": expected an expression at column 9
!       ipf: '[@[0] * , @[1]] :> [1...]'
!                     ^
[exit 1]
$ cd $TESTDATA && tapestry kernels list -k bad/metakernels/unknown_key.yaml
! bad/metakernels/unknown_key.yaml:6:3: error: unknown key "outptus" in kernel ident (expected one of: doc, params, constraints, inputs, let, index, outputs, cost, where, examples, body, extern)
!   outptus:
!   ^
[exit 1]
$ cd $TESTDATA && tapestry kernels list -k bad/metakernels/bad_param_type.yaml
! bad/metakernels/bad_param_type.yaml:3:20: error: param factor: unknown type "integer" (expected one of: int, ints, bool, float, dtype)
!     factor: {type: integer, default: 2}
!                    ^
[exit 1]
$ cd $TESTDATA && tapestry kernels list -k bad/metakernels/bad_default.yaml
! bad/metakernels/bad_default.yaml:3:34: error: param factor: default: expected int, got string
!     factor: {type: int, default: two}
!                                  ^
[exit 1]
$ cd $TESTDATA && tapestry kernels list -k bad/metakernels/optional_not_bool.yaml
! bad/metakernels/optional_not_bool.yaml:4:54: error: input bias: optional: expected true or false, got "sometimes"
!     bias: {shape: "[$n]", dtype: "$dtype", optional: sometimes}
!                                                      ^
[exit 1]
$ cd $TESTDATA && tapestry kernels list -k bad/metakernels/invalid_yaml.yaml
! bad/metakernels/invalid_yaml.yaml:4:3: error: invalid YAML: end of map flow not found
!   index: "[$s...]"
!   ^
[exit 1]
$ cd $TESTDATA && tapestry kernels list -k bad/metakernels/missing_index.yaml
! bad/metakernels/missing_index.yaml:1:1: error: kernel ident: missing required key "index"
! ident:
! ^
[exit 1]
$ cd $TESTDATA && tapestry kernels list -k bad/metakernels
! bad/metakernels/alias_bomb.yaml:6:54: error: the document has more than 100000 nodes once aliases are expanded
!     p: {type: ints, default: [&a0 [x, x, x, x, x, x, x, x, x, x], &a1 [*a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0], &...
!                                                      ^
[exit 1]
$ cd $TESTDATA && tapestry kernels list -k metakernels/user_ops.yaml -k metakernels/user_ops.yaml
! metakernels/user_ops.yaml:2:1: error: kernel "scale" is already defined at metakernels/user_ops.yaml:2:1 (use --override-kernels to replace it)
! scale:
! ^
! metakernels/user_ops.yaml:2:1: note: the first definition of "scale" is here
[exit 1]
$ cd $TESTDATA && tapestry kernels list -k bad/metakernels/redefine_matmul.yaml 2>&1 | sed -E 's#(^|at )<stdlib>/matmul.yaml:[0-9]+:1#\1<stdlib>/matmul.yaml:LINE:1#'
bad/metakernels/redefine_matmul.yaml:2:1: error: kernel "matmul" is already defined at <stdlib>/matmul.yaml:LINE:1 (use --override-kernels to replace it)
matmul:
^
<stdlib>/matmul.yaml:LINE:1: note: the first definition of "matmul" is here (built in; 'tapestry kernels show matmul' prints it)
[exit 1]
$ cd $TESTDATA && tapestry kernels show matmul -k bad/metakernels/redefine_matmul.yaml --override-kernels
matmul:
  doc: A user matmul without batch dims.
  inputs:
    X: {shape: "[$m, $k]", dtype: "$dtype"}
    W: {shape: "[$k, $n]", dtype: "$dtype"}
  index: "[$m, $n, $k]"
  outputs:
    result: {shape: "[$m, $n]", dtype: "$dtype", ipf: "[@[0], @[1]] :> [1, 1]", combine: sum}
  cost: {flops: 2}
$ cd $TESTDATA && tapestry --format json kernels list -k bad/metakernels/unknown_key.yaml
{
  "status": "error",
  "exit_code": 1,
  "error": {
    "message": "unknown key \"outptus\" in kernel ident (expected one of: doc, params, constraints, inputs, let, index, outputs, cost, where, examples, body, extern)",
    "file": "bad/metakernels/unknown_key.yaml",
    "line": 6,
    "column": 3
  }
}
! bad/metakernels/unknown_key.yaml:6:3: error: unknown key "outptus" in kernel ident (expected one of: doc, params, constraints, inputs, let, index, outputs, cost, where, examples, body, extern)
!   outptus:
!   ^
[exit 1]
