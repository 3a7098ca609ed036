## Bad rule files: one file per problem under testdata/bad/rewrites. A malformed
## rule is a located error (exit 1); a wrong one fails `rewrites check` with its
## first counter-example (exit 3).
$ cd $TESTDATA && tapestry rewrites list -r bad/rewrites/unknown_key.yaml
! bad/rewrites/unknown_key.yaml:8:3: error: unknown key "exmaples" in rule relu_relu_typo (expected one of: doc, approximate, always, search, match, where, replace, examples)
!   exmaples:
!   ^
[exit 1]
$ cd $TESTDATA && tapestry rewrites list -r bad/rewrites/unknown_kernel.yaml
! bad/rewrites/unknown_kernel.yaml:7:21: error: replace.fused: unknown kernel "matmul_gelu" ('tapestry kernels list' lists them)
!     fused: {kernel: matmul_gelu, inputs: {X: x, W: w}, outputs: {result: z}}
!                     ^
[exit 1]
$ cd $TESTDATA && tapestry rewrites list -r bad/rewrites/unknown_port.yaml
! bad/rewrites/unknown_port.yaml:4:37: error: match.act: kernel relu has no input "x"
!     act: {kernel: relu, inputs: {x: a}, outputs: {result: b}}
!                                     ^
[exit 1]
$ cd $TESTDATA && tapestry rewrites list -r bad/rewrites/unbound_variable.yaml
! bad/rewrites/unbound_variable.yaml:8:81: error: replace.fused: variable weights is never bound (not a pattern input, nor an output of an earlier replacement operation)
!     fused: {kernel: conv2d_act, params_from: [conv], inputs: {input: x, weight: weights}, outputs: {result: z}}
!                                                                                 ^
[exit 1]
$ cd $TESTDATA && tapestry rewrites list -r bad/rewrites/exit_not_produced.yaml
! bad/rewrites/exit_not_produced.yaml:8:5: error: replace: the pattern's output z is not produced (every pattern output read by no pattern operation must be)
!     only: {kernel: relu, inputs: {input: x}, outputs: {result: out}}
!     ^
[exit 1]
$ cd $TESTDATA && tapestry rewrites list -r bad/rewrites/disconnected.yaml
! bad/rewrites/disconnected.yaml:5:13: error: match.second: shares no variable with the operations before it (a pattern is connected, in the order it lists them)
!     second: {kernel: relu, inputs: {input: c}, outputs: {result: d}}
!             ^
[exit 1]
$ cd $TESTDATA && tapestry rewrites list -r bad/rewrites/bad_condition.yaml
! bad/rewrites/bad_condition.yaml:7:19: error: in where "len($x) == == 2": expected an expression at column 12
!     - "len($x) == == 2"
!                   ^
[exit 1]
$ cd $TESTDATA && tapestry rewrites list -r bad/rewrites/no_examples.yaml
! bad/rewrites/no_examples.yaml:8:3: error: examples: a rule needs at least one (rewrites check runs them)
!   examples: []
!   ^
[exit 1]
$ cd $TESTDATA && tapestry rewrites check -r bad/rewrites/not_bool_condition.yaml relu_relu_len
checked 1 rule, 1 example (and 0 random shapes; 0 exactly on integers): 1 failed
! bad/rewrites/not_bool_condition.yaml:11:7: error: rule relu_relu_len, example 1: where "len($x)" is int 2, expected a bool
!     - inputs: {x: {shape: [2, 2], dtype: float32}}
!       ^
[exit 3]
$ cd $TESTDATA && tapestry rewrites check -r bad/rewrites/relu_into_product.yaml relu_into_product
checked 1 rule, 1 example (and 0 random shapes; 1 exactly on integers): 1 failed
! bad/rewrites/relu_into_product.yaml:12:7: error: rule relu_into_product, example 1: on small integers (seed 1), output z differs in float64: max relative error 1.7 (a rule of products, sums and moves must agree exactly)
!     - inputs: {x: {shape: [4, 6], dtype: float32}, w: {shape: [6, 3], dtype: float32}}
!       ^
[exit 3]
## Equal on whole tensors, wrong when a plan splits k: the check cuts the replacement in halves.
$ cd $TESTDATA && tapestry rewrites check -k bad/rewrites/kernels/matmul_relu_summed.yaml -r bad/rewrites/combine_under_relu.yaml fuse_matmul_relu 2>&1 | sed -E 's/unsharded [^,]+, bound .*/unsharded ..., bound .../'
bad/rewrites/combine_under_relu.yaml:12:7: error: rule fuse_matmul_relu, example 1: on inputs of seed 1, the replacement cut in halves along index dim 2, output z: max error 1.7, unsharded ..., bound ...
    - inputs: {x: {shape: [4, 6], dtype: float32}, w: {shape: [6, 3], dtype: float32}}
      ^
checked 1 rule, 1 example (and 0 random shapes; 0 exactly on integers): 1 failed
[exit 3]
$ cd $TESTDATA && tapestry rewrites check -r bad/rewrites/dropped_bias.yaml conv_relu_no_bias
checked 1 rule, 1 example (and 0 random shapes; 1 exactly on integers): 1 failed
! bad/rewrites/dropped_bias.yaml:10:7: error: rule conv_relu_no_bias, example 1: on small integers (seed 1), output z differs in float64: max relative error 0.028 (a rule of products, sums and moves must agree exactly)
!     - inputs:
!       ^
[exit 3]
$ cd $TESTDATA && tapestry rewrites check -r bad/rewrites/wrong_axis.yaml softmax_axis
checked 1 rule, 1 example (and 0 random shapes; 0 exactly on integers): 1 failed
! bad/rewrites/wrong_axis.yaml:11:7: error: rule softmax_axis, example 1: on inputs of seed 1, output y differs in float64: max relative error 0.59 (allowed 1e-10)
!     - inputs: {x: {shape: [3, 4], dtype: float32}}
!       ^
[exit 3]
$ cd $TESTDATA && tapestry rewrites list -r bad/rewrites/pattern_param_type.yaml
! bad/rewrites/pattern_param_type.yaml:5:49: error: match.first.params.value: expected float, got string
!     first: {kernel: mul_scalar, params: {value: half}, inputs: {input: x}, outputs: {result: y}}
!                                                 ^
[exit 1]
$ cd $TESTDATA && tapestry rewrites check -r bad/rewrites/wrong_constant.yaml gelu_halved
checked 1 rule, 1 example (and 0 random shapes; 0 exactly on integers): 1 failed
! bad/rewrites/wrong_constant.yaml:14:7: error: rule gelu_halved, example 1: on inputs of seed 1, output y differs in float64: max relative error 0.11 (allowed 1e-10)
!     - inputs: {x: {shape: [4, 8], dtype: float32}}
!       ^
[exit 3]
$ cd $TESTDATA && tapestry rewrites check -r bad/rewrites/fixed_extent.yaml sum_as_mean
checked 1 rule, 1 example (and 1 random shape; 0 exactly on integers): 1 failed
! bad/rewrites/fixed_extent.yaml:11:7: error: rule sum_as_mean, example 1: on the random shapes {x: [9, 8]}, on inputs of seed 1, output y differs in float64: max relative error 0.5 (allowed 1e-10)
!     - inputs: {x: {shape: [3, 4], dtype: float64}}
!       ^
[exit 3]
$ cd $TESTDATA && tapestry rewrites check -r bad/rewrites/wrong_scale.yaml double_add
checked 1 rule, 1 example (and 0 random shapes; 0 exactly on integers): 1 failed
! bad/rewrites/wrong_scale.yaml:10:7: error: rule double_add, example 1: on inputs of seed 1, output z differs in float64: max relative error 0.25 (allowed 1e-10)
!     - params: {twice: {value: 2.0}}
!       ^
[exit 3]
$ cd $TESTDATA && tapestry --format json rewrites check -r bad/rewrites/wrong_axis.yaml softmax_axis
{
  "status": "failed",
  "rules": 1,
  "examples": 1,
  "random_shapes": 0,
  "integer_checks": 0,
  "failures": [
    {
      "rule": "softmax_axis",
      "example": 1,
      "file": "bad/rewrites/wrong_axis.yaml",
      "line": 11,
      "message": "rule softmax_axis, example 1: on inputs of seed 1, output y differs in float64: max relative error 0.59 (allowed 1e-10)"
    }
  ]
}
! bad/rewrites/wrong_axis.yaml:11:7: error: rule softmax_axis, example 1: on inputs of seed 1, output y differs in float64: max relative error 0.59 (allowed 1e-10)
!     - inputs: {x: {shape: [3, 4], dtype: float32}}
!       ^
[exit 3]
## A rule whose name the standard rules already use.
$ cd $TESTDATA && printf 'relu_relu:\n  doc: again\n  match:\n    a: {kernel: relu, inputs: {input: x}, outputs: {result: y}}\n  replace:\n    b: {kernel: relu, inputs: {input: x}, outputs: {result: y}}\n  examples:\n    - inputs: {x: {shape: [2], dtype: float32}}\n' > /tmp/tapestry_dup_rule.yaml && tapestry rewrites list -r /tmp/tapestry_dup_rule.yaml 2>&1 | sed 's#/tmp/##'
tapestry_dup_rule.yaml:1:1: error: rewrite rule "relu_relu" is already defined at <stdlib>/rewrites/standard.yaml:587:1
[exit 1]
$ tapestry optimize $TESTDATA/graphs/convnet.json --target cpu-2 --rewrites none -r $TESTDATA/bad/rewrites/wrong_axis.yaml -o plan.json
! tapestry: error: -r/--rules cannot go with --rewrites none
[exit 2]
## A wrong rule applied anyway (--rewrites FILE skips the check): the plan runs, and
## run --check, which compares with the graph as it was given, catches it.
$ tapestry optimize $TESTDATA/graphs/convnet.json --target cpu-2 --iterations 5 --rewrites $TESTDATA/bad/rewrites/wrong_axis.yaml -o plan.json | grep rewrites && tapestry run plan.json --check 2>&1 | grep -E '^(check|tapestry)' | sed -E 's/max error [^,]+, unsharded [^,]+, bound [^ ]+/max error E, unsharded E, bound B/'
  rewrites: 5 sites (conv_bias 2, conv_relu 2, softmax_axis 1)
check logits (float32): max error E, unsharded E, bound B ok
check probs (float32): max error E, unsharded E, bound B MISMATCH
[exit 3]
[created plan.json]
$ tapestry optimize $TESTDATA/graphs/convnet.json --target cpu-2 --rewrites defualt -o plan.json
! tapestry: error: --rewrites: "defualt" is neither none, default nor a rule file that exists
[exit 2]
$ tapestry rewrites check -r missing.yaml
! missing.yaml: error: cannot open file: No such file or directory
[exit 1]
$ cd $TESTDATA && tapestry rewrites list -r bad/rewrites/always_and_search.yaml
! bad/rewrites/always_and_search.yaml:5:3: error: search: a rule marked always runs in the pre-pass, so it cannot also be a choice of the search
!   search: true
!   ^
[exit 1]
$ cd $TESTDATA && tapestry rewrites list -r bad/rewrites/copied_param.yaml
! bad/rewrites/copied_param.yaml:9:47: error: replace.mul.params.value: kernel div_scalar (of div) has no param "divisor"
!     mul: {kernel: mul_scalar, params: {value: "from div.divisor"}, inputs: {input: x}, outputs: {result: s}}
!                                               ^
[exit 1]
$ cd $TESTDATA && tapestry rewrites list -r bad/rewrites/from_syntax.yaml
! bad/rewrites/from_syntax.yaml:8:47: error: replace.mul.params.value: expected "from OP.PARAM" (a pattern operation's param)
!     mul: {kernel: mul_scalar, params: {value: "from div"}, inputs: {input: x}, outputs: {result: s}}
!                                               ^
[exit 1]
$ cd $TESTDATA && tapestry rewrites list -r bad/rewrites/list_port.yaml
! bad/rewrites/list_port.yaml:6:64: error: match.sp: split's results is a list port: bind it to a list of variables ([a, b, ...])
!     sp: {kernel: split, inputs: {input: x}, outputs: {results: parts}}
!                                                                ^
[exit 1]
$ cd $TESTDATA && tapestry rewrites list -r bad/rewrites/list_in_replace.yaml
! bad/rewrites/list_in_replace.yaml:10:64: error: replace.sp.outputs port results: list ports are not supported in replacements (only in patterns)
!     sp: {kernel: split, inputs: {input: r}, outputs: {results: [y, b]}}
!                                                                ^
[exit 1]
$ cd $TESTDATA && tapestry rewrites check -r bad/rewrites/gelu_as_clip.yaml linear_gelu_as_clip
checked 1 rule, 1 example (and 0 random shapes; 0 exactly on integers): 1 failed
! bad/rewrites/gelu_as_clip.yaml:10:7: error: rule linear_gelu_as_clip, example 1: on inputs of seed 1, output z differs in float64: max relative error 0.31 (allowed 1e-10)
!     - inputs:
!       ^
[exit 3]
$ cd $TESTDATA && tapestry rewrites check -r bad/rewrites/approximate_too_far.yaml linear_gelu_as_relu
checked 1 rule, 1 example (and 0 random shapes; 0 exactly on integers): 1 failed
! bad/rewrites/approximate_too_far.yaml:13:7: error: rule linear_gelu_as_relu, example 1: on inputs of seed 1, output y differs in float64: max relative error 0.053 (allowed 0.001)
!     - inputs:
!       ^
[exit 3]
$ cd $TESTDATA && tapestry rewrites list -r bad/rewrites/fuse_not_elementwise.yaml
! bad/rewrites/fuse_not_elementwise.yaml:7:21: error: replace.fused: kernel "fuse(matmul, softmax)": softmax reads input through the IPF "[@[:$ax]..., 0, @[$ax:]...] :> [ones($ax)..., $n, 1...]", not element by element, so it cannot run on matmul's index points
!     fused: {kernel: "fuse(matmul, softmax)", inputs: {X: x, W: w}, outputs: {result: z}}
!                     ^
[exit 1]
