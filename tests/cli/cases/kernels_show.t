## `kernels show NAME`: the kernel's YAML as written; --format json adds its parsed form.
$ cd $TESTDATA && tapestry kernels show scale -k metakernels/user_ops.yaml
scale:
  doc: result = factor * input, elementwise.
  params:
    factor: {type: float, default: 2.0}
  inputs:
    input: {shape: "[$s...]", dtype: "$dtype"}
  index: "[$s...]"
  outputs:
    result: {dtype: "$dtype"}
  cost: {flops: 1}
  body: "result = input * $factor"
  examples:
    - inputs: {input: {shape: [4, 5], dtype: float32}}
      expect: {index: [4, 5], outputs: {result: {shape: [4, 5], dtype: float32}}, flops: 20}
    - inputs: {input: {shape: [4, 5], dtype: float32}}
      params: {factor: three}
      error: "param factor: expected float, got string"
$ cd $TESTDATA && tapestry kernels show rowsum -k metakernels/user_ops.yaml --format json
{
  "name": "rowsum",
  "file": "metakernels/user_ops.yaml",
  "line": 20,
  "source": "rowsum:\n  doc: Sums each row of a matrix.\n  inputs:\n    input: {shape: \"[$m, $n]\", dtype: \"$dtype\"}\n  index: \"[$m, $n]\"\n  outputs:\n    result: {shape: \"[$m]\", dtype: \"$dtype\", ipf: \"[@[0]] :> [1]\", combine: sum}\n  cost: {flops: 1}\n  body: \"result = sum(input, axis=1)\"\n  examples:\n    - inputs: {input: {shape: [3, 7], dtype: float64}}\n      expect: {outputs: {result: {shape: [3], dtype: float64}}}\n",
  "template": {
    "name": "rowsum",
    "file": "metakernels/user_ops.yaml",
    "line": 20,
    "doc": "Sums each row of a matrix.",
    "params": {},
    "constraints": {},
    "inputs": {
      "input": {
        "shape": "[$m, $n]",
        "dtype": "$dtype",
        "ipf": "[@...] :> [1...]",
        "list": false,
        "optional": false,
        "packed": false
      }
    },
    "let": {},
    "index": "[$m, $n]",
    "outputs": {
      "result": {
        "shape": "[$m]",
        "dtype": "$dtype",
        "ipf": "[@[0]] :> [1]",
        "combine": "sum",
        "list": false
      }
    },
    "cost": {
      "flops": "1"
    },
    "where": [],
    "examples": [
      {
        "inputs": {
          "input": [
            {
              "shape": [
                3,
                7
              ],
              "dtype": "float64"
            }
          ]
        },
        "params": {},
        "expect": {
          "outputs": {
            "result": [
              {
                "shape": [
                  3
                ],
                "dtype": "float64"
              }
            ]
          }
        }
      }
    ],
    "body": "result = sum(input, axis=1)"
  }
}
$ tapestry kernels show matmul | sed -n 1p
matmul:
$ tapestry kernels show no_such_kernel 2>&1 | sed 's/ (known: .*/ (known: ...)/'
error: unknown kernel "no_such_kernel" (known: ...)
[exit 1]
$ tapestry kernels show "fuse(matmul, tanh)"
"fuse(matmul, tanh)":
  doc: "matmul, then tanh on its output result (read as tanh's input), as one operation: composed from the two templates by fuse(). The index space, inputs and params are matmul's, then tanh's other inputs and params named tanh_NAME. matmul's reduction dims are not split: tanh needs whole sums, so the result has no combine."
  params:
    transpose_x: {type: bool, default: false}
    transpose_w: {type: bool, default: false}
  constraints:
    dtype: {enum: ["float32","float64","float16","bfloat16"]}
  inputs:
    X: {shape: "[$bx..., $x0, $x1]", dtype: "$dtype", ipf: "[broadcast_rows(@[:-3], $bx)..., if($transpose_x, [@[-1], @[-3]], [@[-3], @[-1]])...] :> [1...]"}
    W: {shape: "[$bw..., $w0, $w1]", dtype: "$dtype", ipf: "[broadcast_rows(@[:-3], $bw)..., if($transpose_w, [@[-2], @[-1]], [@[-1], @[-2]])...] :> [1...]", packed: true}
  let:
    m: "if($transpose_x, $x1, $x0)"
    k: "if($transpose_x, $x0, $x1)"
    k_w: "if($transpose_w, $w1, $w0)"
    n: "if($transpose_w, $w0, $w1)"
    batch: "broadcast($bx, $bw)"
    perm_x: "if($transpose_x, [range(len($bx))..., len($bx) + 1, len($bx)], range(len($bx) + 2))"
    perm_w: "if($transpose_w, [range(len($bw))..., len($bw) + 1, len($bw)], range(len($bw) + 2))"
    tanh_shape: "[$batch..., $m, $n]"
  where:
    - {check: "$k == $k_w", message: "X and W disagree on k (X is [..., m, k], or [..., k, m] with transpose_x; W is [..., k, n], or [..., n, k] with transpose_w)"}
  index: "[$batch..., $m, $n, $k]"
  outputs:
    result: {shape: "$tanh_shape", dtype: "$dtype", ipf: "[@[:-1]...] :> [1...]"}
  cost: {flops: "(2) + (4) * prod($tanh_shape) / prod([$batch..., $m, $n, $k])"}
  body: "fused_result = transpose(X, perm=$perm_x) @ transpose(W, perm=$perm_w); result = tanh(fused_result)"
$ tapestry kernels show "fuse(matmul, softmax)"
! error: kernel "fuse(matmul, softmax)": softmax reads input through the IPF "[@[:$ax]..., 0, @[$ax:]...] :> [ones($ax)..., $n, 1...]", not element by element, so it cannot run on matmul's index points
[exit 1]
$ tapestry kernels show "fuse(matmul,tanh)"
! error: kernel "fuse(matmul,tanh)": a fused kernel is spelled "fuse(matmul, tanh)" (fuse(PRODUCER, CONSUMER) or fuse(PRODUCER, CONSUMER.PORT))
[exit 1]
$ tapestry kernels show "fuse(matmul, fuse(add, tanh))"
! error: kernel "fuse(matmul, fuse(add, tanh))": not a fused kernel: fuse(PRODUCER, CONSUMER) or fuse(PRODUCER, CONSUMER.PORT), where CONSUMER is one kernel's name (nest on the producer's side: fuse(fuse(A, B), C))
[exit 1]
