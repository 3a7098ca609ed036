// conv2d and conv2d_act shards of few output pixels against many constant
// weights (a CNN's last layers at batch 1 and a small image: ResNet-50's
// layer4 at 64 x 64 has 2 x 2 pixels against 9.4 MB of weights per 3 x 3
// convolution) as panel products: the shard's input windows gathered into
// rows of x ([P, KH * KW * C], at most kMaxPanelRows pixels), the weights
// packed once into panels of 16 output channels (VectorKernels::panelProduct),
// two panels streamed from memory at a time on the OpenMP team, each thread
// over its share of the panel pairs. Such a shard reads each weight once for
// at most 8 multiply-adds, so its time is reading the weights: oneDNN's
// brgconv read them at 14-16 GB/s on two cores, the panels at 21 (a
// standalone test on ResNet-50's layer4 shapes, their weights from memory,
// Intel Xeon with AVX-512, 2026-12-02; docs/cpu-convolutions.md). The
// registry uses them where the CPU has AVX-512 (measured there); elsewhere
// oneDNN runs these shards (ConvLayout::Panels asks for them on any CPU).
#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/conv.hpp"
#include "backends/cpu/conv_epilogue.hpp"
#include "backends/cpu/conv_shard.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/team.hpp"
#include "backends/cpu/vector_math.hpp"

namespace tapestry::backend::cpu {

namespace {

// The fewest weight bytes a shard runs as panel products from: below it the
// weights stay in cache and oneDNN's blocked kernels are as fast.
constexpr double kPanelWeightBytes = 1 << 20;

class PanelConv final : public PreparedConv {
public:
  explicit PanelConv(const KernelCall& call);

  std::string implementation() const override { return "panel products"; }
  void run(const KernelCall& call) override;

private:
  // The shard's windows into col_: a row of K_ per pixel, (kh, kw, c) order.
  void gather(const float* in);
  // Packs the weight view's block into panels_ (K_ x O, the panels' order).
  void pack(const float* w);

  Box b_{};
  std::int64_t P_ = 0, K_ = 0, rowFloats_ = 0;
  // Per pixel and tap (kh, kw): the input element of channel c0, or -1
  // (padding); the input's channel stride.
  std::vector<std::int64_t> taps_;
  std::int64_t channelStride_ = 0;
  std::int64_t weightAt_ = 0;
  std::vector<std::int64_t> weightStrides_;
  std::vector<float> col_, panels_, y_;
  const std::byte* packedFrom_ = nullptr;
  // Per pixel: the output (and residual) element of channel o0; their
  // channel strides.
  std::vector<std::int64_t> outAt_, residualAt_;
  std::int64_t outStride_ = 0, residualStride_ = 0;
  bool bias_ = false;
  std::int64_t biasAt_ = 0, biasStride_ = 0;
  ConvEpilogue epi_;
  float lo_ = 0, hi_ = 0;
};

PanelConv::PanelConv(const KernelCall& call)
    : b_(boxOf(call)), epi_(ConvEpilogue::of(call)), lo_(clipBound<float>(epi_.lo())),
      hi_(clipBound<float>(epi_.hi())) {
  const ConvGeometry g = convGeometry(call.op);
  P_ = b_.N * b_.OH * b_.OW;
  K_ = b_.C * b_.KH * b_.KW;
  rowFloats_ = panelCount(b_.O) * kPanelWidth;
  const TensorView& in = call.inputs[0][0];
  const std::vector<std::int64_t>& shape = call.op.application.inputs[0].tensors[0].shape;
  channelStride_ = in.strides[1];
  const TensorView& out = call.outputs[0][0];
  outStride_ = out.strides[1];
  const bool residual = epi_.active() && epi_.residual();
  if (residual) {
    residualStride_ = ConvEpilogue::residualView(call).strides[1];
  }
  // Per output pixel: its taps into the input, its output (and residual)
  // element.
  for (std::int64_t n = 0; n < b_.N; ++n) {
    for (std::int64_t oh = 0; oh < b_.OH; ++oh) {
      for (std::int64_t ow = 0; ow < b_.OW; ++ow) {
        for (std::int64_t kh = 0; kh < b_.KH; ++kh) {
          for (std::int64_t kw = 0; kw < b_.KW; ++kw) {
            const std::int64_t ih = (b_.oh0 + oh) * g.sh - g.ph + (b_.kh0 + kh) * g.dh;
            const std::int64_t iw = (b_.ow0 + ow) * g.sw - g.pw + (b_.kw0 + kw) * g.dw;
            const bool inside = ih >= 0 && iw >= 0 && ih < shape[2] && iw < shape[3];
            taps_.push_back(inside ? offsetIn(in, {b_.n0 + n, b_.c0, ih, iw}) : -1);
          }
        }
        const std::initializer_list<std::int64_t> at = {b_.n0 + n, b_.o0, b_.oh0 + oh, b_.ow0 + ow};
        outAt_.push_back(offsetIn(out, at));
        if (residual) {
          residualAt_.push_back(offsetIn(ConvEpilogue::residualView(call), at));
        }
      }
    }
  }
  const TensorView& wt = call.inputs[1][0];
  weightAt_ = offsetIn(wt, {b_.o0, b_.c0, b_.kh0, b_.kw0});
  weightStrides_ = wt.strides;
  col_.assign(static_cast<std::size_t>(P_ * K_), 0.0f);
  panels_.assign(static_cast<std::size_t>(rowFloats_ * K_), 0.0f);
  y_.assign(static_cast<std::size_t>(P_ * rowFloats_), 0.0f);
  bias_ = addsBias(call, b_);
  if (bias_) {
    biasAt_ = offsetIn(call.inputs[2][0], {b_.o0});
    biasStride_ = call.inputs[2][0].strides[0];
  }
}

void PanelConv::gather(const float* in) {
  const std::int64_t taps = b_.KH * b_.KW;
  for (std::int64_t p = 0; p < P_; ++p) {
    for (std::int64_t t = 0; t < taps; ++t) {
      float* to = col_.data() + p * K_ + t * b_.C;
      const std::int64_t at = taps_[static_cast<std::size_t>(p * taps + t)];
      if (at < 0) {
        std::fill(to, to + b_.C, 0.0f);
      } else if (channelStride_ == 1) {
        std::memcpy(to, in + at, static_cast<std::size_t>(b_.C) * sizeof(float));
      } else {
        for (std::int64_t c = 0; c < b_.C; ++c) {
          to[c] = in[at + c * channelStride_];
        }
      }
    }
  }
}

void PanelConv::pack(const float* w) {
  const std::int64_t so = weightStrides_[0], sc = weightStrides_[1];
  const std::int64_t skh = weightStrides_[2], skw = weightStrides_[3];
  packPanels(K_, b_.O, panels_.data(), [&](std::int64_t i, std::int64_t o) {
    const std::int64_t t = i / b_.C, c = i % b_.C;
    return w[weightAt_ + o * so + c * sc + (t / b_.KW) * skh + (t % b_.KW) * skw];
  });
}

void PanelConv::run(const KernelCall& call) {
  const TensorView& wt = call.inputs[1][0];
  if (packedFrom_ != wt.data) { // a constant: packed once while its data stays
    pack(reinterpret_cast<const float*>(wt.data));
    packedFrom_ = wt.data;
  }
  gather(reinterpret_cast<const float*>(call.inputs[0][0].data));
  panelProductOnTeam(vectorKernels(), panels_.data(), K_, b_.O, col_.data(), K_, P_, y_.data(),
                     rowFloats_);
  // The store: clip(act(conv + bias + residual)) into the output view.
  auto* out = reinterpret_cast<float*>(call.outputs[0][0].data);
  const float* bias = bias_ ? reinterpret_cast<const float*>(call.inputs[2][0].data) : nullptr;
  const float* residual =
      residualAt_.empty() ? nullptr
                          : reinterpret_cast<const float*>(ConvEpilogue::residualView(call).data);
  const bool finishes = epi_.eltwise();
  for (std::int64_t p = 0; p < P_; ++p) {
    const float* y = y_.data() + p * rowFloats_;
    float* o = out + outAt_[static_cast<std::size_t>(p)];
    for (std::int64_t j = 0; j < b_.O; ++j) {
      float v = y[j];
      if (bias != nullptr) {
        v += bias[biasAt_ + j * biasStride_];
      }
      if (residual != nullptr) {
        v += residual[residualAt_[static_cast<std::size_t>(p)] + j * residualStride_];
      }
      o[j * outStride_] = finishes ? epi_.finish(v, lo_, hi_) : v;
    }
  }
}

} // namespace

std::unique_ptr<PreparedConv> preparePanelConv(const KernelCall& call) {
  if (call.outputs[0][0].dtype != DType::Float32 || convGroups(call.op).grouped() ||
      !call.inputs[1][0].constant || inputSelection(call).isEmpty()) {
    return nullptr;
  }
  const Box b = boxOf(call);
  const double weightBytes = 4.0 * static_cast<double>(b.O * b.C * b.KH * b.KW);
  if (b.N * b.OH * b.OW > kMaxPanelRows || weightBytes < kPanelWeightBytes) {
    return nullptr;
  }
  return std::make_unique<PanelConv>(call);
}

} // namespace tapestry::backend::cpu
