#!/usr/bin/python3
"""Write the ONNX test models of `tapestry import` (docs/reference/onnx.md).

    /usr/bin/python3 scripts/make_onnx_models.py [--out DIR]

Needs torch 1.13, torchvision 0.14 and onnx 1.12 (Debian's /usr/bin/python3 has
them). Writes, deterministically (torch.manual_seed(0), opset 17):

  testdata/onnx/       relu (one node, the source of the truncated file), mlp3 (and mlp3_dynamic, its batch dim named "batch"),
                       resnet18, resnet50 and mobilenet_v2 (structure
                       only: export_params=False), bert_layer (and
                       bert_layer_dynamic: batch and seq dims named),
                       mha_seq_first (nn.MultiheadAttention on [s, b, d]), mha_masked
                       (the same with a causal float attn_mask), gpt2_block
                       (and gpt2_block_opset14, exported at opset 14),
                       llama_layer (a LLaMA-style decoder layer, opset 14)
  testdata/bad/onnx/   one file per bad input of tests/cli/cases/import_errors.t,
                       most made by hand with onnx.helper

Models are small (small dims, or no weights) so they can be committed.
"""
import argparse
import io
import math
import os

import onnx
import torch
import torch.nn as nn
import torchvision
from onnx import TensorProto, helper

OPSET = 17


def export(model, args, path, names_in, names_out, params=True, dynamic_axes=None,
           opset=OPSET):
    model.eval()
    buf = io.BytesIO()
    torch.onnx.export(model, args, buf, opset_version=opset, export_params=params,
                      input_names=names_in, output_names=names_out,
                      dynamic_axes=dynamic_axes, do_constant_folding=True)
    m = onnx.load_from_string(buf.getvalue())
    # Deterministic bytes: no producer version drift between torch builds.
    m.producer_name = "pytorch"
    m.producer_version = torch.__version__.split("a")[0]
    onnx.save(m, path)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


class Mlp3(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 8)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class Gpt2Block(nn.Module):
    """A plain GPT-2 block: pre-LayerNorm causal self-attention and an MLP
    (its GELU exact, or with gelu="tanh" the tanh approximation GPT-2 uses)."""

    def __init__(self, d=32, heads=4, seq=8, gelu="none"):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.gelu = nn.GELU(approximate=gelu)
        self.out = nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq, dtype=torch.bool)))

    def forward(self, x):
        b, s, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, s, h, d // h).transpose(1, 2)
        k = k.view(b, s, h, d // h).transpose(1, 2)
        v = v.view(b, s, h, d // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // h)
        att = att.masked_fill(~self.mask[:s, :s], float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(y)
        return x + self.out(self.gelu(self.fc(self.ln2(x))))


class PaddedSelfAttention(nn.Module):
    """Self-attention as Hugging Face's BERT computes it, with a padding mask:
    separate q, k and v projections split into heads, the scores divided by
    sqrt(d), the extended mask (1 - mask[:, None, None, :]) * -10000 added,
    a softmax, then the output projection and the residual. The mask is a
    buffer (the last batch's last three tokens are padding), so the export folds the
    extended mask into a [b, 1, 1, t] constant."""

    def __init__(self, d=32, heads=4, batch=2, seq=8):
        super().__init__()
        self.heads = heads
        self.scale = math.sqrt(d // heads)
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.o = nn.Linear(d, d)
        mask = torch.ones(batch, seq)
        mask[-1, seq - 3:] = 0
        self.register_buffer("mask", mask)

    def forward(self, x):
        b, s, d = x.shape
        h = self.heads

        def split(t):
            return t.view(b, s, h, d // h).permute(0, 2, 1, 3)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / self.scale
        scores = scores + (1.0 - self.mask[:, None, None, :]) * -10000.0
        probs = torch.softmax(scores, dim=-1)
        y = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous().view(b, s, d)
        return self.o(y) + x


class PaddedBertLayer(nn.Module):
    """A whole Hugging Face BERT layer (post-LayerNorm) with a padding mask:
    PaddedSelfAttention, its output projection plus the residual and a
    LayerNorm, then the intermediate projection with the exact GELU written
    as Hugging Face writes it (x * 0.5 * (1 + erf(x / sqrt(2)))), the output
    projection plus the residual and a LayerNorm."""

    def __init__(self, d=32, heads=4, batch=2, seq=8):
        super().__init__()
        self.attention = PaddedSelfAttention(d, heads, batch, seq)
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.up = nn.Linear(d, 4 * d)
        self.down = nn.Linear(4 * d, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x):
        h = self.ln1(self.attention(x))
        u = self.up(h)
        u = u * 0.5 * (1.0 + torch.erf(u / math.sqrt(2.0)))
        return self.ln2(self.down(u) + h)


class SeqFirstAttention(nn.Module):
    """nn.MultiheadAttention's self-attention on sequence-first [s, b, d]
    tensors (batch_first=False, PyTorch's default): its export slices q, k and
    v out of the packed projection and reshapes and transposes each into
    [b*heads, s, d]."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.att = nn.MultiheadAttention(d, heads)

    def forward(self, x):
        return self.att(x, x, x, need_weights=False)[0]


class MaskedSeqFirstAttention(nn.Module):
    """SeqFirstAttention with a causal float mask (0 on and below the
    diagonal, -inf above) as attn_mask: the export adds it to the scores."""

    def __init__(self, d=32, heads=4, seq=6):
        super().__init__()
        self.att = nn.MultiheadAttention(d, heads)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def forward(self, x):
        return self.att(x, x, x, attn_mask=self.mask, need_weights=False)[0]


class PerHeadMaskedAttention(nn.Module):
    """SeqFirstAttention with a float attn_mask per batch and head
    ([batch * heads, seq, seq], random: each head biased its own way), which
    the export adds to the [batch * heads, seq, seq] scores as it is."""

    def __init__(self, d=32, heads=4, seq=6, batch=2):
        super().__init__()
        self.att = nn.MultiheadAttention(d, heads)
        g = torch.Generator().manual_seed(5)
        self.register_buffer("mask", torch.randn(batch * heads, seq, seq, generator=g))

    def forward(self, x):
        return self.att(x, x, x, attn_mask=self.mask, need_weights=False)[0]


class PerHeadMaskedBatchFirstAttention(nn.Module):
    """PerHeadMaskedAttention with batch_first=True: PyTorch transposes x to
    [seq, batch, d] around the same sequence-first attention, so the export
    is the same graph between two transposes ([batch, seq, d] in and out)."""

    def __init__(self, d=32, heads=4, seq=6, batch=2):
        super().__init__()
        self.att = nn.MultiheadAttention(d, heads, batch_first=True)
        g = torch.Generator().manual_seed(6)
        self.register_buffer("mask", torch.randn(batch * heads, seq, seq, generator=g))

    def forward(self, x):
        return self.att(x, x, x, attn_mask=self.mask, need_weights=False)[0]


class RMSNorm(nn.Module):
    """RMSNorm as LLaMA's code writes it (the rsqrt form), or with a division
    (`divided`): no nn.RMSNorm in PyTorch 1.13."""

    def __init__(self, d, eps=1e-6, divided=False):
        super().__init__()
        self.eps, self.divided = eps, divided
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(d))

    def forward(self, x):
        ms = x.pow(2).mean(-1, keepdim=True)
        if self.divided:
            return x / torch.sqrt(ms + self.eps) * self.weight
        return self.weight * (x * torch.rsqrt(ms + self.eps))


class RmsNormMlp(nn.Module):
    """A LLaMA-style pre-norm SwiGLU MLP block, x + down(silu(gate(h)) *
    up(h)) with h = rmsnorm(x), then a final RMSNorm written with a
    division."""

    def __init__(self, d=32, hidden=64):
        super().__init__()
        self.norm = RMSNorm(d)
        self.gate = nn.Linear(d, hidden)
        self.up = nn.Linear(d, hidden)
        self.down = nn.Linear(hidden, d)
        self.final = RMSNorm(d, eps=1e-5, divided=True)

    def forward(self, x):
        h = self.norm(x)
        return self.final(x + self.down(nn.functional.silu(self.gate(h)) * self.up(h)))


def rotate_half(x):
    """GPT-NeoX's and LLaMA's rotate_half: [-x2, x1] of the last dim's halves."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x, groups):
    """Hugging Face's repeat_kv: [b, kv, s, d] to [b, kv * groups, s, d], each
    K or V head repeated for its group of query heads (an expand, then a
    reshape)."""
    if groups == 1:
        return x
    b, kv, s, d = x.shape
    return x[:, :, None, :, :].expand(b, kv, groups, s, d).reshape(b, kv * groups, s, d)


class LlamaLayer(nn.Module):
    """A LLaMA-style decoder layer as Hugging Face's code writes it: RMSNorm,
    bias-free q, k and v projections split into heads, the rotary embedding
    (rotate-half form, cos and sin tables for positions 0 to seq - 1) on q
    and k, causal attention with the mask added after the scaling, the
    out-projection and a residual; then RMSNorm, the SwiGLU MLP and a
    residual. With kv_heads below heads, grouped-query attention (LLaMA 2
    70B's, Mistral's): k and v have kv_heads heads, repeated for the
    attention."""

    def __init__(self, d=32, heads=4, hidden=64, seq=8, kv_heads=None):
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.kv_heads = kv_heads or heads
        self.norm1, self.norm2 = RMSNorm(d), RMSNorm(d)
        kv = self.kv_heads * self.dh
        self.q, self.k, self.v, self.o = (nn.Linear(d, n, bias=False) for n in (d, kv, kv, d))
        self.gate = nn.Linear(d, hidden, bias=False)
        self.up = nn.Linear(d, hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.dh, 2).float() / self.dh))
        freqs = torch.outer(torch.arange(seq).float(), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos()[None, None])
        self.register_buffer("sin", emb.sin()[None, None])
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), -1e9), 1)[None, None])

    def forward(self, x):
        b, s, d = x.shape
        h = self.norm1(x)
        q = self.q(h).view(b, s, self.heads, self.dh).transpose(1, 2)
        k, v = (p(h).view(b, s, self.kv_heads, self.dh).transpose(1, 2) for p in (self.k, self.v))
        q = q * self.cos + rotate_half(q) * self.sin
        k = k * self.cos + rotate_half(k) * self.sin
        k, v = (repeat_kv(t, self.heads // self.kv_heads) for t in (k, v))
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.dh) + self.mask
        a = torch.matmul(nn.functional.softmax(w, dim=-1), v)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, d))
        h = self.norm2(x)
        return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))


class CausalEncoderLayer(nn.Module):
    """nn.TransformerEncoderLayer (batch_first) with a causal float src_mask:
    a decoder-only transformer written with PyTorch's encoder layers."""

    def __init__(self, d=32, heads=4, seq=8):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model=d, nhead=heads, dim_feedforward=2 * d,
                                                dropout=0.0, batch_first=True)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def forward(self, x):
        return self.layer(x, src_mask=self.mask)


def good_models(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    export(Mlp3(), torch.randn(4, 16), f"{out}/mlp3.onnx", ["x"], ["y"])
    torch.manual_seed(0)
    export(Mlp3(), torch.randn(4, 16), f"{out}/mlp3_dynamic.onnx", ["x"], ["y"],
           dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    torch.manual_seed(0)
    image = torch.randn(1, 3, 64, 64)
    export(torchvision.models.resnet18(), image, f"{out}/resnet18.onnx", ["image"], ["logits"],
           params=False)
    torch.manual_seed(0)
    export(torchvision.models.resnet50(), image, f"{out}/resnet50.onnx", ["image"], ["logits"],
           params=False)
    torch.manual_seed(0)
    export(torchvision.models.mobilenet_v2(), image, f"{out}/mobilenet_v2.onnx", ["image"],
           ["logits"], params=False)
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0,
                                       batch_first=True)
    export(layer, torch.randn(2, 8, 64), f"{out}/bert_layer.onnx", ["x"], ["y"])
    export(layer, torch.randn(2, 8, 64), f"{out}/bert_layer_dynamic.onnx", ["x"], ["y"],
           dynamic_axes={"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}})
    torch.manual_seed(0)
    export(SeqFirstAttention(), torch.randn(6, 2, 32), f"{out}/mha_seq_first.onnx", ["x"], ["y"])
    torch.manual_seed(0)
    export(MaskedSeqFirstAttention(), torch.randn(6, 2, 32), f"{out}/mha_masked.onnx", ["x"],
           ["y"])
    torch.manual_seed(0)
    export(Gpt2Block(), torch.randn(2, 8, 32), f"{out}/gpt2_block.onnx", ["x"], ["y"])
    # Hugging Face's BERT layer with a padding mask added to the scores.
    torch.manual_seed(0)
    export(PaddedBertLayer(), torch.randn(2, 8, 32), f"{out}/bert_padded_layer.onnx", ["x"], ["y"])
    # The same block at torch 1.13's default opset, 14: LayerNorm comes out as
    # its nine-operation chain (the layernorm_decomposed rewrite's pattern).
    torch.manual_seed(0)
    export(Gpt2Block(), torch.randn(2, 8, 32), f"{out}/gpt2_block_opset14.onnx", ["x"], ["y"],
           opset=14)
    # A LLaMA-style decoder layer (RMSNorm, rotary embedding, causal attention,
    # SwiGLU MLP) at opset 14, as torch 1.13 exports it by default.
    torch.manual_seed(0)
    export(LlamaLayer(), torch.randn(2, 8, 32), f"{out}/llama_layer.onnx", ["x"], ["y"], opset=14)


def save(model, path):
    onnx.save(model, path)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def tiny(nodes, inputs, outputs, inits=(), name="tiny"):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    model = helper.make_model(graph, producer_name="make_onnx_models",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model


def bad_models(out):
    os.makedirs(out, exist_ok=True)
    f32 = TensorProto.FLOAT
    x = helper.make_tensor_value_info("x", f32, [2, 4])
    y = helper.make_tensor_value_info("y", f32, [2, 4])
    relu = tiny([helper.make_node("Relu", ["x"], ["y"], name="act")], [x], [y], name="relu")
    save(relu, f"{out}/../../onnx/relu.onnx")  # valid: testdata/onnx
    data = relu.SerializeToString()
    with open(f"{out}/truncated.onnx", "wb") as f:
        f.write(data[: len(data) // 2])
    print(f"wrote {out}/truncated.onnx ({len(data) // 2} bytes)")
    with open(f"{out}/not_onnx.onnx", "wb") as f:
        f.write(b"this is not a protobuf\n")
    print(f"wrote {out}/not_onnx.onnx")
    # An operator tapestry has no mapping for.
    a = helper.make_tensor_value_info("a", f32, [2, 3])
    b = helper.make_tensor_value_info("b", f32, [3, 4])
    c = helper.make_tensor_value_info("c", f32, [2, 4])
    save(tiny([helper.make_node("Einsum", ["a", "b"], ["c"], name="contract", equation="ij,jk->ik")],
              [a, b], [c], name="einsum"), f"{out}/unsupported_op.onnx")
    # A graph input without a shape.
    noshape = helper.make_tensor_value_info("x", f32, None)
    save(tiny([helper.make_node("Relu", ["x"], ["y"], name="act")], [noshape],
              [helper.make_tensor_value_info("y", f32, None)], name="noshape"),
         f"{out}/missing_shape.onnx")
    # A symbolic batch dim, to be bound with --dim batch=N.
    xb = helper.make_tensor_value_info("x", f32, ["batch", 4])
    yb = helper.make_tensor_value_info("y", f32, ["batch", 4])
    save(tiny([helper.make_node("Relu", ["x"], ["y"], name="act")], [xb], [yb], name="dynamic"),
         f"{out}/dynamic_batch.onnx")
    # No nodes at all.
    save(tiny([], [x], [x], name="empty"), f"{out}/empty_graph.onnx")
    # An opset newer than the ONNX library knows.
    future = tiny([helper.make_node("Relu", ["x"], ["y"], name="act")], [x], [y], name="future")
    future.opset_import[0].version = 99
    save(future, f"{out}/future_opset.onnx")
    # An average pool with asymmetric padding that its divisor does not count
    # (a convolution's or a max pool's is padded onto the input first).
    img = helper.make_tensor_value_info("img", f32, [1, 2, 5, 5])
    res = helper.make_tensor_value_info("res", f32, [1, 2, 4, 4])
    save(tiny([helper.make_node("AveragePool", ["img"], ["res"], name="avg", kernel_shape=[3, 3],
                                pads=[1, 1, 0, 0])],
              [img], [res], name="asym"), f"{out}/asymmetric_pads.onnx")


def fuzz_findings(out):
    """Small reproductions of what mutated models found (docs/reliability.md)."""
    f32 = TensorProto.FLOAT
    img = helper.make_tensor_value_info("img", f32, [1, 2, 5, 5])
    w = helper.make_tensor_value_info("w", f32, [2, 1, 3, 3])
    res = helper.make_tensor_value_info("res", f32, None)
    # libonnx 1.12's shape inference divides by the stride: SIGFPE.
    save(tiny([helper.make_node("Conv", ["img", "w"], ["res"], name="conv", strides=[1, 0],
                                group=2)], [img, w], [res], name="stride0"),
         f"{out}/fuzz_conv_stride0.onnx")
    # A Relu without inputs: mapping read input 0 (protobuf CHECK failure, abort).
    x = helper.make_tensor_value_info("x", f32, [2, 4])
    y = helper.make_tensor_value_info("y", f32, [2, 4])
    save(tiny([helper.make_node("Relu", [], ["y"], name="act")], [x], [y], name="noinputs"),
         f"{out}/fuzz_no_inputs.onnx")
    # A tensor name with a byte that is not printable ASCII (not UTF-8 either).
    # (a placeholder of the same length is replaced in the bytes: python's
    # protobuf takes only UTF-8 strings)
    y2 = helper.make_tensor_value_info("y~", f32, [2, 4])
    model = tiny([helper.make_node("Relu", ["x"], ["y~"], name="act")], [x], [y2], name="badname")
    data = model.SerializeToString().replace(b"y~", b"y\xff")
    with open(f"{out}/fuzz_name_byte.onnx", "wb") as f:
        f.write(data)
    print(f"wrote {out}/fuzz_name_byte.onnx")


def fuzz_seeds(out):
    """Seeds of the onnx fuzz target for operators whose import computes at
    import time (testdata/fuzz/onnx): Resize in each mode, transposed
    convolutions of both paths, batch norms folded into convolutions, grouped
    convolutions, so that mutations reach their arithmetic."""
    os.makedirs(out, exist_ok=True)
    f32 = TensorProto.FLOAT
    img = helper.make_tensor_value_info("img", f32, [1, 2, 5, 4])
    scales = helper.make_tensor("scales", f32, [4], [1, 1, 2, 1.5])
    sizes = helper.make_tensor("sizes", TensorProto.INT64, [4], [1, 2, 3, 7])
    roi = helper.make_tensor("roi", f32, [8], [0, 0, 0.2, 0.1, 1, 1, 0.9, 0.8])
    outs = [helper.make_tensor_value_info(n, f32, None) for n in ("near", "lin", "cub", "crop")]
    nodes = [
        helper.make_node("Resize", ["img", "", "scales"], ["near"], name="near",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
        helper.make_node("Resize", ["img", "", "", "sizes"], ["lin"], name="lin", mode="linear",
                         coordinate_transformation_mode="align_corners"),
        helper.make_node("Resize", ["img", "", "scales"], ["cub"], name="cub", mode="cubic",
                         exclude_outside=1, cubic_coeff_a=-0.5),
        helper.make_node("Resize", ["img", "roi", "", "sizes"], ["crop"], name="crop",
                         mode="linear", coordinate_transformation_mode="tf_crop_and_resize",
                         extrapolation_value=2.0),
    ]
    save(tiny(nodes, [img], outs, name="resize_modes", inits=[scales, sizes, roi]),
         f"{out}/resize_modes.onnx")
    x = helper.make_tensor_value_info("x", f32, [1, 2, 3, 4])
    w = helper.make_tensor("w", f32, [2, 3, 3, 3], [0.1 * i for i in range(54)])
    t = helper.make_tensor("t", f32, [2, 3, 2, 2], [0.1 * i for i in range(24)])
    b = helper.make_tensor("b", f32, [3], [0.5, -0.5, 1.0])
    outs = [helper.make_tensor_value_info(n, f32, None) for n in ("spread", "tiled", "shaped")]
    nodes = [
        helper.make_node("ConvTranspose", ["x", "w", "b"], ["spread"], name="spread",
                         strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
        helper.make_node("ConvTranspose", ["x", "t", "b"], ["tiled"], name="tiled",
                         strides=[2, 2]),
        helper.make_node("ConvTranspose", ["x", "w"], ["shaped"], name="shaped", strides=[3, 2],
                         output_shape=[10, 9], auto_pad="SAME_UPPER"),
    ]
    save(tiny(nodes, [x], outs, name="conv_transpose", inits=[w, t, b]),
         f"{out}/conv_transpose.onnx")
    # Batch norms that import folds into the convolution before them: a Conv
    # with a bias, a depthwise ConvTranspose without one.
    x = helper.make_tensor_value_info("x", f32, [1, 2, 4, 4])
    w = helper.make_tensor("w", f32, [2, 2, 3, 3], [0.1 * i - 1 for i in range(36)])
    d = helper.make_tensor("d", f32, [2, 1, 2, 2], [0.5 * i for i in range(8)])
    params = [helper.make_tensor(n, f32, [2], v) for n, v in
              (("b", [0.5, -0.5]), ("scale", [2, 0.5]), ("shift", [1, -1]), ("mean", [0.25, 1]),
               ("var", [3, 0.5]))]
    outs = [helper.make_tensor_value_info(n, f32, None) for n in ("conv_bn", "up_bn")]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["conv"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["conv", "scale", "shift", "mean", "var"],
                         ["conv_bn"], name="conv_bn", epsilon=0.5),
        helper.make_node("ConvTranspose", ["x", "d"], ["up"], name="up", group=2, strides=[2, 2]),
        helper.make_node("BatchNormalization", ["up", "scale", "shift", "mean", "var"],
                         ["up_bn"], name="up_bn"),
    ]
    save(tiny(nodes, [x], outs, name="conv_batchnorm", inits=[w, d] + params),
         f"{out}/conv_batchnorm.onnx")
    # Batch norms after products: a Gemm (transB 1, a bias, beta 2) and a
    # MatMul of rank 2, each folded into its product's weight and a bias.
    x = helper.make_tensor_value_info("x", f32, [3, 2])
    w = helper.make_tensor("w", f32, [2, 2], [1, -2, 0.5, 3])
    outs = [helper.make_tensor_value_info(n, f32, None) for n in ("fc_bn", "mm_bn")]
    nodes = [
        helper.make_node("Gemm", ["x", "w", "b"], ["fc"], name="fc", transB=1, beta=2.0),
        helper.make_node("BatchNormalization", ["fc", "scale", "shift", "mean", "var"],
                         ["fc_bn"], name="fc_bn"),
        helper.make_node("MatMul", ["x", "w"], ["mm"], name="mm"),
        helper.make_node("BatchNormalization", ["mm", "scale", "shift", "mean", "var"],
                         ["mm_bn"], name="mm_bn", epsilon=0.25),
    ]
    save(tiny(nodes, [x], outs, name="product_batchnorm", inits=[w] + params),
         f"{out}/product_batchnorm.onnx")
    # Slices with steps above 1 (a window, zeros past the end), a constant
    # mask made by ScatterND, Mod and Transpose and added, and a Dropout of
    # ratio 0 in training mode whose mask nothing reads.
    x = helper.make_tensor_value_info("x", f32, [2, 10, 7])
    i64 = TensorProto.INT64
    consts = [
        helper.make_tensor("st", i64, [2], [1, 0]), helper.make_tensor("en", i64, [2], [10, 7]),
        helper.make_tensor("ax", i64, [2], [1, 2]), helper.make_tensor("sp", i64, [2], [3, 2]),
        helper.make_tensor("zero", f32, [4, 3], [0.0] * 12),
        helper.make_tensor("rows", i64, [2, 1], [0, -1]),
        helper.make_tensor("up", f32, [2, 3], [1, 2, 3, 4, 5, 6]),
        helper.make_tensor("seven", i64, [2], [7, -7]), helper.make_tensor("three", i64, [1], [3]),
        helper.make_tensor("ratio", f32, [], [0.0]),
        helper.make_tensor("train", TensorProto.BOOL, [], [True]),
    ]
    nodes = [
        helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["s"], name="s"),
        helper.make_node("ScatterND", ["zero", "rows", "up"], ["mask"], name="mask"),
        helper.make_node("Transpose", ["mask"], ["maskT"], name="maskT", perm=[1, 0]),
        helper.make_node("Mod", ["seven", "three"], ["m"], name="m"),
        helper.make_node("Add", ["s", "maskT"], ["masked"], name="masked"),
        helper.make_node("Dropout", ["masked", "ratio", "train"], ["y", "unused_mask"],
                         name="drop"),
    ]
    outs = [helper.make_tensor_value_info(n, f32, None) for n in ("y",)]
    outs.append(helper.make_tensor_value_info("m", i64, None))
    save(tiny(nodes, [x], outs, name="strided_mask", inits=consts), f"{out}/strided_mask.onnx")
    # Grouped convolutions: a Conv of 2 groups with a batch norm folded into
    # it and a ReLU, a ConvTranspose of 2 groups (its weight flipped per
    # group at import).
    x = helper.make_tensor_value_info("x", f32, [1, 4, 5, 5])
    w = helper.make_tensor("w", f32, [6, 2, 3, 3], [0.05 * i - 1 for i in range(108)])
    t = helper.make_tensor("t", f32, [6, 2, 2, 2], [0.1 * i - 2 for i in range(48)])
    params = [helper.make_tensor(n, f32, [6], v) for n, v in
              (("scale", [2, 0.5, 1, 1, 3, -1]), ("shift", [1, -1, 0, 2, 0, 0]),
               ("mean", [0.25, 1, 0, 0, -1, 2]), ("var", [3, 0.5, 1, 2, 1, 1]))]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="c", group=2, pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "scale", "shift", "mean", "var"], ["n"],
                         name="n"),
        helper.make_node("Relu", ["n"], ["r"], name="r"),
        helper.make_node("ConvTranspose", ["r", "t"], ["y"], name="up", group=2, strides=[2, 2]),
    ]
    outs = [helper.make_tensor_value_info("y", f32, None)]
    save(tiny(nodes, [x], outs, name="grouped_convs", inits=[w, t] + params),
         f"{out}/grouped_convs.onnx")


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(root, "testdata"))
    ap.add_argument("--only", choices=["all", "fuzz-seeds"], default="all",
                    help="fuzz-seeds: only testdata/fuzz/onnx (no torch needed)")
    args = ap.parse_args()
    fuzz_seeds(os.path.join(args.out, "fuzz", "onnx"))
    if args.only == "fuzz-seeds":
        return
    good_models(os.path.join(args.out, "onnx"))
    bad_models(os.path.join(args.out, "bad", "onnx"))
    fuzz_findings(os.path.join(args.out, "bad", "onnx"))


if __name__ == "__main__":
    main()
