## tapestry rewrites list|show|check (docs/rewrites.md): the standard rules,
## their checks on the examples, and the pre-pass of expand and optimize.
$ tapestry rewrites list
conv_bias: conv2d, add -> reshape, conv2d  [always]
    A convolution without bias, then the add of a per-channel tensor ([O, 1, 1] or [1, O, 1, 1], as graphs written by hand or exported without folding carry a bias) is a convolution with that tensor, flattened, as its bias. Runs first, so that the fusions below see the activation after it.
conv_add_relu: conv2d, add, relu -> conv2d_act  [search]
    A convolution, a residual add of a tensor of its result's shape, then a ReLU (a ResNet block's end) become one conv2d_act with the residual as its input and min 0. The fused kernel cannot split C, KH or KW (no combine).
conv_add: conv2d, add -> conv2d_act  [search]
    A convolution and a residual add of a tensor of its result's shape become one conv2d_act with the residual as its input.
conv_relu: conv2d, relu -> conv2d_act  [search]
    A convolution whose result only a ReLU reads becomes one conv2d_act with min 0 (ONNX Runtime's Conv + Relu fusion).
conv_clip: conv2d, clip -> conv2d_act  [search]
    A convolution whose result only a clip reads (MobileNet's ReLU6) becomes one conv2d_act with the clip's bounds.
conv_silu: conv2d, silu -> conv2d_act  [search]
    A convolution whose result only a SiLU reads (EfficientNet's blocks, after silu has collapsed the exported sigmoid and product) becomes one conv2d_act with silu: oneDNN's swish post-op on the CPU.
conv_hard_swish: conv2d, hard_swish -> conv2d_act  [search]
    A convolution whose result only a HardSwish reads (MobileNetV3's blocks) becomes one conv2d_act with hard_swish: oneDNN's hardswish post-op on the CPU.
grouped_conv_add_relu: conv2d_grouped, add, relu -> conv2d_grouped_act  [always]
    conv_add_relu for a grouped convolution (ResNeXt's, RegNet's): the convolution, a residual add of a tensor of its result's shape and a ReLU become one conv2d_grouped_act with the residual as its input and min 0. The fused kernel cannot split KH or KW (no combine), which leaves every split worth making (the groups, the batch, the rows): in the pre-pass.
grouped_conv_add: conv2d_grouped, add -> conv2d_grouped_act  [always]
    conv_add for a grouped convolution: the convolution and a residual add of a tensor of its result's shape become one conv2d_grouped_act with the residual as its input.
grouped_conv_relu: conv2d_grouped, relu -> conv2d_grouped_act  [always]
    conv_relu for a grouped convolution: a grouped convolution whose result only a ReLU reads becomes one conv2d_grouped_act with min 0.
grouped_conv_clip: conv2d_grouped, clip -> conv2d_grouped_act  [always]
    conv_clip for a grouped convolution: a grouped convolution whose result only a clip reads becomes one conv2d_grouped_act with the clip's bounds.
grouped_conv_silu: conv2d_grouped, silu -> conv2d_grouped_act  [always]
    conv_silu for a grouped convolution: a grouped convolution whose result only a SiLU reads becomes one conv2d_grouped_act with silu.
grouped_conv_hard_swish: conv2d_grouped, hard_swish -> conv2d_grouped_act  [always]
    conv_hard_swish for a grouped convolution: a grouped convolution whose result only a HardSwish reads becomes one conv2d_grouped_act with hard_swish.
gelu_erf: div_scalar, erf, add_scalar, mul, mul_scalar -> gelu  [always]
    The exact GELU as PyTorch exports nn.GELU, x * (1 + erf(x / sqrt(2))) * 0.5, five elementwise passes, is one gelu: the same index space, so no split is lost.
gelu_erf_half_first: mul_scalar, div_scalar, erf, add_scalar, mul -> gelu  [always]
    The exact GELU written x * 0.5 * (1 + erf(x / sqrt(2))) (the half taken first, as Hugging Face's models do) is one gelu.
gelu_tanh: mul, mul, mul_scalar, add, mul_scalar, tanh, add_scalar, mul, mul_scalar -> gelu_tanh  [always]
    GELU's tanh approximation as PyTorch exports nn.GELU(approximate="tanh"), x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x * x * x))) * 0.5, nine elementwise passes, is one gelu_tanh: the same index space, so no split is lost.
gelu_tanh_half_first: mul_scalar, pow_scalar, mul_scalar, add, mul_scalar, tanh, add_scalar, mul -> gelu_tanh  [always]
    GELU's tanh approximation written 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * pow(x, 3)))) (the half taken first, the cube a pow, as GPT-2's and Hugging Face's NewGELU do) is one gelu_tanh.
gelu_as_tanh: gelu -> gelu_tanh  [always]  [approximate]
    The exact GELU computed as its tanh approximation, gelu_tanh (what cuBLASLt's GELU epilogue and many runtimes compute; the two differ by at most 4.8e-4 in absolute terms, near x = -2.7 and x = 2.7). Approximate: off unless asked for with --approximate; run --check then reports how far it moved the outputs. Before the linear fusions, so that a linear layer's GELU fuses as gelu_tanh.
linear_act_gelu_as_tanh: linear_act -> linear_act  [always]  [approximate]
    A linear_act with the exact GELU as one with its tanh approximation (a graph given with linear_act already fused; gelu_as_tanh's approximation).
layernorm_decomposed: mean, sub, pow_scalar, mean, add_scalar, sqrt, div, mul, add -> layernorm  [always]
    LayerNorm over the last axis as PyTorch exports nn.LayerNorm below opset 17 (and as many models write it out): the mean, the centred input, its square, their mean, eps, the square root, the division, gamma and beta, nine passes with two [..., 1] intermediates, is one layernorm, a pass over each row with the same split options on the rows.
rmsnorm_decomposed: pow_scalar, mean, add_scalar, sqrt, rdiv_scalar, mul, mul -> rmsnorm  [always]
    RMSNorm over the last axis as LLaMA's and T5's code writes it (`x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)`, times the weight) and PyTorch exports it: the square, its mean, eps, the square root, its reciprocal, the product with the input and the weight, seven passes with three [..., 1] intermediates, are one rmsnorm, a pass over each row with the same split options on the rows.
rmsnorm_divided: pow_scalar, mean, add_scalar, sqrt, div, mul -> rmsnorm  [always]
    RMSNorm written with a division, `x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)` times the weight: the same rmsnorm as rmsnorm_decomposed's.
rmsnorm_squared_by_product: mul, mean, add_scalar, sqrt, rdiv_scalar, mul, mul -> rmsnorm  [always]
    rmsnorm_decomposed with the square written as a product, `x * x` instead of `x.pow(2)`: the same rmsnorm.
silu: sigmoid, mul -> silu  [always]
    x * sigmoid(x), as PyTorch exports nn.SiLU and F.silu (a Sigmoid and a Mul, the activation of LLaMA's SwiGLU MLP), is one silu: one pass instead of two, and no sigmoid tensor.
relu_relu: relu, relu -> relu  [always]
    A ReLU of a ReLU's result (read by nothing else) is that ReLU.
reshape_reshape: reshape, reshape -> reshape  [always]
    A reshape of a reshape's result (read by nothing else) is one reshape to the second's shape.
transpose_linear_weight: linear, transpose -> linear  [always]
    A linear layer whose weight is the 2-D transpose of a tensor read by nothing else reads that tensor with transpose_w instead (ONNX Gemm's transB), and the transpose goes.
transpose_transpose: transpose, transpose -> transpose  [always]
    A transpose of a transpose's result (read by nothing else) is one transpose by the composed permutation.
transpose_matmul_weight: matmul, transpose -> matmul  [always]
    A product whose W is its own last two dims swapped by a transpose read by nothing else reads the tensor in place with transpose_w instead (a K^T in attention, ONNX MatMul after Transpose), and the transpose goes.
matmul_add_linear: matmul, add -> linear  [search]
    A product by a 2-D weight plus a bias along its last dim is one linear layer. Not always better: linear cannot split k (its bias would be added once per part), so the rule is a choice of the search, not part of the pre-pass.
linear_matmul_add: linear -> matmul, add
    The reverse substitution: a linear layer (no transposed operand) as a product and an add, which lets a plan split k (the product's partial sums combine; the bias is added once, after).
linear_add_relu: linear, add, relu -> linear_act  [always]
    A linear layer, a residual add of a tensor of its result's shape, then a ReLU become one linear_act with the residual and min 0: linear's index space, so no split is lost, and two passes over the result fewer.
linear_add: linear, add -> linear_act  [always]
    A linear layer and a residual add of a tensor of its result's shape (a transformer's shortcut around attention or its MLP) become one linear_act that adds the residual as the product's epilogue.
linear_gelu: linear, gelu -> linear_act  [always]
    A linear layer whose result only a GELU reads (a GPT-2 or BERT MLP's first projection) is one linear_act with gelu: the GELU runs on the product's output while it is in cache.
linear_gelu_tanh: linear, gelu_tanh -> linear_act  [always]
    A linear layer whose result only GELU's tanh approximation reads (GPT-2's MLP, after gelu_tanh has collapsed the exported chain) is one linear_act with gelu_tanh.
linear_silu: linear, silu -> linear_act  [always]
    A linear layer whose result only a SiLU reads (the gate projection of LLaMA's SwiGLU MLP, after silu has collapsed the exported sigmoid and product) is one linear_act with silu.
linear_relu: linear, relu -> linear_act  [always]
    A linear layer whose result only a ReLU reads (a BERT layer's feed-forward projection as nn.TransformerEncoderLayer exports it) is one linear_act with min 0.
matmul_silu: matmul, silu -> linear_act  [search]
    A product by a 2-D weight whose result only a SiLU reads (the gate projection of LLaMA's SwiGLU MLP, which has no bias; W stored [n, k] once transpose_matmul_weight has folded its transpose) is one linear_act with silu and no bias. A choice of the search: linear_act cannot split k, the product can.
matmul_relu: matmul, relu -> linear_act  [search]
    A product by a 2-D weight whose result only a ReLU reads (T5's bias-free feed-forward projection) is one linear_act with min 0 and no bias. A choice of the search, as matmul_silu.
matmul_residual: matmul, add -> linear_act  [search]
    A product by a 2-D weight and a residual add of a tensor of its result's shape (LLaMA's attention output and MLP down projections, which have no bias, and their shortcuts) become one linear_act that adds the residual as the product's epilogue. A choice of the search, as matmul_silu.
attention_masked: matmul, div_scalar, where, softmax, matmul -> attention_masked  [search]
    A causal transformer's attention as PyTorch exports it: the scores q @ k, divided by a constant, masked (where(mask, fill, scores)), a softmax along the last axis and the product with v become one attention_masked, which never stores the [..., s, t] scores. A choice of the search: the fused kernel splits only batch dims and query rows.
attention_biased_times_one: matmul, mul_scalar, add, softmax, matmul -> attention  [search]
    Attention with an additive float mask, as PyTorch 1.13 exports nn.MultiheadAttention's float attn_mask (baddbmm: q @ k, times 1, plus the mask): the product, the multiplication by 1, the add of a mask that broadcasts against the scores ([s, t], [1, s, t] as PyTorch adds a leading dim, or one per batch and head), a softmax along the last axis and the product with v become one attention with that mask as its bias, which never stores the [..., s, t] scores. A choice of the search, as attention.
attention_biased: matmul, add, softmax, matmul -> attention  [search]
    attention_biased_times_one without the multiplication: q @ k, the add of a float mask that broadcasts against the scores, a softmax along the last axis and the product with v become one attention with the mask as its bias.
attention_scaled_biased: matmul, div_scalar, add, softmax, matmul -> attention  [search]
    Attention as Hugging Face's BERT-style models compute it: q @ k, a division by a constant, the add of a float mask that broadcasts against the scores (a padding mask [b, 1, 1, t]: 0 where a key is seen, a large negative number where it is padding), a softmax along the last axis and the product with v become one attention with the mask as its bias. A choice of the search, as attention.
attention_scaled: matmul, div_scalar, softmax, matmul -> attention  [search]
    Attention with the scores divided after the product and no mask: q @ k, a division by a constant, a softmax along the last axis and the product with v become one attention. A choice of the search, as attention_masked.
attention: matmul, softmax, matmul -> attention  [search]
    Attention with the queries scaled before the product (PyTorch's nn.MultiheadAttention export) and no mask: q @ k, a softmax along the last axis and the product with v become one attention. A choice of the search, as attention_masked.
attention_heads_masked: attention_masked, transpose, reshape, transpose, reshape, transpose, reshape, transpose, reshape -> attention_heads_masked  [always]
    A masked attention between a transformer's projections, as PyTorch exports it: each of q, k and v reshaped from [b, s, heads*d] to [b, s, heads, d] and transposed into heads ([0, 2, 1, 3]; k to [0, 2, 3, 1]), the attention, and its result transposed and reshaped back to [b, s, heads*e], become one attention_heads_masked that reads the heads in place. It matches only where attention_masked has fused the attention, and always pays there: the eight moves are gone and the fused kernel splits what attention_masked splits (batch, heads, query rows).
attention_heads: attention, transpose, reshape, transpose, reshape, transpose, reshape, transpose, reshape -> attention_heads  [always]
    attention_heads_masked without the mask: the head reshapes and transposes around an attention (the fused form of attention_scaled or attention) become one attention_heads.
attention_heads_qkv_masked: attention_heads_masked, split -> attention_heads_qkv_masked  [always]
    A split of a packed [b, s, 3*heads*d] projection into equal q, k and v read only by an attention_heads_masked becomes one attention_heads_qkv_masked that reads the three in place: the split's copy is gone. It matches only where attention_heads_masked has been made, and always pays there.
attention_heads_qkv: attention_heads, split -> attention_heads_qkv  [always]
    attention_heads_qkv_masked without the mask: a split of a packed projection into q, k and v read only by an attention_heads becomes one attention_heads_qkv.
attention_divided_queries: div_scalar, attention -> attention  [always]
    Queries divided by a constant before an attention that divides nothing (PyTorch's nn.MultiheadAttention export scales q before q @ k): the division becomes the attention's divisor, and its pass over q is gone.
attention_heads_seq_first: attention, transpose, reshape, transpose, reshape, transpose, reshape, transpose -> attention_heads_seq_first, reshape  [always]
    The heads of a sequence-first transformer (PyTorch's nn.MultiheadAttention without batch_first): each of q, k and v reshaped from [s, b, heads*d] to [s, b*heads, d] and transposed into [b*heads, s, d] (k to [b*heads, d, t]), the attention, and its result transposed back to [s, b*heads, e], become one attention_heads_seq_first that reads the heads in place and a reshape of its [s, b, heads*e] result (which reshape_reshape joins with the reshape that follows). It matches only where attention has fused the products, and always pays there: seven moves are gone, and the fused kernel splits the batch and the heads apart.
attention_heads_seq_first_head_bias: attention, transpose, reshape, transpose, reshape, transpose, reshape, transpose -> reshape, attention_heads_seq_first, reshape  [always]
    attention_heads_seq_first where the scores' bias is one [s, t] (or [1, t]) per batch and head: nn.MultiheadAttention's 3-D float attn_mask of [b*heads, s, t], which a relative position bias (ALiBi's, T5's) takes. The attention's scores are [b*heads, s, t] and the fused kernel's [b, heads, s, t], so the bias is reshaped to [b, heads, s, t] (a view: b*heads rows become b times heads, the same order) and the head reshapes and transposes are gone as in attention_heads_seq_first.
attention_heads_qkv_seq_first: attention_heads_seq_first, slice, slice, slice -> attention_heads_qkv_seq_first  [always]
    Three slices of a packed sequence-first projection [s, b, 3*heads*d] into its q, k and v columns, read only by an attention_heads_seq_first, become one attention_heads_qkv_seq_first that reads the three in place: the slices' copies are gone. PyTorch's nn.MultiheadAttention exports its in-projection so.
reshape_linear_reshape: reshape, linear, reshape -> linear  [always]
    A linear layer between a reshape that flattens the leading dims of x into rows ([..., k] to [rows, k]) and one that restores them ([rows, n] to [..., n]) becomes one linear of x (linear takes batch dims): the two moves are gone. nn.MultiheadAttention's out-projection is exported so.
attention_block_seq_first: transpose, linear, attention_heads_qkv_seq_first, linear, transpose -> linear, attention_heads_qkv, linear  [always]
    A sequence-first self-attention block between batch-first tensors (PyTorch's nn.TransformerEncoderLayer with batch_first: x transposed to [s, b, d], the packed in-projection, attention_heads_qkv_seq_first, the out-projection and its result transposed back to [b, s, n]) becomes the batch-first block: the in-projection of x itself, attention_heads_qkv, and the out-projection. A linear layer works row by row, so the transposes move through both projections and cancel: both moves are gone, and linear_add can then take the shortcut into the out-projection.
rope_rotate_half: neg, slice, concat, slice, mul, add, mul -> rope  [always]
    The rotary position embedding as GPT-NeoX's and LLaMA's code writes it, x * cos + rotate_half(x) * sin with rotate_half(x) = cat(-x2, x1) of the two halves of the last dim: two slices, a negation, a concat, two products and a sum (seven passes over the queries or keys) become one rope. Always pays: rope splits the leading dims as the chain can (a plan that split d would cut the halves apart).
attention_grouped_kv: attention, reshape, where, reshape, where -> reshape, reshape, attention, reshape  [always]
    Grouped-query attention (LLaMA 2 70B's, Mistral's: fewer K and V heads than query heads) as Hugging Face's repeat_kv exports it: each of k and v [b, kv, t, d] gains a unit dim, is expanded to [b, kv, group, t, d] and reshaped to [b, kv*group, t, d] for the attention. The attention reads the unexpanded k and v instead, broadcast over each group of query heads: q is viewed as [b, kv, group, s, d], the mask as [b, 1, 1, s, t], and the result reshaped back. The two copies of k and v repeated group times are gone.
attention_grouped_kv_masked: attention_masked, reshape, where, reshape, where -> reshape, reshape, attention_masked, reshape  [always]
    attention_grouped_kv for an attention_masked (a bool mask, true where a score is replaced by fill): the mask is viewed as attention_grouped_kv's float mask is.
attention_grouped_kv_unmasked: attention, reshape, where, reshape, where -> reshape, attention, reshape  [always]
    attention_grouped_kv for an attention without a mask.
$ tapestry --format json rewrites list | python3 -c 'import json, sys; d = json.load(sys.stdin); print(len(d["rules"]), sorted(d["rules"][0]))'
60 ['always', 'approximate', 'doc', 'examples', 'file', 'line', 'match', 'name', 'replace', 'search']
$ tapestry rewrites show conv_relu
conv_relu:
  doc: >-
    A convolution whose result only a ReLU reads becomes one conv2d_act with
    min 0 (ONNX Runtime's Conv + Relu fusion).
  search: true
  match:
    conv: {kernel: conv2d, inputs: {input: x, weight: w, bias: "b?"}, outputs: {result: y}}
    act: {kernel: relu, inputs: {input: y}, outputs: {result: z}}
  replace:
    fused:
      kernel: conv2d_act
      params_from: [conv]
      params: {min: 0.0}
      inputs: {input: x, weight: w, bias: "b?"}
      outputs: {result: z}
  examples:
    - params: {conv: {padding: [1, 1]}}
      inputs:
        x: {shape: [2, 3, 8, 8], dtype: float32}
        w: {shape: [4, 3, 3, 3], dtype: float32}
        b: {shape: [4], dtype: float32}
    - params: {conv: {groups: 4, padding: [1, 1], stride: [2, 2]}}
      inputs:
        x: {shape: [1, 4, 9, 9], dtype: float64}
        w: {shape: [4, 1, 3, 3], dtype: float64}
$ tapestry rewrites show conv_rleu
! error: unknown rewrite rule "conv_rleu" (known: conv_bias, conv_add_relu, conv_add, conv_relu, conv_clip, conv_silu, conv_hard_swish, grouped_conv_add_relu, grouped_conv_add, grouped_conv_relu, grouped_conv_clip, grouped_conv_silu, grouped_conv_hard_swish, gelu_erf, gelu_erf_half_first, gelu_tanh, gelu_tanh_half_first, gelu_as_tanh, linear_act_gelu_as_tanh, layernorm_decomposed, rmsnorm_decomposed, rmsnorm_divided, rmsnorm_squared_by_product, silu, relu_relu, reshape_reshape, transpose_linear_weight, transpose_transpose, transpose_matmul_weight, matmul_add_linear, linear_matmul_add, linear_add_relu, linear_add, linear_gelu, linear_gelu_tanh, linear_silu, linear_relu, matmul_silu, matmul_relu, matmul_residual, attention_masked, attention_biased_times_one, attention_biased, attention_scaled_biased, attention_scaled, attention, attention_heads_masked, attention_heads, attention_heads_qkv_masked, attention_heads_qkv, attention_divided_queries, attention_heads_seq_first, attention_heads_seq_first_head_bias, attention_heads_qkv_seq_first, reshape_linear_reshape, attention_block_seq_first, rope_rotate_half, attention_grouped_kv, attention_grouped_kv_masked, attention_grouped_kv_unmasked)
[exit 1]
$ tapestry rewrites check
checked 60 rules, 101 examples (and 153 random shapes; 67 exactly on integers): all passed
$ tapestry --format json rewrites check conv_clip relu_relu
{
  "status": "ok",
  "rules": 2,
  "examples": 3,
  "random_shapes": 6,
  "integer_checks": 9,
  "failures": []
}
## The pre-pass: convnet's convolution + relu pairs fuse; the summary says so.
$ tapestry expand $TESTDATA/graphs/convnet.json --rewrites default -o out.json && jq -c '[.operations[] | {name, kernel}]' out.json
expanded convnet: 8 operations, 15 tensors, 26 MFLOP -> out.json
  rewrites: 4 sites (conv_bias 2, conv_relu 2)
[{"name":"conv1+conv1_bias/flat","kernel":"reshape"},{"name":"conv1+conv1_bias+relu1","kernel":"conv2d_act"},{"name":"conv2+conv2_bias/flat","kernel":"reshape"},{"name":"conv2+conv2_bias+relu2","kernel":"conv2d_act"},{"name":"pool_w","kernel":"mean"},{"name":"pool_h","kernel":"mean"},{"name":"classifier","kernel":"linear"},{"name":"probs","kernel":"softmax"}]
[created out.json]
$ tapestry --format json expand $TESTDATA/graphs/convnet.json --rewrites default -o out.json | jq -c .rewrites
[{"rule":"conv_bias","replaced":["conv1","conv1_bias"],"added":["conv1+conv1_bias/flat","conv1+conv1_bias"]},{"rule":"conv_bias","replaced":["conv2","conv2_bias"],"added":["conv2+conv2_bias/flat","conv2+conv2_bias"]},{"rule":"conv_relu","replaced":["conv1+conv1_bias","relu1"],"added":["conv1+conv1_bias+relu1"]},{"rule":"conv_relu","replaced":["conv2+conv2_bias","relu2"],"added":["conv2+conv2_bias+relu2"]}]
$ tapestry expand $TESTDATA/graphs/convnet.json -r $TESTDATA/bad/rewrites/wrong_axis.yaml -o out.json
! tapestry: error: -r/--rules cannot go with --rewrites none
[exit 2]
## Golden site counts of the pre-pass on the ONNX models (docs/rewrites.md).
$ for m in resnet18 resnet50 mobilenet_v2 bert_layer bert_padded_layer mha_seq_first mha_masked gpt2_block gpt2_block_opset14; do tapestry import $TESTDATA/onnx/$m.onnx -q -o $m.json && tapestry --format json expand $m.json --rewrites default -o $m.x.json | jq -r --arg m $m '"\($m): \(.rewrites | length) sites \([.rewrites[].rule] | group_by(.) | map("\(.[0]) \(length)") | join(", "))"'; done
resnet18: 17 sites conv_add_relu 8, conv_relu 9
resnet50: 49 sites conv_add_relu 16, conv_relu 33
mobilenet_v2: 45 sites conv_add 10, conv_clip 35
bert_layer: 13 sites attention 1, attention_block_seq_first 1, attention_divided_queries 1, attention_heads_qkv_seq_first 1, attention_heads_seq_first 1, linear_add 2, linear_relu 1, matmul_add_linear 3, reshape_linear_reshape 1, reshape_reshape 1
bert_padded_layer: 12 sites attention_heads 1, attention_scaled_biased 1, gelu_erf_half_first 1, linear_add 2, linear_gelu 1, matmul_add_linear 6
mha_seq_first: 7 sites attention 1, attention_divided_queries 1, attention_heads_qkv_seq_first 1, attention_heads_seq_first 1, matmul_add_linear 1, reshape_linear_reshape 1, reshape_reshape 1
mha_masked: 7 sites attention_biased_times_one 1, attention_divided_queries 1, attention_heads_qkv_seq_first 1, attention_heads_seq_first 1, matmul_add_linear 1, reshape_linear_reshape 1, reshape_reshape 1
gpt2_block: 11 sites attention_heads_masked 1, attention_heads_qkv_masked 1, attention_masked 1, gelu_erf 1, linear_add 2, linear_gelu 1, matmul_add_linear 4
gpt2_block_opset14: 13 sites attention_heads_masked 1, attention_heads_qkv_masked 1, attention_masked 1, gelu_erf 1, layernorm_decomposed 2, linear_add 2, linear_gelu 1, matmul_add_linear 4
[created bert_layer.json]
[created bert_layer.x.json]
[created bert_padded_layer.json]
[created bert_padded_layer.x.json]
[created gpt2_block.json]
[created gpt2_block.x.json]
[created gpt2_block_opset14.json]
[created gpt2_block_opset14.x.json]
[created mha_masked.json]
[created mha_masked.x.json]
[created mha_seq_first.json]
[created mha_seq_first.x.json]
[created mobilenet_v2.json]
[created mobilenet_v2.x.json]
[created resnet18.json]
[created resnet18.x.json]
[created resnet50.json]
[created resnet50.x.json]
## A rewritten plan records the graph it came from, and run --check compares with that graph.
$ tapestry optimize $TESTDATA/graphs/convnet.json --target cpu-2 --rewrites default --iterations 5 -o plan.json && jq -c '[.rewrites.sites[].rule, (.rewrites.original.operations | length), (.graph.operations | length)]' plan.json && tapestry run plan.json --check -q && echo checked
convnet on cpu-2 (2 devices): 13 plans on the front after 5 iterations (326 plans)
  rewrites: 4 sites (conv_bias 2, conv_relu 2)
  searched with and without conv_relu in 2 site groups (4 graphs); the written plan rewrote 4 of the 4 sites
  selected (fastest)  318.7us, peak 403.4KiB, moved 138.3KiB
  busiest             device 0 busy 99% of the time (8 shards); link host -> 0 busy 4% (7 transfers, 69.07KiB)
  single              597us, peak 787.4KiB, moved 117.2KiB
  data_parallel       318.7us, peak 403.4KiB, moved 138.3KiB
  tensor_parallel     599us, peak 786.8KiB, moved 118.3KiB
  -> plan.json
["conv_bias","conv_bias","conv_relu","conv_relu",10,8]
checked
[created plan.json]
## render draws the rewritten graph (--view graph) or the one it came from (--view original).
$ tapestry optimize $TESTDATA/graphs/convnet.json --target cpu-2 --iterations 5 -q -o plan.json && tapestry render plan.json --view original -o original.dot && tapestry render plan.json --view graph -o rewritten.dot && grep -c conv2d_act original.dot rewritten.dot
rendered convnet (original view, 27 nodes) -> original.dot (dot)
rendered convnet (graph view, 23 nodes) -> rewritten.dot (dot)
original.dot:0
rewritten.dot:4
[created original.dot]
[created rewritten.dot]
$ tapestry optimize $TESTDATA/graphs/convnet.json --target cpu-2 --iterations 5 -q --rewrites none -o plain.json && tapestry render plain.json --view original
! tapestry: error: --view original: plain.json records no original graph (no rewrite rule changed its graph; --view graph draws it)
[exit 2]
[created plain.json]
$ cd $TESTDATA && tapestry render graphs/convnet.json --view original
! tapestry: error: --view original cannot draw graphs/convnet.json: it is a graph/v1 file (use --view graph or timeline)
[exit 2]
$ tapestry optimize $TESTDATA/graphs/mobilenet_block.json --target cpu-2 --rewrites default --iterations 5 -o plan.json -q && tapestry run plan.json --check --format json | jq -c '[.check.ok, (.check.outputs | length)]'
[true,2]
## Every ONNX model, optimized with rewrites for cpu-2 and h100x8, passes run --check against the model as imported (ResNet-50's weights are graph inputs, drawn over the square root of their fan-in).
$ tapestry import $TESTDATA/onnx/mlp3.onnx -q -o mlp3.json
[created mlp3.json]
$ for t in cpu-2 h100x8; do tapestry optimize resnet50.json --target $t --seed 1 --iterations 10 -q -o resnet50.$t.json && tapestry run resnet50.$t.json --check -q && echo "resnet50 $t: checked, $(jq '[.rewrites.sites[]?] | length' resnet50.$t.json) sites"; done
resnet50 cpu-2: checked, 49 sites
resnet50 h100x8: checked, 0 sites
[created resnet50.cpu-2.json]
[created resnet50.h100x8.json]
$ for t in cpu-2 h100x8; do tapestry optimize mobilenet_v2.json --target $t --seed 1 --iterations 10 -q -o mobilenet_v2.$t.json && tapestry run mobilenet_v2.$t.json --check -q && echo "mobilenet_v2 $t: checked, $(jq '[.rewrites.sites[]?] | length' mobilenet_v2.$t.json) sites"; done
mobilenet_v2 cpu-2: checked, 45 sites
mobilenet_v2 h100x8: checked, 35 sites
[created mobilenet_v2.cpu-2.json]
[created mobilenet_v2.h100x8.json]
$ for t in cpu-2 h100x8; do tapestry optimize mlp3.json --target $t --seed 1 --iterations 10 -q -o mlp3.$t.json && tapestry run mlp3.$t.json --check -q && echo "mlp3 $t: checked, $(jq '[.rewrites.sites[]?] | length' mlp3.$t.json) sites"; done
mlp3 cpu-2: checked, 2 sites
mlp3 h100x8: checked, 2 sites
[created mlp3.cpu-2.json]
[created mlp3.h100x8.json]
$ for t in cpu-2 h100x8; do tapestry optimize resnet18.json --target $t --seed 1 --iterations 10 -q -o resnet18.$t.json && tapestry run resnet18.$t.json --check -q && echo "resnet18 $t: checked, $(jq '[.rewrites.sites[]?] | length' resnet18.$t.json) sites"; done
resnet18 cpu-2: checked, 17 sites
resnet18 h100x8: checked, 0 sites
[created resnet18.cpu-2.json]
[created resnet18.h100x8.json]
$ for t in cpu-2 h100x8; do tapestry optimize bert_layer.json --target $t --seed 1 --iterations 10 -q -o bert_layer.$t.json && tapestry run bert_layer.$t.json --check -q && echo "bert_layer $t: checked, $(jq '[.rewrites.sites[]?] | length' bert_layer.$t.json) sites"; done
bert_layer cpu-2: checked, 13 sites
bert_layer h100x8: checked, 13 sites
[created bert_layer.cpu-2.json]
[created bert_layer.h100x8.json]
## nn.MultiheadAttention on sequence-first [s, b, d] tensors: its slices, head reshapes and transposes and the reshapes around its out-projection are gone (three operations where the search also fuses the in-projection's matmul and add), and the plans pass run --check.
$ for t in cpu-2 h100x8; do tapestry optimize bert_padded_layer.json --target $t --seed 1 --iterations 10 -q -o bert_padded_layer.$t.json && tapestry run bert_padded_layer.$t.json --check -q && echo "bert_padded_layer $t: checked, $(jq -r '[.rewrites.sites[]?.rule] | group_by(.) | map("\(.[0]) \(length)") | join(", ")' bert_padded_layer.$t.json)"; done
bert_padded_layer cpu-2: checked, attention_heads 1, attention_scaled_biased 1, gelu_erf_half_first 1, linear_add 2, linear_gelu 1, matmul_add_linear 6
bert_padded_layer h100x8: checked, attention_heads 1, attention_scaled_biased 1, gelu_erf_half_first 1, linear_add 2, linear_gelu 1, matmul_add_linear 6
[created bert_padded_layer.cpu-2.json]
[created bert_padded_layer.h100x8.json]
$ for t in cpu-2 h100x8; do tapestry optimize mha_seq_first.json --target $t --seed 1 --iterations 10 -q -o mha.$t.json && tapestry run mha.$t.json --check -q && echo "mha_seq_first $t: checked, $(jq -c '[.graph.operations[].kernel]' mha.$t.json)"; done
mha_seq_first cpu-2: checked, ["linear","attention_heads_qkv_seq_first","linear"]
mha_seq_first h100x8: checked, ["matmul","add","attention_heads_qkv_seq_first","linear"]
[created mha.cpu-2.json]
[created mha.h100x8.json]
## nn.MultiheadAttention with a causal float attn_mask: the mask is attention's bias, carried through the heads rules.
$ for t in cpu-2 h100x8; do tapestry optimize mha_masked.json --target $t --seed 1 --iterations 10 -q -o mham.$t.json && tapestry run mham.$t.json --check -q && echo "mha_masked $t: checked, $(jq -c '[.graph.operations[].kernel]' mham.$t.json)"; done
mha_masked cpu-2: checked, ["linear","attention_heads_qkv_seq_first","linear"]
mha_masked h100x8: checked, ["linear","attention_heads_qkv_seq_first","linear"]
[created mham.cpu-2.json]
[created mham.h100x8.json]
## One float mask per batch and head ([b*heads, s, t]): reshaped to [b, heads, s, t] for the heads kernel, checked split across devices; batch_first too (the block rule makes it the batch-first heads kernel).
$ for m in mha_masked_per_head mha_masked_per_head_batch_first; do for t in cpu-2 h100x8; do tapestry optimize $TESTDATA/fuzz/rewrite/$m.json --target $t --seed 1 --iterations 10 --baseline data_parallel -q -o $m.$t.json && tapestry run $m.$t.json --check -q && echo "$m $t: checked, $(jq -c '[.graph.operations[].kernel]' $m.$t.json), $(jq -c '[.operations[].split]' $m.$t.json)"; done; done
mha_masked_per_head cpu-2: checked, ["linear","attention_heads_qkv_seq_first","reshape","linear"], [[2,1,1],[2,1,1],[2,1,1,1],[2,1,1]]
mha_masked_per_head h100x8: checked, ["linear","attention_heads_qkv_seq_first","reshape","linear"], [[6,1,1],[2,1,1],[2,1,1,1],[6,1,1]]
mha_masked_per_head_batch_first cpu-2: checked, ["linear","attention_heads_qkv","linear","reshape"], [[2,1,1],[2,1,1],[2,1,1],[2,1,1,1]]
mha_masked_per_head_batch_first h100x8: checked, ["linear","attention_heads_qkv","linear","reshape"], [[2,1,1],[2,1,1],[2,1,1],[2,1,1,1]]
[created mha_masked_per_head.cpu-2.json]
[created mha_masked_per_head.h100x8.json]
[created mha_masked_per_head_batch_first.cpu-2.json]
[created mha_masked_per_head_batch_first.h100x8.json]
## LLaMA-style RMSNorm (the rsqrt form and the division form) around a SiLU MLP: two rmsnorm kernels, checked split across devices.
$ for t in cpu-2 h100x8; do tapestry optimize $TESTDATA/fuzz/rewrite/rmsnorm_mlp.json --target $t --seed 1 --iterations 10 --baseline data_parallel -q -o rms.$t.json && tapestry run rms.$t.json --check -q && echo "rmsnorm_mlp $t: checked, $(jq -c '[.graph.operations[].kernel]' rms.$t.json), $(jq -c '[.operations[].split]' rms.$t.json)"; done
rmsnorm_mlp cpu-2: checked, ["rmsnorm","linear_act","linear","mul","linear_act","rmsnorm"], [[2,1],[2,1,1],[2,1,1],[2,1,1],[2,1,1],[2,1]]
rmsnorm_mlp h100x8: checked, ["rmsnorm","linear_act","linear","mul","linear_act","rmsnorm"], [[2,1],[2,1,1],[2,1,1],[2,1,1],[2,1,1],[2,1]]
[created rms.cpu-2.json]
[created rms.h100x8.json]
## A LLaMA-style decoder layer exported at opset 14: RMSNorm, the rotary embedding of q and k (rope_rotate_half), the attention whose k.transpose(2, 3) folded into the product (transpose_k) with the causal mask added after the scaling, and the SwiGLU MLP; its plans split across devices pass run --check against the imported graph.
$ tapestry expand $TESTDATA/fuzz/rewrite/llama_layer.json --rewrites default -o llama.x.json && jq -c '[.operations[].kernel | select(. == "rope" or . == "attention")]' llama.x.json && jq -c '[.operations[] | select(.kernel == "attention") | .params.transpose_k]' llama.x.json
expanded llama_layer: 21 operations, 34 tensors, 359 kFLOP -> llama.x.json
  rewrites: 10 sites (attention_scaled_biased 1, matmul_residual 2, matmul_silu 1, rmsnorm_decomposed 2, rope_rotate_half 2, silu 1, transpose_matmul_weight 1)
["rope","rope","attention"]
[true]
[created llama.x.json]
$ for t in cpu-2 h100x8; do tapestry optimize $TESTDATA/fuzz/rewrite/llama_layer.json --target $t --seed 1 --iterations 10 --baseline data_parallel -q -o llama.$t.json && tapestry run llama.$t.json --check -q && echo "llama_layer $t: checked, $(jq '.graph.operations | length' llama.$t.json) operations, $(jq -c '[.operations[].split[0]] | unique' llama.$t.json)"; done
llama_layer cpu-2: checked, 21 operations, [2]
llama_layer h100x8: checked, 21 operations, [2]
[created llama.cpu-2.json]
[created llama.h100x8.json]
## The same layer with grouped-query attention (2 K and V heads for 4 query heads, repeated by an expand and a reshape each): attention_grouped_kv makes the attention read k and v unrepeated, broadcast over each group of query heads.
$ tapestry expand $TESTDATA/fuzz/rewrite/llama_gqa_layer.json --rewrites default -o gqa.x.json && jq -c '[.operations[] | select(.kernel == "attention" or .kernel == "where") | [.kernel, .params.transpose_k]]' gqa.x.json
expanded llama_gqa_layer: 26 operations, 41 tensors, 325 kFLOP -> gqa.x.json
  rewrites: 11 sites (attention_grouped_kv 1, attention_scaled_biased 1, matmul_residual 2, matmul_silu 1, rmsnorm_decomposed 2, rope_rotate_half 2, silu 1, transpose_matmul_weight 1)
[["attention",true]]
[created gqa.x.json]
$ for t in cpu-2 h100x8; do tapestry optimize $TESTDATA/fuzz/rewrite/llama_gqa_layer.json --target $t --seed 1 --iterations 10 --baseline data_parallel -q -o gqa.$t.json && tapestry run gqa.$t.json --check -q && echo "llama_gqa_layer $t: checked, $(jq '.graph.operations | length' gqa.$t.json) operations, $(jq -c '[.operations[].split[0]] | unique' gqa.$t.json)"; done
llama_gqa_layer cpu-2: checked, 26 operations, [2]
llama_gqa_layer h100x8: checked, 26 operations, [2,8]
[created gqa.cpu-2.json]
[created gqa.h100x8.json]
## attention_grouped_kv views a mask the same for every head as [b, 1, 1, s, t] and one per head as [b, kv, group, s, t]; a mask of one row [t] is left as it is (the rule does not match).
$ tapestry expand $TESTDATA/rewrites/gqa_mask_per_head.json --rewrites default -o gqa_ph.x.json && jq -c '[.operations[] | [.kernel, .params.shape]]' gqa_ph.x.json && tapestry optimize $TESTDATA/rewrites/gqa_mask_per_head.json --target h100x8 --seed 1 --iterations 5 -q -o gqa_ph.plan.json && tapestry run gqa_ph.plan.json --check -q && echo checked
expanded gqa_mask_per_head: 4 operations, 10 tensors, 4.08 kFLOP -> gqa_ph.x.json
  rewrites: 1 site (attention_grouped_kv 1)
[["reshape",[2,2,2,5,3]],["reshape",[2,2,2,5,6]],["attention",null],["reshape",[2,4,5,3]]]
checked
[created gqa_ph.plan.json]
[created gqa_ph.x.json]
$ tapestry expand $TESTDATA/rewrites/gqa_mask_row.json --rewrites default -o gqa_row.x.json && jq -c '[.operations[].kernel]' gqa_row.x.json
expanded gqa_mask_row: 5 operations, 11 tensors, 4.37 kFLOP -> gqa_row.x.json
["where","reshape","where","reshape","attention"]
[created gqa_row.x.json]
$ for t in cpu-2 h100x8; do tapestry optimize gpt2_block.json --target $t --seed 1 --iterations 10 -q -o gpt2_block.$t.json && tapestry run gpt2_block.$t.json --check -q && echo "gpt2_block $t: checked, $(jq '[.rewrites.sites[]?] | length' gpt2_block.$t.json) sites"; done
gpt2_block cpu-2: checked, 11 sites
gpt2_block h100x8: checked, 11 sites
[created gpt2_block.cpu-2.json]
[created gpt2_block.h100x8.json]
## The GPT-2 block exported at opset 14 (LayerNorm as its nine-operation chain) rewrites to the same kernels as the opset-17 export, and its plans pass run --check against the chain.
$ diff <(jq -c '[.operations[].kernel]' gpt2_block.x.json) <(jq -c '[.operations[].kernel]' gpt2_block_opset14.x.json) && jq '.operations | length' gpt2_block_opset14.json gpt2_block_opset14.x.json
47
7
$ for t in cpu-2 h100x8; do tapestry optimize gpt2_block_opset14.json --target $t --seed 1 --iterations 10 -q -o g14.$t.json && tapestry run g14.$t.json --check -q && echo "gpt2_block_opset14 $t: checked, $(jq -r '[.rewrites.sites[]?.rule] | group_by(.) | map("\(.[0]) \(length)") | join(", ")' g14.$t.json)"; done
gpt2_block_opset14 cpu-2: checked, attention_heads_masked 1, attention_heads_qkv_masked 1, attention_masked 1, gelu_erf 1, layernorm_decomposed 2, linear_add 2, linear_gelu 1, matmul_add_linear 4
gpt2_block_opset14 h100x8: checked, attention_heads_masked 1, attention_heads_qkv_masked 1, attention_masked 1, gelu_erf 1, layernorm_decomposed 2, linear_add 2, linear_gelu 1, matmul_add_linear 4
[created g14.cpu-2.json]
[created g14.h100x8.json]
## The search chooses among the graphs the search rules make: plans of one front rewrote different sites, and each passes run --check against the model as imported.
$ for m in gpt2_block bert_layer resnet18; do for s in fastest smallest; do tapestry optimize $m.json --target h100x8 --seed 2 --iterations 60 --select $s -q -o $m.$s.json --front $m.front.json && tapestry run $m.$s.json --check -q && echo "$m $s: checked, $(jq -r '[.rewrites.sites[]?.rule] | group_by(.) | map("\(.[0]) \(length)") | join(", ")' $m.$s.json)"; done; jq -r --arg m $m '"\($m): front plans by sites rewritten \([.front[].rewrites | length] | group_by(.) | map("\(.[0]): \(length)") | join(", "))"' $m.front.json; done
gpt2_block fastest: checked, attention_heads_masked 1, attention_heads_qkv_masked 1, attention_masked 1, gelu_erf 1, linear_add 2, linear_gelu 1, matmul_add_linear 4
gpt2_block smallest: checked, attention_heads_masked 1, attention_heads_qkv_masked 1, attention_masked 1, gelu_erf 1, linear_add 1, matmul_add_linear 2
gpt2_block: front plans by sites rewritten 1: 2, 4: 22, 7: 12, 8: 9, 11: 19
bert_layer fastest: checked, attention 1, attention_block_seq_first 1, attention_divided_queries 1, attention_heads_qkv_seq_first 1, attention_heads_seq_first 1, linear_add 2, linear_relu 1, matmul_add_linear 3, reshape_linear_reshape 1, reshape_reshape 1
bert_layer smallest: checked, attention 1, attention_block_seq_first 1, attention_divided_queries 1, attention_heads_qkv_seq_first 1, attention_heads_seq_first 1, linear_add 2, linear_relu 1, matmul_add_linear 3, reshape_linear_reshape 1, reshape_reshape 1
bert_layer: front plans by sites rewritten 8: 10, 11: 3, 13: 51
resnet18 fastest: checked, conv_add_relu 8
resnet18 smallest: checked, 
resnet18: front plans by sites rewritten 0: 13, 8: 28, 9: 1, 13: 4, 17: 18
[created bert_layer.fastest.json]
[created bert_layer.front.json]
[created bert_layer.smallest.json]
[created gpt2_block.fastest.json]
[created gpt2_block.front.json]
[created gpt2_block.smallest.json]
[created resnet18.fastest.json]
[created resnet18.front.json]
[created resnet18.smallest.json]
## fuse(P, C): fused kernels composed from two templates. The rules of testdata/rewrites/composed.yaml replace with them and pass their checks (float64, the CPU backend running P's kernel then C's in place, and every half of the index space).
$ tapestry rewrites check -r $TESTDATA/rewrites/composed.yaml matmul_tanh matmul_bias_clip conv_sigmoid
checked 3 rules, 4 examples (and 8 random shapes; 0 exactly on integers): all passed
## Plans with composed kernels embed their templates and pass run --check against the graph as written.
$ for t in cpu-2 h100x8; do tapestry optimize $TESTDATA/rewrites/composed_mlp.json --target $t --seed 1 --iterations 10 -q --rewrites $TESTDATA/rewrites/composed.yaml -o composed.$t.json && tapestry run composed.$t.json --check -q && echo "$t: checked, $(jq -c '[.graph.operations[].kernel]' composed.$t.json), embeds $(jq -c '.kernels | keys' composed.$t.json)"; done
cpu-2: checked, ["fuse(fuse(matmul, add.A), clip)","fuse(matmul, tanh)"], embeds ["fuse(fuse(matmul, add.A), clip)","fuse(matmul, tanh)"]
h100x8: checked, ["fuse(fuse(matmul, add.A), clip)","fuse(matmul, tanh)"], embeds ["fuse(fuse(matmul, add.A), clip)","fuse(matmul, tanh)"]
[created composed.cpu-2.json]
[created composed.h100x8.json]
## A graph may name composed kernels itself: a producer's list input, and the producer's result as the consumer's second input.
$ for t in cpu-2 h100x8; do tapestry optimize $TESTDATA/rewrites/fused_ops.json --target $t --seed 1 --iterations 5 -q -o fused_ops.$t.json && tapestry run fused_ops.$t.json --check -q && echo "$t: checked"; done
cpu-2: checked
h100x8: checked
[created fused_ops.cpu-2.json]
[created fused_ops.h100x8.json]
## Approximate rules (gelu_as_tanh) are off unless asked for with --approximate; a plan made with them is checked against its own graph, and the approximation (its float64 result against the original graph's) is held to 1e-3.
$ for a in "" --approximate; do tapestry optimize $TESTDATA/graphs/transformer_block.json --target cpu-2 --seed 1 --iterations 5 -q $a -o approx.json && jq -c '[.rewrites.sites[] | [.rule, .approximate]]' approx.json; done
[["linear_add",null],["linear_gelu",null],["linear_add",null]]
[["linear_add",null],["gelu_as_tanh",true],["linear_add",null],["linear_gelu_tanh",null]]
[created approx.json]
$ tapestry run approx.json --check 2>&1 | grep -E '^(check|approximate)' | sed -E 's/(max error|unsharded|bound) [^,]*/\1 E/g'
check y (float32): max error E, unsharded E, bound E, approximation 2.3e-05 (at most 0.001) ok
approximate rewrites (gelu_as_tanh): outputs checked against the rewritten graph; approximation: its float64 result against the original graph's
$ tapestry --format json run approx.json --check | jq -c '[.check.ok, .check.approximate_rules, (.check.outputs[] | [.tensor, .approximation < 1e-4, .ok])]'
[true,["gelu_as_tanh"],["y",true,true]]
$ tapestry expand $TESTDATA/graphs/transformer_block.json --rewrites default --approximate -o approx.x.json
expanded transformer_block: 21 operations, 40 tensors, 1.76 GFLOP -> approx.x.json
  rewrites: 4 sites (gelu_as_tanh 1 approximate, linear_add 2, linear_gelu_tanh 1)
[created approx.x.json]
$ tapestry optimize $TESTDATA/graphs/transformer_block.json --rewrites none --approximate -o never.json
! tapestry: error: --approximate cannot go with --rewrites none
[exit 2]
## A wrong rule marked approximate (a linear layer's GELU as a ReLU), applied anyway with --rewrites FILE, fails the check on its approximation.
$ tapestry optimize $TESTDATA/graphs/transformer_block.json --target cpu-2 --seed 1 --iterations 5 -q --rewrites $TESTDATA/bad/rewrites/approximate_too_far.yaml -o far.json && tapestry run far.json --check -q 2>&1 | sed -E 's/(max error|unsharded|bound) [0-9.e+-]+/\1 E/g'
far.json: error: run --check: output y is too far from the original graph's result after approximate rewrites: max error E, unsharded E, bound E, approximation 0.0082 (at most 0.001)
[exit 3]
[created far.json]
## A site's result is named after the operations it replaces, joined with '+'; past 64 characters (attention rewritten round after round) only the first and last stay.
$ jq -r '.operations[].name' bert_layer.x.json
/self_attn/Transpose+...+/self_attn/Transpose_5/proj2
/self_attn/Transpose+...+/self_attn/Transpose_5/heads
/self_attn/Transpose+...+/self_attn/Transpose_5+/Add
/norm1/LayerNormalization
/linear1/MatMul+/linear1/Add+/Relu
/linear2/MatMul+/linear2/Add+/Add_1
/norm2/LayerNormalization
