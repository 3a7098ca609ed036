## Names are 1 to 256 printable ASCII characters other than space, '"' and '\' (SPEC §5.1:
## ONNX names as they are spelled). Such names go through expand, optimize, render, run and
## trace; .npy files of --inputs/--outputs are the names percent-encoded.
$ echo '{"tapestry": "graph/v1", "name": "odd<names>&{x}", "tensors": {"onnx::In_1": {"dtype": "float32", "shape": [8, 16]}, "w<&>|{}:": {"dtype": "float32", "shape": [16, 8]}}, "operations": [{"name": "/fc1/Gemm:<b>&{}|", "kernel": "matmul", "inputs": {"X": "onnx::In_1", "W": "w<&>|{}:"}, "outputs": {"result": "/h:0<&>"}}, {"name": "act%20", "kernel": "relu", "inputs": {"input": "/h:0<&>"}, "outputs": {"result": "out/y.1"}}]}' > g.json
[created g.json]
$ echo '{"tapestry": "graph/v1", "name": "gen", "tensors": {"a": {"dtype": "float32", "shape": [8, 16]}, "b": {"dtype": "float32", "shape": [16, 8]}}, "operations": [{"name": "n1", "kernel": "neg", "inputs": {"input": "a"}, "outputs": {"result": "onnx::In_1"}}, {"name": "n2", "kernel": "neg", "inputs": {"input": "b"}, "outputs": {"result": "w<&>|{}:"}}]}' > gen.json && tapestry run gen.json -q --outputs ins && ls ins
onnx%3A%3AIn_1.npy
w%3C%26%3E%7C%7B%7D%3A.npy
[created gen.json]
[created ins]
$ tapestry expand g.json -o x.json && jq -c '[.operations[].name], [.tensors | keys[]]' x.json
expanded odd<names>&{x}: 2 operations, 4 tensors, 2.11 kFLOP -> x.json
["/fc1/Gemm:<b>&{}|","act%20"]
["/h:0<&>","onnx::In_1","out/y.1","w<&>|{}:"]
[created x.json]
$ tapestry optimize x.json --target cpu-2 --iterations 3 -o plan.json -q && tapestry run plan.json --inputs ins --check --outputs outs 2>&1 | sed -nE 's/^check (.*) \(float32\): .* (ok)$/check \1: \2/p' && ls outs
check out/y.1: ok
out%2Fy.1.npy
[created outs]
[created plan.json]
$ tapestry render x.json -o g.svg && tapestry render plan.json -o p.svg && grep -c 'w&lt;&amp;&gt;|{}:' g.svg
rendered odd<names>&{x} (graph view, 6 nodes) -> g.svg (svg)
rendered odd<names>&{x} (plan view, 4 nodes) -> p.svg (svg)
6
[created g.svg]
[created p.svg]
$ tapestry trace plan.json -o tr.json -q && jq -r '[.traceEvents[] | select(.ph == "X") | .name] | unique | .[]' tr.json
/fc1/Gemm:<b>&{}|+act%20 #0
/fc1/Gemm:<b>&{}|+act%20 #1
onnx::In_1 host->0
onnx::In_1 host->1
w<&>|{}: host->0
w<&>|{}: host->1
[created tr.json]
