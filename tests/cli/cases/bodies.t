## Kernels with a body and no native kernel run on the CPU backend: the RMS norm
## of docs/language.md and the matmul draft of the design notes, end to end.
$ cd $TESTDATA && tapestry kernels check -k metakernels/my_rmsnorm.yaml -k metakernels/matmul_draft.yaml | sed -E 's/[0-9]+ kernels, [0-9]+ examples/N kernels, M examples/'
checked N kernels, M examples: all passed
$ printf '%s' '{"tapestry": "graph/v1", "name": "rms", "tensors": {"x": {"dtype": "float32", "shape": [8, 4, 32]}, "g": {"dtype": "float32", "shape": [32]}}, "operations": [{"name": "norm", "kernel": "my_rmsnorm", "inputs": {"input": "x", "gamma": "g"}, "outputs": {"result": "y"}}]}' > g.json && tapestry expand g.json -k $TESTDATA/metakernels/my_rmsnorm.yaml -o e.json && tapestry optimize g.json -k $TESTDATA/metakernels/my_rmsnorm.yaml --target cpu-2 --seed 1 -q -o p.json && tapestry --format json run p.json --check | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["status"], d["check"]["ok"], [o["tensor"] for o in d["check"]["outputs"]])' && tapestry --format json bench p.json --repeat 2 | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["status"], d["plan"]["measured_s"] > 0, d["plan"]["predicted_s"] > 0, [o["kernel"] for o in d["operations"]])'
expanded rms: 1 operations, 3 tensors, 4.1 kFLOP -> e.json
ok True ['y']
ok True True ['my_rmsnorm']
[created e.json]
[created g.json]
[created p.json]
## The draft as written (k inside each point) and the variant with k in the index.
$ printf '%s' '{"tapestry": "graph/v1", "name": "mm", "tensors": {"x": {"dtype": "float64", "shape": [4, 16, 32]}, "w": {"dtype": "float64", "shape": [4, 32, 8]}}, "operations": [{"name": "mm", "kernel": "draft_matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "y"}}, {"name": "mmk", "kernel": "draft_matmul_k", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "z"}}]}' > g.json && tapestry optimize g.json -k $TESTDATA/metakernels/matmul_draft.yaml --target cpu-2 --seed 1 -q -o p.json && tapestry run p.json --check -q && echo "ran and checked"
ran and checked
## Bad bodies: located errors, exit 1 (load) or 3 (a failing example).
$ cd $TESTDATA && tapestry kernels check -k bad/metakernels/body_syntax.yaml
! bad/metakernels/body_syntax.yaml:8:27: error: in body "result = input * ": expected an expression at column 18
!   body: "result = input * "
!                           ^
[exit 1]
$ cd $TESTDATA && tapestry kernels check -k bad/metakernels/body_unknown_function.yaml
! bad/metakernels/body_unknown_function.yaml:8:19: error: in body "result = sqr(input)": unknown function 'sqr'; known functions: abs, acos, acosh, argmax, argmin, asin, asinh, atan, atanh, cast, ceil, concat, cos, cosh, equal, erf, exp, floor, fmod, gelu, greater, greater_equal, isinf, isnan, less, less_equal, log, logical_and, logical_not, logical_or, logical_xor, max, maximum, mean, min, minimum, mod, neg, pow, prod, relu, reshape, round, rsqrt, sigmoid, sign, sin, sinh, slice, sqrt, sum, tan, tanh, transpose, where at column 10
!   body: "result = sqr(input)"
!                   ^
[exit 1]
$ cd $TESTDATA && tapestry kernels check -k bad/metakernels/body_unassigned.yaml
! bad/metakernels/body_unassigned.yaml:8:10: error: in body "half = input * 0.5": no statement assigns output result (write "result = ...") at column 1
!   body: "half = input * 0.5"
!          ^
[exit 1]
$ cd $TESTDATA && tapestry kernels check -k bad/metakernels/body_errors.yaml
checked 106 kernels, 315 examples: 2 failed
! bad/metakernels/body_errors.yaml:22:7: error: kernel by_shape, example 1: by_shape: in body "result = input / $shape": '/' needs blocks or numbers, got a list at column 18
!     - inputs: {input: {shape: [3, 7], dtype: float32}}
!       ^
! bad/metakernels/body_errors.yaml:20:27: note: in kernel by_shape, body "result = input / $shape"
!   body: "result = input / $shape"
!                           ^
! bad/metakernels/body_errors.yaml:11:7: error: kernel rowsum_wrong, example 1: rowsum_wrong: in body "result = input * 2": output result is [3, 7] float32 but its IPF selects [3] float32 at column 1
!     - inputs: {input: {shape: [3, 7], dtype: float32}}
!       ^
! bad/metakernels/body_errors.yaml:9:10: note: in kernel rowsum_wrong, body "result = input * 2"
!   body: "result = input * 2"
!          ^
[exit 3]
$ cd $TESTDATA && printf '%s' '{"tapestry": "graph/v1", "name": "bad", "tensors": {"x": {"dtype": "float32", "shape": [3, 7]}}, "operations": [{"name": "s", "kernel": "rowsum_wrong", "inputs": {"input": "x"}}]}' | tapestry expand - -k bad/metakernels/body_errors.yaml
! <stdin>:1:113: error: at /operations/0: s (rowsum_wrong): in body "result = input * 2": output result is [3, 7] float32 but its IPF selects [3] float32 at column 1
! ...ensors": {"x": {"dtype": "float32", "shape": [3, 7]}}, "operations": [{"name": "s", "kernel": "rowsum_wrong", "inputs": {"input": "x"}}]}
!                                                                          ^
! bad/metakernels/body_errors.yaml:9:10: note: in kernel rowsum_wrong, body "result = input * 2"
!   body: "result = input * 2"
!          ^
[exit 1]
## A plan whose embedded body was edited after optimize: the run stops at load, located in the plan.
$ printf '%s' '{"tapestry": "graph/v1", "name": "rms", "tensors": {"x": {"dtype": "float32", "shape": [8, 4, 32]}, "g": {"dtype": "float32", "shape": [32]}}, "operations": [{"name": "norm", "kernel": "my_rmsnorm", "inputs": {"input": "x", "gamma": "g"}, "outputs": {"result": "y"}}]}' > g.json && tapestry optimize g.json -k $TESTDATA/metakernels/my_rmsnorm.yaml --target cpu-2 --seed 1 -q -o p.json && python3 -c 'import json; d=json.load(open("p.json")); k=d["kernels"]["my_rmsnorm"]; k["source"]=k["source"].replace("keepdims=true", "keepdims=false"); json.dump(d, open("p2.json", "w"), indent=1)' && tapestry run p2.json
! p2.json:40:4: error: at /graph/operations/0: norm (my_rmsnorm): in body "result = input / sqrt(mean(input * input, axis=-1, keepdims=false) + $eps) * gamma": '/' cannot broadcast [8, 4, 32] with [8, 4] at column 16
!    {
!    ^
! p2.json#/kernels/my_rmsnorm:10:25: note: in kernel my_rmsnorm, body "result = input / sqrt(mean(input * input, axis=-1, keepdims=false) + $eps) * gamma"
!   body: "result = input / sqrt(mean(input * input, axis=-1, keepdims=false) + $eps) * gamma"
!                         ^
[exit 1]
[created p2.json]
