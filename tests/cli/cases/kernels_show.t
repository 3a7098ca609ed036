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
