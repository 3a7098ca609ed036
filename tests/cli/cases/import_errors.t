## Bad ONNX inputs (testdata/bad/onnx, written by scripts/make_onnx_models.py): each gives
## one diagnostic naming the file, exit 1, and leaves no output file behind.
## Bad command lines: a bad --dim (exit 2), an unknown --dim name (exit 2).
$ cd $TESTDATA && tapestry import bad/onnx/truncated.onnx -o $OLDPWD/out.json
! bad/onnx/truncated.onnx: error: not an ONNX model: the file does not parse as an ONNX ModelProto (truncated or not ONNX)
[exit 1]
$ cd $TESTDATA && tapestry import bad/onnx/not_onnx.onnx -o $OLDPWD/out.json
! bad/onnx/not_onnx.onnx: error: not an ONNX model: the file does not parse as an ONNX ModelProto (truncated or not ONNX)
[exit 1]
$ cd $TESTDATA && tapestry import bad/onnx/unsupported_op.onnx -o $OLDPWD/out.json
! bad/onnx/unsupported_op.onnx: error: unsupported ONNX operator Einsum (node contract); tapestry imports: Abs, Acos, Acosh, Add, And, ArgMax, ArgMin, Asin, Asinh, Atan, Atanh, AveragePool, BatchNormalization, Cast, Ceil, Celu, Clip, Concat, Conv, ConvTranspose, Cos, Cosh, CumSum, DepthToSpace, Div, Dropout, Elu, Equal, Erf, Exp, Expand, Flatten, Floor, Gather, GatherElements, Gemm, GlobalAveragePool, Greater, GreaterOrEqual, HardSigmoid, HardSwish, Hardmax, Identity, IsInf, IsNaN, LayerNormalization, LeakyRelu, Less, LessOrEqual, Log, MatMul, Max, MaxPool, Mean, Min, Mod, Mul, Neg, Not, Or, PRelu, Pad, Pow, Reciprocal, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceMax, ReduceMean, ReduceMin, ReduceProd, ReduceSum, ReduceSumSquare, Relu, Reshape, Resize, Round, Selu, Sigmoid, Sign, Sin, Sinh, Slice, Softmax, Softplus, Softsign, SpaceToDepth, Split, Sqrt, Squeeze, Sub, Sum, Tan, Tanh, ThresholdedRelu, Tile, Transpose, Trilu, Unsqueeze, Where, Xor
[exit 1]
$ cd $TESTDATA && tapestry import bad/onnx/missing_shape.onnx -o $OLDPWD/out.json
! bad/onnx/missing_shape.onnx: error: graph input x has no shape; tapestry needs the shape of every input (export with example inputs of fixed shape)
[exit 1]
$ cd $TESTDATA && tapestry import bad/onnx/dynamic_batch.onnx -o $OLDPWD/out.json
! bad/onnx/dynamic_batch.onnx: error: graph input x has the symbolic dim batch (dim 0); bind it with --dim batch=N
[exit 1]
$ cd $TESTDATA && tapestry import bad/onnx/empty_graph.onnx -o $OLDPWD/out.json
! bad/onnx/empty_graph.onnx: error: the model's graph has no nodes
[exit 1]
$ cd $TESTDATA && tapestry import bad/onnx/future_opset.onnx -o $OLDPWD/out.json
! bad/onnx/future_opset.onnx: error: the model imports opset 99 of the default ONNX domain; tapestry imports opsets 1 to 17 (those below 13 converted to 13; re-export with opset_version=17)
[exit 1]
$ cd $TESTDATA && tapestry import bad/onnx/asymmetric_pads.onnx -o $OLDPWD/out.json
! bad/onnx/asymmetric_pads.onnx: error: node avg (AveragePool): pads that are not symmetric with count_include_pad 0 are not supported (the divisor would count the side padded first)
[exit 1]
$ cd $TESTDATA && tapestry import bad/onnx/fuzz_conv_stride0.onnx -o $OLDPWD/out.json
! bad/onnx/fuzz_conv_stride0.onnx: error: node conv (Conv): attribute strides must be positive
[exit 1]
$ cd $TESTDATA && tapestry import bad/onnx/fuzz_old_opset_stride0.onnx -o $OLDPWD/out.json
! bad/onnx/fuzz_old_opset_stride0.onnx: error: node conv (Conv): attribute strides must be positive
[exit 1]
$ cd $TESTDATA && tapestry import bad/onnx/fuzz_no_inputs.onnx -o $OLDPWD/out.json
! bad/onnx/fuzz_no_inputs.onnx: error: node act (Relu) has 0 inputs and 1 outputs, which opset 17 of Relu does not allow
[exit 1]
$ cd $TESTDATA && tapestry import bad/onnx/fuzz_name_byte.onnx -o $OLDPWD/out.json
! bad/onnx/fuzz_name_byte.onnx: error: tensor name "y\xff" is not a valid tapestry name (names are 1 to 256 printable ASCII characters other than space, '"' and '\')
[exit 1]
$ cd $TESTDATA && tapestry import bad/onnx/fuzz_undefined_output.onnx -o $OLDPWD/out.json
! bad/onnx/fuzz_undefined_output.onnx: error: graph output u is no graph input, initializer or node output
[exit 1]
$ cd $TESTDATA && tapestry import bad/onnx/undefined_output.onnx -o $OLDPWD/out.json
! bad/onnx/undefined_output.onnx: error: graph output u is no graph input, initializer or node output
[exit 1]
$ cd $TESTDATA && tapestry import bad/onnx/undefined_input.onnx -o $OLDPWD/out.json
! bad/onnx/undefined_input.onnx: error: node act (Relu) reads z, which is no graph input, initializer or node output
[exit 1]
$ cd $TESTDATA && tapestry import bad/onnx/defined_twice.onnx -o $OLDPWD/out.json
! bad/onnx/defined_twice.onnx: error: value y is defined twice: by node a (Relu) and by node b (Neg)
[exit 1]
$ cd $TESTDATA && tapestry import bad/onnx/fuzz_conv_rank.onnx -o $OLDPWD/out.json
! bad/onnx/fuzz_conv_rank.onnx: error: node conv (Conv): only 1-D and 2-D convolutions ([N, C, L] input and [O, C, K] weight, or [N, C, H, W] and [O, C, KH, KW]) are supported
[exit 1]
$ cd $TESTDATA && tapestry import bad/onnx/conv_computed_weight.onnx -o $OLDPWD/out.json
! bad/onnx/conv_computed_weight.onnx: error: node conv (Conv): the shape of its weight w must be known from the graph's inputs or initializers, with a window of positive sizes, or the node must have a kernel_shape attribute
[exit 1]
$ cd $TESTDATA && tapestry import bad/onnx -o $OLDPWD/out.json
! bad/onnx: error: is a directory, expected an ONNX model file
[exit 1]
$ tapestry import missing.onnx -o out.json
! missing.onnx: error: cannot open file: No such file or directory
[exit 1]
$ tapestry import $TESTDATA/bad/onnx/dynamic_batch.onnx --dim batch -o out.json
! tapestry: error: --dim batch: expected NAME=N with N a positive integer (--dim batch=8)
[exit 2]
$ tapestry import $TESTDATA/bad/onnx/dynamic_batch.onnx --dim batch=0 -o out.json
! tapestry: error: --dim batch=0: expected NAME=N with N a positive integer (--dim batch=8)
[exit 2]
$ tapestry import $TESTDATA/bad/onnx/dynamic_batch.onnx --dim batch=x -o out.json
! tapestry: error: --dim batch=x: expected NAME=N with N a positive integer (--dim batch=8)
[exit 2]
$ tapestry import $TESTDATA/bad/onnx/dynamic_batch.onnx --dim batch=2 --dim batch=3 -o out.json
! tapestry: error: --dim batch is given twice
[exit 2]
$ tapestry import $TESTDATA/bad/onnx/dynamic_batch.onnx --dim seq=8 -o out.json
! tapestry: error: --dim seq=8: no input of the model has a dim named seq (its symbolic dims: batch)
[exit 2]
$ tapestry import $TESTDATA/bad/onnx/dynamic_batch.onnx --dim batch=2 -o out.json && jq -c '.tensors' out.json
imported dynamic_batch: 1 ONNX nodes (0 folded) -> 1 operations, 1 inputs (0 constant) -> out.json
{"x":{"dtype":"float32","shape":[2,4]}}
[created out.json]
$ cd $TESTDATA && tapestry --format json import bad/onnx/unsupported_op.onnx -o $OLDPWD/out.json 2>/dev/null | jq -c '{exit_code, file: .error.file}'
{"exit_code":1,"file":"bad/onnx/unsupported_op.onnx"}
[exit 1]
$ tapestry import $TESTDATA/onnx/relu.onnx -o nodir/out.json
! nodir/out.json: error: cannot write output file: No such file or directory
[exit 1]
