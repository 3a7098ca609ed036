"""The models that `tapestry import` is checked on against PyTorch (tests/torch,
bench/torch_cpu.py): the architectures of scripts/make_onnx_models.py, built
with weights, each with its input and the names the ONNX export gives them.

Needs torch 1.13 and torchvision 0.14 (Debian's /usr/bin/python3 has them).
"""
import io
import os
import sys

import torch
import torch.nn as nn
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from make_onnx_models import (  # noqa: E402
    OPSET, CausalEncoderLayer, Gpt2Block, MaskedSeqFirstAttention, Mlp3, PaddedBertLayer,
    LlamaLayer, PaddedSelfAttention, PerHeadMaskedAttention, PerHeadMaskedBatchFirstAttention,
    RmsNormMlp, SeqFirstAttention)


class Case:
    def __init__(self, name, build, shape, input_name, output_name, opset=OPSET):
        self.name = name
        self.opset = opset
        self.build = build  # () -> nn.Module, seeded, in eval mode
        self.shape = shape
        self.input_name = input_name
        self.output_name = output_name

    def model(self):
        torch.manual_seed(0)
        return self.build().eval()

    def input(self):
        gen = torch.Generator().manual_seed(1)
        return torch.randn(*self.shape, generator=gen)

    def export(self, model, path):
        """The ONNX file of `model` with its weights (opset 17 unless the case
        says, folded constants)."""
        buf = io.BytesIO()
        torch.onnx.export(model, self.input(), buf, opset_version=self.opset, export_params=True,
                          input_names=[self.input_name], output_names=[self.output_name],
                          do_constant_folding=True)
        with open(path, "wb") as f:
            f.write(buf.getvalue())


def _encoder_layer():
    return nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0,
                                      batch_first=True)


# Images are batch 2 at 32 x 32: small enough for CI, and a batch that a
# data-parallel plan can split.
CASES = [
    Case("mlp3", Mlp3, (4, 16), "x", "y"),
    Case("resnet18", torchvision.models.resnet18, (2, 3, 32, 32), "image", "logits"),
    Case("resnet50", torchvision.models.resnet50, (2, 3, 32, 32), "image", "logits"),
    Case("mobilenet_v2", torchvision.models.mobilenet_v2, (2, 3, 32, 32), "image", "logits"),
    Case("bert_layer", _encoder_layer, (2, 8, 64), "x", "y"),
    Case("mha_seq_first", SeqFirstAttention, (6, 2, 32), "x", "y"),
    # Float attention masks added to the scores: the biased attention kernels.
    Case("mha_masked", MaskedSeqFirstAttention, (6, 2, 32), "x", "y"),
    Case("causal_encoder", CausalEncoderLayer, (2, 8, 32), "x", "y"),
    # One mask per batch and head ([b * heads, s, t]), added as it is.
    Case("mha_masked_per_head", PerHeadMaskedAttention, (6, 2, 32), "x", "y"),
    Case("mha_masked_per_head_batch_first", PerHeadMaskedBatchFirstAttention, (2, 6, 32), "x", "y"),
    # Hugging Face's BERT self-attention with a padding mask [b, 1, 1, t]
    # added to the scores: attention_scaled_biased, a broadcast bias.
    Case("bert_padded_attention", PaddedSelfAttention, (2, 8, 32), "x", "y"),
    # The whole post-LayerNorm layer around it, GELU written as HF writes it.
    Case("bert_padded_layer", PaddedBertLayer, (2, 8, 32), "x", "y"),
    # LLaMA-style RMSNorm (rsqrt and division forms) around a SiLU MLP:
    # rmsnorm_decomposed and rmsnorm_divided.
    Case("rmsnorm_mlp", RmsNormMlp, (2, 8, 32), "x", "y"),
    # A LLaMA-style decoder layer at torch 1.13's default opset 14: RMSNorm,
    # the rotary embedding (rope_rotate_half), attention whose K transpose
    # folds into the product (transpose_k) and the SwiGLU MLP.
    Case("llama_layer", LlamaLayer, (2, 8, 32), "x", "y", opset=14),
    # The same with grouped-query attention (2 K and V heads for 4 query
    # heads): attention_grouped_kv reads k and v unrepeated.
    Case("llama_gqa_layer", lambda: LlamaLayer(kv_heads=2), (2, 8, 32), "x", "y", opset=14),
    Case("gpt2_block", Gpt2Block, (2, 8, 32), "x", "y"),
    # GELU's tanh approximation (GPT-2's own): nine operations, which the
    # gelu_tanh rewrite turns into one gelu_tanh.
    Case("gpt2_block_tanh", lambda: Gpt2Block(gelu="tanh"), (2, 8, 32), "x", "y"),
    # At opset 14 LayerNorm is exported as its nine-operation chain, which the
    # layernorm_decomposed rewrite turns back into one layernorm.
    Case("gpt2_block_opset14", Gpt2Block, (2, 8, 32), "x", "y", opset=14),
]


def npy_name(tensor):
    """A tensor's .npy file name: its name percent-encoded (docs/reference/formats.md)."""
    safe = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
    return "".join(chr(b) if b in safe else "%%%02X" % b for b in tensor.encode()) + ".npy"
