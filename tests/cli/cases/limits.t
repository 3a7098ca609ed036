## Limits (issue 9): inputs that would exhaust the stack or memory are located errors (exit 1).
## YAML: an alias "bomb" (10^9 nodes from nine lines), an alias inside its own anchor, values nested past 256 levels, and
## documents nested past yaml-cpp's parser limit of 500, in kernels and targets.
## Invalid UTF-8 in YAML is rejected where it is, also when an escape ("\x85") makes it (found by
## the fuzzers; yaml-cpp passes it through).
## A source line longer than 160 bytes shows as a window around the caret.
## Expressions: more than 256 levels of brackets, or more than 1000 operators (the parser
## recurses once per level and per chained operator); the message quotes the first 80 bytes.
$ cd $TESTDATA && tapestry kernels list -k bad/metakernels/alias_bomb.yaml
! bad/metakernels/alias_bomb.yaml:6:54: error: the document has more than 100000 nodes once aliases are expanded
!     p: {type: ints, default: [&a0 [x, x, x, x, x, x, x, x, x, x], &a1 [*a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0], &...
!                                                      ^
[exit 1]
$ cd $TESTDATA && tapestry kernels list -k bad/metakernels/alias_loop.yaml
! bad/metakernels/alias_loop.yaml:7:30: error: the document has more than 100000 nodes once aliases are expanded
!     p: {type: ints, default: &a [1, *a]}
!                              ^
[exit 1]
$ cd $TESTDATA && tapestry kernels list -k bad/metakernels/deep_expression.yaml
! bad/metakernels/deep_expression.yaml:10:267: error: in where clause "len([[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[...": nested deeper than 256 levels at column 260
! ...[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[...
!                                                                          ^
[exit 1]
$ cd $TESTDATA && tapestry kernels list -k bad/metakernels/deep_value.yaml
! bad/metakernels/deep_value.yaml:5:286: error: value is nested deeper than 256 levels
! ...[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]...
!                                                                          ^
[exit 1]
$ cd $TESTDATA && tapestry kernels list -k bad/metakernels/deep_yaml.yaml
! bad/metakernels/deep_yaml.yaml:3:4008: error: invalid YAML: nested deeper than 500 levels
! ...]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]
!                                                                          ^
[exit 1]
$ cd $TESTDATA && tapestry optimize graphs/tiny.json --target bad/targets/deep_yaml.yaml -o $OLDPWD/plan.json
! bad/targets/deep_yaml.yaml:3:2001: error: invalid YAML: nested deeper than 500 levels
! ...a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {a: {...
!                                                                          ^
[exit 1]
$ cd $TESTDATA && tapestry kernels list -k bad/metakernels/fuzz_invalid_utf8.yaml
! bad/metakernels/fuzz_invalid_utf8.yaml:12:39: error: invalid UTF-8 byte 0xa8
!     dilation: {type: ints, default: [1�, 1]}
!                                       ^
[exit 1]
$ cd $TESTDATA && tapestry optimize graphs/tiny.json --target bad/targets/fuzz_invalid_utf8.yaml -o $OLDPWD/plan.json
! bad/targets/fuzz_invalid_utf8.yaml:1:69: error: invalid UTF-8 byte 0xa1
! # Two NVIDIA DGX H100 nodes (16 GPUs): NVLink 4 within a node, Infin��and NDR
!                                                                     ^
[exit 1]
$ cd $TESTDATA && tapestry --format json kernels list -k bad/metakernels/fuzz_invalid_utf8.yaml
{
  "status": "error",
  "exit_code": 1,
  "error": {
    "message": "invalid UTF-8 byte 0xa8",
    "file": "bad/metakernels/fuzz_invalid_utf8.yaml",
    "line": 12,
    "column": 39
  }
}
! bad/metakernels/fuzz_invalid_utf8.yaml:12:39: error: invalid UTF-8 byte 0xa8
!     dilation: {type: ints, default: [1�, 1]}
!                                       ^
[exit 1]
$ printf '{"tapestry": "graph/v1", "name": "long", "tensors": {%s"x": {"dtype": "float32", "shape": [2, -3]}}, "operations": [], "outputs": ["x"]}' "$(printf '"t%d": {"dtype": "float32", "shape": [1]}, ' $(seq 1 20))" > g.json && tapestry expand g.json
! g.json:1:944: error: at /tensors/x/shape/1: negative dim -3: dims must be >= 0
! ...pe": "float32", "shape": [1]}, "x": {"dtype": "float32", "shape": [2, -3]}}, "operations": [], "outputs": ["x"]}
!                                                                          ^
[exit 1]
[created g.json]
$ cd $TESTDATA && tapestry optimize graphs/tiny.json --target bad/targets/fuzz_escaped_utf8.yaml -o $OLDPWD/plan.json
! bad/targets/fuzz_escaped_utf8.yaml:1:10: error: invalid UTF-8 in a string (byte 0x85, from an escape sequence)
! {"name": "naidN4YAML9ExceptionEt: 3.35head:s
!          ^
[exit 1]
