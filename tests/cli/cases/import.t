## tapestry import: ONNX models (testdata/onnx, written by scripts/make_onnx_models.py) as
## graph/v1. mlp3 maps to kernels of the standard library, so it goes on through expand,
## optimize and run --check with its own weights; the other models are checked on what
## import writes (their kernels are the standard library's once conv2d groups, pools,
## batchnorm, clip, erf, where, slice and the scalar forms are in it).
## Names are kept as ONNX spells them; .npy files of --weights are percent-encoded.
$ tapestry import $TESTDATA/onnx/mlp3.onnx -o mlp3.json --weights w
imported mlp3: 5 ONNX nodes (0 folded) -> 5 operations, 7 inputs (6 constant) -> mlp3.json
[created mlp3.json]
[created w]
$ ls w
fc1.bias.npy
fc1.weight.npy
fc2.bias.npy
fc2.weight.npy
fc3.bias.npy
fc3.weight.npy
$ echo '{"tapestry": "graph/v1", "name": "gen", "tensors": {"x0": {"dtype": "float32", "shape": [4, 16]}}, "operations": [{"name": "r", "kernel": "neg", "inputs": {"input": "x0"}, "outputs": {"result": "x"}}]}' > gen.json && tapestry run gen.json -q --outputs w
[created gen.json]
$ tapestry expand mlp3.json -o mlp3.x.json && tapestry optimize mlp3.x.json --target cpu-2 --iterations 5 -o plan.json -q && tapestry run plan.json --inputs w --check --outputs out 2>&1 | sed -nE 's/^check (y) .* (ok)$/check \1: \2/p' && ls out
expanded mlp3: 5 operations, 12 tensors, 14.9 kFLOP -> mlp3.x.json
check y: ok
y.npy
[created mlp3.x.json]
[created out]
[created plan.json]
$ tapestry bench plan.json --inputs w --repeat 1 --max-repeat 1 --warmup 0 --format json | jq -c '[.status, (.plan.times_s | length), (.single_device.times_s | length)]'
["ok",1,1]
$ tapestry import $TESTDATA/onnx/mlp3.onnx | sed -n 1,12p
{
  "tapestry": "graph/v1",
  "name": "mlp3",
  "doc": "imported from mlp3.onnx (producer pytorch 1.13.0, opset 17)",
  "tensors": {
    "x": {"dtype": "float32", "shape": [4, 16]},
    "fc1.weight": {"dtype": "float32", "shape": [32, 16], "constant": true},
    "fc1.bias": {"dtype": "float32", "shape": [32], "constant": true},
    "fc2.weight": {"dtype": "float32", "shape": [32, 32], "constant": true},
    "fc2.bias": {"dtype": "float32", "shape": [32], "constant": true},
    "fc3.weight": {"dtype": "float32", "shape": [8, 32], "constant": true},
    "fc3.bias": {"dtype": "float32", "shape": [8], "constant": true}
$ tapestry import $TESTDATA/onnx/mlp3.onnx | jq -c '.operations[] | [.name, .kernel]'
["/fc1/Gemm","linear"]
["/Relu","relu"]
["/fc2/Gemm","linear"]
["/Relu_1","relu"]
["/fc3/Gemm","linear"]
$ tapestry --format json import $TESTDATA/onnx/mlp3.onnx -o mlp3.json --weights w
{
  "status": "ok",
  "graph": "mlp3",
  "nodes": 5,
  "folded": 0,
  "operations": 5,
  "inputs": 7,
  "constants": 6,
  "weights": 6,
  "output": "mlp3.json"
}
$ tapestry import $TESTDATA/onnx/mlp3_dynamic.onnx --dim batch=8 | jq -c '.tensors.x'
{"dtype":"float32","shape":[8,16]}
$ tapestry import $TESTDATA/onnx/bert_layer_dynamic.onnx --dim batch=3 --dim seq=5 -o bert_dynamic.json && jq -c '.tensors.x, [.operations[] | select(.kernel == "reshape") | .params.shape]' bert_dynamic.json
imported bert_layer_dynamic: 106 ONNX nodes (76 folded) -> 30 operations, 13 inputs (12 constant) -> bert_dynamic.json
{"dtype":"float32","shape":[3,5,64]}
[[5,12,16],[5,12,16],[5,12,16],[15,64],[5,3,64]]
[created bert_dynamic.json]
$ cd $TESTDATA && tapestry import onnx/bert_layer_dynamic.onnx --dim batch=3 -o $OLDPWD/bert_dynamic.json
! onnx/bert_layer_dynamic.onnx: error: graph input x has the symbolic dim seq (dim 1); bind it with --dim seq=N
[exit 1]
$ tapestry import - < $TESTDATA/onnx/mlp3.onnx | jq -c '[.name, .doc]'
["torch_jit","imported from <stdin> (producer pytorch 1.13.0, opset 17)"]
$ tapestry import $TESTDATA/onnx/mlp3.onnx -v -o - > /dev/null
! imported mlp3: 5 ONNX nodes (0 folded) -> 5 operations, 7 inputs (6 constant) -> <stdout>
$ tapestry import $TESTDATA/onnx/bert_layer.onnx -q -o bert.json --weights wb && ls wb | sed -n 1,2p && jq -r '.operations[0:3][] | .name' bert.json
linear1.bias.npy
linear2.bias.npy
/self_attn/Transpose
/self_attn/MatMul
/self_attn/Add
[created bert.json]
[created wb]
$ tapestry import $TESTDATA/onnx/resnet18.onnx -o resnet18.json
imported resnet18: 65 ONNX nodes (0 folded) -> 49 operations, 27 inputs (0 constant) -> resnet18.json
[created resnet18.json]
$ tapestry import $TESTDATA/onnx/resnet50.onnx -o resnet50.json
imported resnet50: 169 ONNX nodes (0 folded) -> 122 operations, 62 inputs (0 constant) -> resnet50.json
[created resnet50.json]
$ tapestry import $TESTDATA/onnx/mobilenet_v2.onnx -o mobilenet_v2.json
imported mobilenet_v2: 209 ONNX nodes (70 folded) -> 100 operations, 68 inputs (0 constant) -> mobilenet_v2.json
[created mobilenet_v2.json]
$ tapestry import $TESTDATA/onnx/bert_layer.onnx -o bert_layer.json
imported bert_layer: 53 ONNX nodes (23 folded) -> 30 operations, 13 inputs (12 constant) -> bert_layer.json
[created bert_layer.json]
$ tapestry import $TESTDATA/onnx/gpt2_block.onnx -o gpt2_block.json --weights wg
imported gpt2_block: 43 ONNX nodes (12 folded) -> 31 operations, 15 inputs (14 constant) -> gpt2_block.json
[created gpt2_block.json]
[created wg]
$ tapestry import $TESTDATA/onnx/llama_layer.onnx -o llama_layer.json && jq -r '[.operations[].kernel] | unique | join(" ")' llama_layer.json
imported llama_layer: 81 ONNX nodes (27 folded) -> 54 operations, 13 inputs (12 constant) -> llama_layer.json
add add_scalar concat div_scalar matmul mean mul neg pow_scalar rdiv_scalar reshape sigmoid slice softmax sqrt transpose
[created llama_layer.json]
$ ls wg | grep Where && od -A d -t x1 -j 128 wg/onnx%3A%3AWhere_127.npy | sed -n 1p
onnx%3A%3AWhere_127.npy
0000128 00 01 01 01 01 01 01 01 00 00 01 01 01 01 01 01
$ for m in resnet18 mobilenet_v2 bert_layer gpt2_block; do echo "$m: $(jq -r '[.operations[].kernel] | unique | join(" ")' $m.json)"; done
resnet18: add conv2d global_avgpool linear maxpool2d relu reshape
mobilenet_v2: add clip conv2d global_avgpool linear reshape
bert_layer: add div_scalar layernorm linear matmul relu reshape slice softmax transpose
gpt2_block: add add_scalar div_scalar erf layernorm matmul mul mul_scalar reshape softmax split transpose where
$ jq -r '.doc' bert_layer.json
imported from bert_layer.onnx (producer pytorch 1.13.0, opset 17)
