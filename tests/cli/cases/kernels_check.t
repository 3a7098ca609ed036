## `kernels check` runs every kernel's examples: exit 3 on a failing one, 1 on a load error.
$ tapestry kernels check | sed -E 's/[0-9]+ kernels, [0-9]+ examples/N kernels, M examples/'
checked N kernels, M examples: all passed
$ cd $TESTDATA && tapestry kernels check -q -k metakernels/user_ops.yaml
$ cd $TESTDATA && tapestry kernels check -q -k bad/metakernels/failing_example.yaml
! bad/metakernels/failing_example.yaml:13:7: error: kernel double, example 2: output result is [2, 3] float32, expected [3, 2] float32
!     - inputs: {input: {shape: [2, 3], dtype: float32}}
!       ^
[exit 3]
$ cd $TESTDATA && tapestry --format json kernels check -k bad/metakernels/failing_example.yaml 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["status"], json.dumps(d["failures"], indent=1))'
failed [
 {
  "kernel": "double",
  "example": 2,
  "file": "bad/metakernels/failing_example.yaml",
  "line": 13,
  "message": "kernel double, example 2: output result is [2, 3] float32, expected [3, 2] float32"
 }
]
[exit 3]
$ cd $TESTDATA && tapestry kernels check -k bad/metakernels/pattern_syntax.yaml
! bad/metakernels/pattern_syntax.yaml:4:32: error: in shape pattern "[$batch..., $m $k]": expected ',' or ']' at column 16
!     X: {shape: "[$batch..., $m $k]", dtype: "$dtype"}
!                                ^
[exit 1]
