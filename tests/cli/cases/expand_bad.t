## Bad graphs: one file per problem under testdata/bad/graphs, each expanded with -o and
## checked for its exact diagnostic (FILE:LINE:COL, JSON pointer, the line and a caret), exit 1,
## and no output file left behind (a [created out.json] line would fail the case).
## Errors found by a standard-library template carry a note pointing into it; its line
## numbers are masked (LINE:COL) so that editing metakernels/*.yaml does not break this file.
## Huge inputs are generated and piped in (200,000-deep nesting, a 1.5 MB one-line file);
## only their first diagnostic line is kept, since the snippet is the whole line.
## Bad command lines: a missing file (exit 1), an unknown flag (exit 2), an unwritable -o (exit 1).
$ cd $TESTDATA && tapestry expand bad/graphs/bad_graph_name.json -o $OLDPWD/out.json
! bad/graphs/bad_graph_name.json:3:11: error: at /name: invalid graph name "my graph": names are 1 to 256 printable ASCII characters other than space, '"' and '\'
!   "name": "my graph",
!           ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/bad_operation_name.json -o $OLDPWD/out.json
! bad/graphs/bad_operation_name.json:8:14: error: at /operations/0/name: invalid operation name "say \"hi\"": names are 1 to 256 printable ASCII characters other than space, '"' and '\'
!     {"name": "say \"hi\"", "kernel": "relu", "inputs": {"input": "x"}, "outputs": {"result": "y"}}
!              ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/bad_output_tensor_name.json -o $OLDPWD/out.json
! bad/graphs/bad_output_tensor_name.json:8:87: error: at /operations/0/outputs/result: invalid tensor name "y\\1": names are 1 to 256 printable ASCII characters other than space, '"' and '\'
!     {"name": "act", "kernel": "relu", "inputs": {"input": "x"}, "outputs": {"result": "y\\1"}}
!                                                                                       ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/bad_param_type.json -o $OLDPWD/out.json
! bad/graphs/bad_param_type.json:8:63: error: at /operations/0/params/axis: param axis of softmax: expected int, got string
!     {"name": "probs", "kernel": "softmax", "params": {"axis": "last"}, "inputs": {"input": "x"}, "outputs": {"result": "y"}}
!                                                               ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/bad_param_value.json -o $OLDPWD/out.json 2>&1 | sed -E 's#^(<stdlib>/[a-z_]+[.]yaml):[0-9]+:[0-9]+:#\1:LINE:COL:#'
bad/graphs/bad_param_value.json:8:5: error: at /operations/0: probs (softmax): axis must be a dim of the input (from -rank to rank - 1) ($shape = [4, 8], $axis = 2)
    {"name": "probs", "kernel": "softmax", "params": {"axis": 2}, "inputs": {"input": "x"}, "outputs": {"result": "y"}}
    ^
<stdlib>/normalization.yaml:LINE:COL: note: in kernel softmax, where clause "-len($shape) <= $axis and $axis < len($shape)" (built in; 'tapestry kernels show softmax' prints it)
    - check: "-len($shape) <= $axis and $axis < len($shape)"
              ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/conv_two_activations.json -o $OLDPWD/out.json 2>&1 | sed -E 's#^(<stdlib>/[a-z_]+[.]yaml):[0-9]+:[0-9]+:#\1:LINE:COL:#'
bad/graphs/conv_two_activations.json:10:5: error: at /operations/0: conv (conv2d_act): silu and hard_swish are two activations: set one at most ($silu = true, $hard_swish = true)
    {"name": "conv", "kernel": "conv2d_act", "params": {"padding": [1, 1], "silu": true, "hard_swish": true},
    ^
<stdlib>/conv.yaml:LINE:COL: note: in kernel conv2d_act, where clause "not ($silu and $hard_swish)" (built in; 'tapestry kernels show conv2d_act' prints it)
    - check: "not ($silu and $hard_swish)"
              ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/bad_perm.json -o $OLDPWD/out.json 2>&1 | sed -E 's#^(<stdlib>/[a-z_]+[.]yaml):[0-9]+:[0-9]+:#\1:LINE:COL:#'
bad/graphs/bad_perm.json:8:5: error: at /operations/0: t (transpose): perm must have one entry per dim of the input ($perm = [1, 0, 2], $shape = [4, 8])
    {"name": "t", "kernel": "transpose", "params": {"perm": [1, 0, 2]}, "inputs": {"input": "x"}, "outputs": {"result": "y"}}
    ^
<stdlib>/shape.yaml:LINE:COL: note: in kernel transpose, where clause "len($perm) == len($shape)" (built in; 'tapestry kernels show transpose' prints it)
    - check: "len($perm) == len($shape)"
              ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/bad_reshape.json -o $OLDPWD/out.json 2>&1 | sed -E 's#^(<stdlib>/[a-z_]+[.]yaml):[0-9]+:[0-9]+:#\1:LINE:COL:#'
bad/graphs/bad_reshape.json:8:5: error: at /operations/0: r (reshape): shape must hold as many elements as the input ($out = [5, 6], $in = [4, 8])
    {"name": "r", "kernel": "reshape", "params": {"shape": [5, -1]}, "inputs": {"input": "x"}, "outputs": {"result": "y"}}
    ^
<stdlib>/shape.yaml:LINE:COL: note: in kernel reshape, where clause "prod($out) == prod($in)" (built in; 'tapestry kernels show reshape' prints it)
    - check: "prod($out) == prod($in)"
              ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/bad_tensor_name.json -o $OLDPWD/out.json
! bad/graphs/bad_tensor_name.json:5:21: error: at /tensors/input tokens: invalid tensor name "input tokens": names are 1 to 256 printable ASCII characters other than space, '"' and '\'
!     "input tokens": {"dtype": "int64", "shape": [8, 128]}
!                     ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/broadcast_mismatch.json -o $OLDPWD/out.json 2>&1 | sed -E 's#^(<stdlib>/[a-z_]+[.]yaml):[0-9]+:[0-9]+:#\1:LINE:COL:#'
bad/graphs/broadcast_mismatch.json:9:5: error: at /operations/0: sum (add): in index expression "broadcast($a, $b)": cannot broadcast [4, 8] with [3] at column 1
    {"name": "sum", "kernel": "add", "inputs": {"A": "x", "B": "b"}, "outputs": {"result": "y"}}
    ^
<stdlib>/elementwise.yaml:LINE:COL: note: in kernel add, index expression "broadcast($a, $b)" (built in; 'tapestry kernels show add' prints it)
  index: "broadcast($a, $b)"
          ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/constant_not_bool.json -o $OLDPWD/out.json
! bad/graphs/constant_not_bool.json:5:60: error: at /tensors/x/constant: "constant" must be true or false, not "yes"
!     "x": {"dtype": "float32", "shape": [4, 8], "constant": "yes"}
!                                                            ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/constant_produced.json -o $OLDPWD/out.json
! bad/graphs/constant_produced.json:6:60: error: at /tensors/y/constant: tensor "y" is produced by act; only graph inputs can be constant
!     "y": {"dtype": "float32", "shape": [4, 8], "constant": true}
!                                                            ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/cycle.json -o $OLDPWD/out.json
! bad/graphs/cycle.json:9:5: error: at /operations/0: cycle: fc -> act -> residual -> fc
!     {"name": "fc", "kernel": "matmul", "inputs": {"X": "z", "W": "w"}, "outputs": {"result": "h"}},
!     ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/declared_dtype_conflict.json -o $OLDPWD/out.json
! bad/graphs/declared_dtype_conflict.json:6:20: error: at /tensors/y/dtype: tensor y is declared as [4, 8] bfloat16, but act (relu) produces [4, 8] float32
!     "y": {"dtype": "bfloat16", "shape": [4, 8]}
!                    ^
! bad/graphs/declared_dtype_conflict.json:9:5: note: at /operations/0: act produces y here
!     {"name": "act", "kernel": "relu", "inputs": {"input": "x"}, "outputs": {"result": "y"}}
!     ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/declared_shape_conflict.json -o $OLDPWD/out.json
! bad/graphs/declared_shape_conflict.json:7:40: error: at /tensors/y/shape: tensor y is declared as [4, 8] float32, but fc (matmul) produces [4, 2] float32
!     "y": {"dtype": "float32", "shape": [4, 8]}
!                                        ^
! bad/graphs/declared_shape_conflict.json:10:5: note: at /operations/0: fc produces y here
!     {"name": "fc", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "y"}}
!     ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/default_name_collision.json -o $OLDPWD/out.json
! bad/graphs/default_name_collision.json:9:89: error: at /operations/1/outputs/result: tensor "act.result" has two producers: act (at /operations/0) and other
!     {"name": "other", "kernel": "tanh", "inputs": {"input": "x"}, "outputs": {"result": "act.result"}}
!                                                                                         ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/dim_not_integer.json -o $OLDPWD/out.json
! bad/graphs/dim_not_integer.json:5:44: error: at /tensors/x/shape/1: expected an integer, got number 8.5
!     "x": {"dtype": "float32", "shape": [4, 8.5]}
!                                            ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/dtype_mismatch.json -o $OLDPWD/out.json 2>&1 | sed -E 's#^(<stdlib>/[a-z_]+[.]yaml):[0-9]+:[0-9]+:#\1:LINE:COL:#'
bad/graphs/dtype_mismatch.json:9:5: error: at /operations/0: sum (add): A has dtype float32 and B has dtype float16: $dtype is float32 from A but float16 from B
    {"name": "sum", "kernel": "add", "inputs": {"A": "x", "B": "b"}, "outputs": {"result": "y"}}
    ^
<stdlib>/elementwise.yaml:LINE:COL: note: in kernel add, dtype expression "$dtype" (built in; 'tapestry kernels show add' prints it)
    B: {shape: "[$b...]", dtype: "$dtype", ipf: "[broadcast_rows(@, $b)...] :> [1...]"}
                                  ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/dtype_not_allowed.json -o $OLDPWD/out.json
! bad/graphs/dtype_not_allowed.json:8:5: error: at /operations/0: act (gelu): $dtype is int32 from input, expected one of: float32, float64, float16, bfloat16
!     {"name": "act", "kernel": "gelu", "inputs": {"input": "x"}, "outputs": {"result": "y"}}
!     ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/duplicate_graph_output.json -o $OLDPWD/out.json
! bad/graphs/duplicate_graph_output.json:10:20: error: at /outputs/1: tensor "y" is listed twice in outputs (also at /outputs/0)
!   "outputs": ["y", "y"]
!                    ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/duplicate_key.json -o $OLDPWD/out.json
! bad/graphs/duplicate_key.json:6:5: error: duplicate key "x" (first defined at line 5, column 5)
!     "x": {"dtype": "float32", "shape": [8]}
!     ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/duplicate_operation_name.json -o $OLDPWD/out.json
! bad/graphs/duplicate_operation_name.json:9:14: error: at /operations/1/name: duplicate operation name "act" (also at /operations/0)
!     {"name": "act", "kernel": "relu", "inputs": {"input": "y"}, "outputs": {"result": "z"}}
!              ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/element_count_overflow.json -o $OLDPWD/out.json
! bad/graphs/element_count_overflow.json:5:40: error: at /tensors/x/shape: shape [4294967296, 4294967296] has too many elements: the element count overflows int64
!     "x": {"dtype": "float32", "shape": [4294967296, 4294967296]}
!                                        ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/empty.json -o $OLDPWD/out.json
! bad/graphs/empty.json:1:1: error: empty file: expected a JSON value
! 
! ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/empty_list_port.json -o $OLDPWD/out.json
! bad/graphs/empty_list_port.json:8:5: error: at /operations/0: cat (concat): input tensors is a list input and needs at least one tensor
!     {"name": "cat", "kernel": "concat", "params": {"axis": -1}, "inputs": {"tensors": []}, "outputs": {"result": "y"}}
!     ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/expanded_edited_flops.json -o $OLDPWD/out.json
! bad/graphs/expanded_edited_flops.json:24:16: error: at /operations/0/flops: the stored flops 64 disagrees with the expansion, which gives 32 (was the file edited, or expanded with other kernels?)
!       "flops": 64
!                ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/expanded_missing_field.json -o $OLDPWD/out.json
! bad/graphs/expanded_missing_field.json:9:5: error: at /operations/0: missing required key "reduction_dims"
!     {
!     ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/expanded_wrong_producer.json -o $OLDPWD/out.json
! bad/graphs/expanded_wrong_producer.json:6:60: error: at /tensors/y/producer: the stored producer null disagrees with the graph, where operation act produces y
!     "y": {"dtype": "float32", "shape": [4, 8], "producer": null}
!                                                            ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/invalid_utf8.json -o $OLDPWD/out.json
! bad/graphs/invalid_utf8.json:4:14: error: invalid UTF-8 byte 0xe9
!   "doc": "caf� au lait",
!              ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/kernel_not_string.json -o $OLDPWD/out.json
! bad/graphs/kernel_not_string.json:8:31: error: at /operations/0/kernel: expected a string, got array
!     {"name": "act", "kernel": ["relu"], "inputs": {"input": "x"}, "outputs": {"result": "y"}}
!                               ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/list_port_given_name.json -o $OLDPWD/out.json
! bad/graphs/list_port_given_name.json:9:87: error: at /operations/0/inputs/tensors: input port tensors of kernel concat is a list port: give an array of tensor names
!     {"name": "cat", "kernel": "concat", "params": {"axis": -1}, "inputs": {"tensors": "x"}, "outputs": {"result": "y"}}
!                                                                                       ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/malformed.json -o $OLDPWD/out.json
! bad/graphs/malformed.json:4:3: error: expected ',' or '}' after object member
!   "tensors": {}
!   ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/missing_dtype.json -o $OLDPWD/out.json
! bad/graphs/missing_dtype.json:5:10: error: at /tensors/x: missing required key "dtype"
!     "x": {"shape": [4, 8]}
!          ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/missing_input_port.json -o $OLDPWD/out.json
! bad/graphs/missing_input_port.json:8:50: error: at /operations/0/inputs: missing input port W of kernel matmul (its inputs: X, W)
!     {"name": "fc", "kernel": "matmul", "inputs": {"X": "x"}, "outputs": {"result": "y"}}
!                                                  ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/missing_required_port.json -o $OLDPWD/out.json
! bad/graphs/missing_required_port.json:9:52: error: at /operations/0/inputs: missing input port weight of kernel conv2d (its inputs: input, weight, bias (optional))
!     {"name": "conv", "kernel": "conv2d", "inputs": {"input": "x", "bias": "b"}, "outputs": {"result": "y"}}
!                                                    ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/missing_operations.json -o $OLDPWD/out.json
! bad/graphs/missing_operations.json:1:1: error: missing required key "operations"
! {
! ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/missing_param.json -o $OLDPWD/out.json
! bad/graphs/missing_param.json:8:5: error: at /operations/0: missing param perm of kernel transpose (ints, no default)
!     {"name": "t", "kernel": "transpose", "inputs": {"input": "x"}, "outputs": {"result": "y"}}
!     ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/missing_tag.json -o $OLDPWD/out.json
! bad/graphs/missing_tag.json:1:1: error: missing required key "tapestry"
! {
! ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/negative_dim.json -o $OLDPWD/out.json
! bad/graphs/negative_dim.json:5:44: error: at /tensors/x/shape/1: negative dim -8: dims must be >= 0
!     "x": {"dtype": "float32", "shape": [4, -8]}
!                                            ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/not_an_object.json -o $OLDPWD/out.json
! bad/graphs/not_an_object.json:1:1: error: expected an object, got array
! [
! ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/operations_not_array.json -o $OLDPWD/out.json
! bad/graphs/operations_not_array.json:5:17: error: at /operations: expected an array, got object
!   "operations": {"fc1": {"kernel": "relu"}}
!                 ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/overflowing_dim.json -o $OLDPWD/out.json
! bad/graphs/overflowing_dim.json:5:44: error: at /tensors/x/shape/1: integer out of int64 range: 9223372036854775808
!     "x": {"dtype": "float32", "shape": [4, 9223372036854775808]}
!                                            ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/optional_port_mismatch.json -o $OLDPWD/out.json
! bad/graphs/optional_port_mismatch.json:10:5: error: at /operations/0: conv (conv2d): weight is [3, 2, 3, 3] and bias is [4]: $O is 3 from weight but 4 from bias
!     {"name": "conv", "kernel": "conv2d", "inputs": {"input": "x", "weight": "w", "bias": "b"}, "outputs": {"result": "y"}}
!     ^
! <stdlib>/conv.yaml:39:15: note: in kernel conv2d, shape pattern "[$O]" (built in; 'tapestry kernels show conv2d' prints it)
!       shape: "[$O]"
!               ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/params_not_object.json -o $OLDPWD/out.json
! bad/graphs/params_not_object.json:8:52: error: at /operations/0/params: expected an object, got array
!     {"name": "t", "kernel": "transpose", "params": [1, 0], "inputs": {"input": "x"}, "outputs": {"result": "y"}}
!                                                    ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/port_not_a_name.json -o $OLDPWD/out.json
! bad/graphs/port_not_a_name.json:8:59: error: at /operations/0/inputs/input: expected a tensor name, or an array of tensor names for a list port, got integer 3
!     {"name": "act", "kernel": "relu", "inputs": {"input": 3}, "outputs": {"result": "y"}}
!                                                           ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/rank_too_large.json -o $OLDPWD/out.json
! bad/graphs/rank_too_large.json:5:40: error: at /tensors/x/shape: rank 17 is more than the maximum rank 16
!     "x": {"dtype": "float32", "shape": [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2]}
!                                        ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/self_cycle.json -o $OLDPWD/out.json
! bad/graphs/self_cycle.json:8:5: error: at /operations/0: cycle: loop -> loop
!     {"name": "loop", "kernel": "add", "inputs": {"A": "x", "B": "y"}, "outputs": {"result": "y"}}
!     ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/shape_mismatch.json -o $OLDPWD/out.json 2>&1 | sed -E 's#^(<stdlib>/[a-z_]+[.]yaml):[0-9]+:[0-9]+:#\1:LINE:COL:#'
bad/graphs/shape_mismatch.json:9:5: error: at /operations/0: fc (matmul): X and W disagree on k (X is [..., m, k], or [..., k, m] with transpose_x; W is [..., k, n], or [..., n, k] with transpose_w) ($k = 8, $k_w = 9)
    {"name": "fc", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "y"}}
    ^
<stdlib>/matmul.yaml:LINE:COL: note: in kernel matmul, where clause "$k == $k_w" (built in; 'tapestry kernels show matmul' prints it)
    - check: "$k == $k_w"
              ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/shape_not_array.json -o $OLDPWD/out.json
! bad/graphs/shape_not_array.json:5:40: error: at /tensors/x/shape: expected an array, got string "4x8"
!     "x": {"dtype": "float32", "shape": "4x8"}
!                                        ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/single_port_given_list.json -o $OLDPWD/out.json
! bad/graphs/single_port_given_list.json:8:59: error: at /operations/0/inputs/input: input port input of kernel relu takes one tensor: give a tensor name, not an array
!     {"name": "act", "kernel": "relu", "inputs": {"input": ["x"]}, "outputs": {"result": "y"}}
!                                                           ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/split_count_mismatch.json -o $OLDPWD/out.json
! bad/graphs/split_count_mismatch.json:9:55: error: at /operations/0/outputs/results: parts (split) produces 3 tensors on results, but 2 names are given
!      "inputs": {"input": "x"}, "outputs": {"results": ["a", "b"]}}
!                                                       ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/trailing_comma.json -o $OLDPWD/out.json
! bad/graphs/trailing_comma.json:5:19: error: trailing comma before '}' is not allowed
!   "operations": [],
!                   ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/two_producers.json -o $OLDPWD/out.json
! bad/graphs/two_producers.json:9:88: error: at /operations/1/outputs/result: tensor "y" has two producers: act1 (at /operations/0) and act2
!     {"name": "act2", "kernel": "tanh", "inputs": {"input": "x"}, "outputs": {"result": "y"}}
!                                                                                        ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/unknown_dtype.json -o $OLDPWD/out.json
! bad/graphs/unknown_dtype.json:5:20: error: at /tensors/x/dtype: unknown dtype "float" (expected one of: float32, float64, float16, bfloat16, int32, int64, int16, int8, uint8, uint16, uint32, uint64, bool, complex64, complex128, float8_e4m3fn, float8_e5m2)
!     "x": {"dtype": "float", "shape": [4, 8]}
!                    ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/unknown_graph_output.json -o $OLDPWD/out.json
! bad/graphs/unknown_graph_output.json:10:20: error: at /outputs/1: unknown tensor "z": no operation produces it and "tensors" does not declare it
!   "outputs": ["y", "z"]
!                    ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/unknown_input_port.json -o $OLDPWD/out.json
! bad/graphs/unknown_input_port.json:9:71: error: at /operations/0/inputs/weight: kernel matmul has no input port "weight" (its inputs: X, W)
!     {"name": "fc", "kernel": "matmul", "inputs": {"X": "x", "weight": "w"}, "outputs": {"result": "y"}}
!                                                                       ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/unknown_kernel.json -o $OLDPWD/out.json
! bad/graphs/unknown_kernel.json:9:30: error: at /operations/0/kernel: unknown kernel "matmull" (did you mean "matmul"?)
!     {"name": "fc", "kernel": "matmull", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "y"}}
!                              ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/unknown_kernel_no_hint.json -o $OLDPWD/out.json
! bad/graphs/unknown_kernel_no_hint.json:8:31: error: at /operations/0/kernel: unknown kernel "swish" (see 'tapestry kernels list')
!     {"name": "act", "kernel": "swish", "inputs": {"input": "x"}, "outputs": {"result": "y"}}
!                               ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/unknown_operation_key.json -o $OLDPWD/out.json
! bad/graphs/unknown_operation_key.json:8:48: error: at /operations/0/input: unknown key "input" (expected one of: name, kernel, doc, params, inputs, outputs)
!     {"name": "act", "kernel": "relu", "input": {"input": "x"}, "outputs": {"result": "y"}}
!                                                ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/unknown_output_port.json -o $OLDPWD/out.json
! bad/graphs/unknown_output_port.json:8:87: error: at /operations/0/outputs/output: kernel relu has no output port "output" (its outputs: result)
!     {"name": "act", "kernel": "relu", "inputs": {"input": "x"}, "outputs": {"output": "y"}}
!                                                                                       ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/unknown_param.json -o $OLDPWD/out.json
! bad/graphs/unknown_param.json:8:63: error: at /operations/0/params/axes: kernel softmax has no param "axes" (did you mean "axis"?)
!     {"name": "probs", "kernel": "softmax", "params": {"axes": -1}, "inputs": {"input": "x"}, "outputs": {"result": "y"}}
!                                                               ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/unknown_tensor.json -o $OLDPWD/out.json
! bad/graphs/unknown_tensor.json:10:59: error: at /operations/1/inputs/input: unknown tensor "hh": no operation produces it and "tensors" does not declare it (did you mean "h"?)
!     {"name": "act", "kernel": "relu", "inputs": {"input": "hh"}, "outputs": {"result": "y"}}
!                                                           ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/unknown_tensor_key.json -o $OLDPWD/out.json
! bad/graphs/unknown_tensor_key.json:5:58: error: at /tensors/x/layout: unknown key "layout" (expected one of: dtype, shape, constant)
!     "x": {"dtype": "float32", "shape": [4, 8], "layout": "row_major"}
!                                                          ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/unknown_top_key.json -o $OLDPWD/out.json
! bad/graphs/unknown_top_key.json:5:16: error: at /operatons: unknown key "operatons" (expected one of: tapestry, name, doc, tensors, operations, outputs)
!   "operatons": []
!                ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/unnamed_list_output.json -o $OLDPWD/out.json
! bad/graphs/unnamed_list_output.json:8:5: error: at /operations/0: output port results of kernel split is a list port: name its tensors in "outputs" ("results": ["a", "b", ...])
!     {"name": "halves", "kernel": "split", "params": {"axis": -1, "sections": [4, 4]}, "inputs": {"input": "x"}}
!     ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/user_graph_with_expanded_fields.json -o $OLDPWD/out.json
! bad/graphs/user_graph_with_expanded_fields.json:5:60: error: at /tensors/x/producer: unknown key "producer" (expected one of: dtype, shape, constant)
!     "x": {"dtype": "float32", "shape": [4, 8], "producer": null},
!                                                            ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/wrong_tag.json -o $OLDPWD/out.json
! bad/graphs/wrong_tag.json:2:15: error: at /tapestry: unknown format "graph/v2" (expected "graph/v1" or "expanded/v1")
!   "tapestry": "graph/v2",
!               ^
[exit 1]
$ python3 -c 'print("[" * 200000 + "]" * 200000)' | tapestry expand - -o out.json 2>&1 | sed -n 1p | cut -c1-160
<stdin>:1:257: error: nesting deeper than 256 levels
[exit 1]
$ python3 -c 'print("{\"a\":" * 200000 + "1" + "}" * 200000)' | tapestry expand - -o out.json 2>&1 | sed -n 1p | cut -c1-160
<stdin>:1:1281: error: nesting deeper than 256 levels
[exit 1]
$ python3 -c 'import json; print(json.dumps({"tapestry": "graph/v1", "name": "wide", "tensors": {"t%d" % i: {"dtype": "float32", "shape": [i]} for i in range(30000)}, "operations": [], "outputs": ["nope"]}))' | tapestry expand - -o out.json 2>&1 | sed -n 1p | cut -c1-160
<stdin>:1:1477865: error: at /outputs/0: unknown tensor "nope": no operation produces it and "tensors" does not declare it
[exit 1]
$ tapestry expand missing.json -o out.json
! missing.json: error: cannot open file: No such file or directory
[exit 1]
$ tapestry expand $TESTDATA/graphs/mlp.json --frobnicate
! tapestry: error: The following argument was not expected: --frobnicate
[exit 2]
$ tapestry expand $TESTDATA/graphs/mlp.json -o no/such/dir/out.json
! no/such/dir/out.json: error: cannot write output file: No such file or directory
[exit 1]
$ tapestry expand $TESTDATA/graphs/mlp.json -k $TESTDATA/bad/metakernels/bad_ipf.yaml -o out.json 2>&1 | sed 's#.*/testdata/##'
bad/metakernels/bad_ipf.yaml:6:21: error: in ipf "[@[0] * , @[1]] :> [1...]": expected an expression at column 9
      ipf: '[@[0] * , @[1]] :> [1...]'
                    ^
[exit 1]
$ cd $TESTDATA && tapestry expand bad/graphs/cycle.json -o $OLDPWD/out.json --format json
{
  "status": "error",
  "exit_code": 1,
  "error": {
    "message": "at /operations/0: cycle: fc -> act -> residual -> fc",
    "file": "bad/graphs/cycle.json",
    "line": 9,
    "column": 5,
    "pointer": "/operations/0"
  }
}
! bad/graphs/cycle.json:9:5: error: at /operations/0: cycle: fc -> act -> residual -> fc
!     {"name": "fc", "kernel": "matmul", "inputs": {"X": "z", "W": "w"}, "outputs": {"result": "h"}},
!     ^
[exit 1]
