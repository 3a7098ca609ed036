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


class CeilPools(nn.Module):
    """Pools whose output size rounds up (ceil_mode): a max pool and an average
    pool that each gain a window reaching past the input, then a padded max
    pool whose rounded-up last window would start in its end padding, which
    PyTorch drops (20 x 20 -> 18 -> 9 -> 5 -> 3)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.max = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.avg = nn.AvgPool2d(2, 2, ceil_mode=True)
        self.edge = nn.MaxPool2d(2, 2, padding=1, ceil_mode=True)

    def forward(self, x):
        return self.edge(self.avg(self.max(torch.relu(self.conv(x)))))


class Conv1dNet(nn.Module):
    """A 1-D CNN over [N, C, L] sequences (audio, text): strided and dilated
    Conv1d, BatchNorm1d, a max pool that rounds up and an average pool, then a
    linear head. Imported as 2-D operations of height 1."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(4, 8, 5, stride=2, padding=2)
        self.bn = nn.BatchNorm1d(8)
        self.conv2 = nn.Conv1d(8, 8, 3, padding=2, dilation=2)
        self.max = nn.MaxPool1d(3, 2, ceil_mode=True)
        self.avg = nn.AvgPool1d(2)
        self.fc = nn.Linear(8 * 4, 5)

    def forward(self, x):
        h = torch.relu(self.bn(self.conv1(x)))
        h = self.avg(self.max(torch.relu(self.conv2(h))))
        return self.fc(torch.flatten(h, 1))


class UpsampleNet(nn.Module):
    """A small segmentation decoder (U-Net / FPN style): features downsampled
    twice, brought back by nearest x2 (added to a skip), bilinear x2 without
    and with align_corners, then bilinear to an odd size and a nearest
    downsample: every one an ONNX Resize."""

    def __init__(self):
        super().__init__()
        self.down1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.down2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.head = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        f = nn.functional
        a = torch.relu(self.down1(x))
        b = torch.relu(self.down2(a))
        u = f.interpolate(b, scale_factor=2.0, mode="nearest") + a
        u = f.interpolate(u, scale_factor=2.0, mode="bilinear", align_corners=False)
        u = f.interpolate(self.head(u), scale_factor=2.0, mode="bilinear", align_corners=True)
        u = f.interpolate(u, size=(45, 37), mode="bilinear", align_corners=False)
        return f.interpolate(u, size=(15, 20), mode="nearest")


class ConvTransposeNet(nn.Module):
    """A decoder of transposed convolutions (DCGAN's and U-Net's upsampling):
    stride 2 with padding (DCGAN's kernel 4: stride phases of 2 x 2 taps), a
    depthwise one with output_padding (the input spread out), a dilated one of
    stride 1 with a bias, kernel 3 of stride 2 with output_padding (phases of
    2 x 2 and fewer taps), U-Net's kernel 2 of stride 2 (one tap per phase: a
    1 x 1 convolution), and a 1-D one of stride 3 over the flattened rows."""

    def __init__(self):
        super().__init__()
        self.up1 = nn.ConvTranspose2d(8, 6, 4, stride=2, padding=1)
        self.up2 = nn.ConvTranspose2d(6, 6, 3, stride=2, padding=1, output_padding=1, groups=6)
        self.mix = nn.ConvTranspose2d(6, 4, 3, stride=1, padding=2, dilation=2)
        self.odd = nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1, output_padding=1)
        self.tile = nn.ConvTranspose2d(4, 4, 2, stride=2)
        self.line = nn.ConvTranspose1d(4, 2, 5, stride=3, padding=1, bias=False)

    def forward(self, x):
        h = torch.relu(self.up1(x))
        h = torch.relu(self.up2(h))
        h = self.tile(self.odd(torch.relu(self.mix(h))))
        return self.line(torch.flatten(h, 2))


class GroupedConvNet(nn.Module):
    """Grouped convolutions that are neither one group nor depthwise (ResNeXt's
    and RegNet's): 4 groups of 2 input and 3 output channels with a batch norm
    (folded) and ReLU, 3 groups at stride 2 with dilation and no bias, a
    channel multiplier (groups == C, 2 outputs each), a transposed one of 2
    groups at stride 2 (its weight flipped per group), and a 1-D one."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 12, 3, padding=1, groups=4)
        self.bn = _random_stats(nn.BatchNorm2d(12))
        self.down = nn.Conv2d(12, 6, 3, stride=2, padding=2, dilation=2, groups=3, bias=False)
        self.mult = nn.Conv2d(6, 12, 3, padding=1, groups=6)
        self.up = nn.ConvTranspose2d(12, 8, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.line = nn.Conv1d(8, 4, 3, padding=1, groups=2)

    def forward(self, x):
        h = torch.relu(self.bn(self.conv(x)))
        h = self.up(torch.relu(self.mult(self.down(h))))
        return self.line(torch.flatten(h, 2))


class SwishConvNet(nn.Module):
    """Convolutions followed by SiLU and HardSwish (EfficientNet's and
    MobileNetV3's activations), which the rewrites fuse into conv2d_act and
    conv2d_grouped_act: a dense convolution with a batch norm (folded) and
    SiLU, a depthwise one with HardSwish, 2 groups at stride 2 with SiLU, and
    4 groups with HardSwish after a batch norm."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(4, 8, 3, padding=1, bias=False)
        self.stem_bn = _random_stats(nn.BatchNorm2d(8))
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.down = nn.Conv2d(8, 12, 3, stride=2, padding=1, groups=2)
        self.mix = nn.Conv2d(12, 8, 1, groups=4, bias=False)
        self.mix_bn = _random_stats(nn.BatchNorm2d(8))

    def forward(self, x):
        h = nn.functional.silu(self.stem_bn(self.stem(x)))
        h = nn.functional.hardswish(self.depthwise(h))
        h = nn.functional.silu(self.down(h))
        return nn.functional.hardswish(self.mix_bn(self.mix(h)))


def _random_stats(bn):
    """A batch norm with its running statistics and affine parameters drawn at
    random, so that folding it is no identity."""
    with torch.no_grad():
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.5, 0.5)
    return bn


class DcganGenerator(nn.Module):
    """DCGAN's generator, small: transposed convolutions of kernel 4 (stride
    1, then 2 with padding 1: stride phases), each but the last followed by a
    BatchNorm2d, which PyTorch's export leaves apart from a ConvTranspose and
    import folds into its weight and bias; a ReLU after each, a tanh last.
    The batch norms' statistics and affine parameters are drawn at random, so
    that folding them is no identity."""

    def __init__(self):
        super().__init__()
        layers = []
        for i, o, s, p in [(16, 32, 1, 0), (32, 16, 2, 1)]:
            bn = _random_stats(nn.BatchNorm2d(o))
            layers += [nn.ConvTranspose2d(i, o, 4, s, p, bias=False), bn, nn.ReLU()]
        self.body = nn.Sequential(*layers, nn.ConvTranspose2d(16, 3, 4, 2, 1), nn.Tanh())

    def forward(self, x):
        return self.body(x)


class MlpBatchNorm(nn.Module):
    """An MLP with BatchNorm1d after each linear layer (as tabular and
    recommendation models have): the first layer's Gemm (with a bias) and the
    second's MatMul (without one) each fold their batch norm at import. The
    statistics and affine parameters are drawn at random."""

    def __init__(self):
        super().__init__()
        layers = []
        for i, o, bias in [(16, 32, True), (32, 8, False)]:
            bn = _random_stats(nn.BatchNorm1d(o))
            layers += [nn.Linear(i, o, bias=bias), bn, nn.ReLU()]
        self.body = nn.Sequential(*layers[:-1])

    def forward(self, x):
        return self.body(x)


class StridedSlices(nn.Module):
    """Slices with steps above 1 (import makes them windows reshaped to [m,
    step] and one column picked): 1::3 of 10 rows (a window from 1), ::2 of 7
    columns (zeros appended past the end), and 2:7:2 after a step-1 cut."""

    def forward(self, x):
        a = x[:, :, 1::3, ::2]
        b = x[:, 1:, 2:7:2, 1:5]
        return torch.cat([a.flatten(1), b.flatten(1)], dim=1)


def _swin_small():
    """torchvision's Swin Transformer, small: 36 x 36 images in patches of 4
    (9 x 9, padded to windows of 4: pads computed with Mod), shifted windows
    with the attention mask built by ScatterND on constants, patch merging of
    an odd size (padded, then sliced 0::2 and 1::2), a second stage whose
    window covers it (no shift)."""
    from torchvision.models.swin_transformer import SwinTransformer
    return SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4],
                           window_size=[4, 4], stochastic_depth_prob=0.0, num_classes=10)


class SegmentationOut(nn.Module):
    """A torchvision segmentation model's "out" map (the models return a dict)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def _lraspp():
    return SegmentationOut(torchvision.models.segmentation.lraspp_mobilenet_v3_large(
        weights=None, weights_backbone=None))


# Images are batch 2 at 32 x 32: small enough for CI, and a batch that a
# data-parallel plan can split.
CASES = [
    Case("mlp3", Mlp3, (4, 16), "x", "y"),
    Case("resnet18", torchvision.models.resnet18, (2, 3, 32, 32), "image", "logits"),
    Case("resnet50", torchvision.models.resnet50, (2, 3, 32, 32), "image", "logits"),
    Case("mobilenet_v2", torchvision.models.mobilenet_v2, (2, 3, 32, 32), "image", "logits"),
    # Max pools with ceil_mode (as GoogLeNet's too): at 37 x 37 all three round up.
    Case("squeezenet1_0", torchvision.models.squeezenet1_0, (2, 3, 37, 37), "image", "logits"),
    Case("ceil_pools", CeilPools, (2, 3, 20, 20), "x", "y"),
    Case("conv1d_net", Conv1dNet, (2, 4, 36), "x", "y"),
    Case("upsample_net", UpsampleNet, (2, 3, 24, 20), "x", "y"),
    Case("conv_transpose_net", ConvTransposeNet, (2, 8, 5, 4), "x", "y"),
    Case("dcgan_generator", DcganGenerator, (2, 16, 1, 1), "z", "image"),
    Case("mlp_batchnorm", MlpBatchNorm, (4, 16), "x", "y"),
    Case("strided_slices", StridedSlices, (2, 3, 10, 7), "x", "y"),
    Case("swin_small", _swin_small, (2, 3, 36, 36), "image", "logits"),
    Case("grouped_convs", GroupedConvNet, (2, 8, 10, 9), "x", "y"),
    Case("regnet_x_400mf", torchvision.models.regnet_x_400mf, (2, 3, 32, 32), "image", "logits"),
    Case("swish_convs", SwishConvNet, (2, 4, 10, 9), "x", "y"),
    Case("efficientnet_b0", torchvision.models.efficientnet_b0, (2, 3, 32, 32), "image", "logits"),
    # torchvision's LR-ASPP (MobileNetV3: hardswish, squeeze-excitation, and
    # bilinear upsampling of its two branches back to the image size).
    Case("lraspp_mobilenet_v3", _lraspp, (2, 3, 64, 64), "image", "out"),
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
