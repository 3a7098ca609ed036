// conv2d (NCHW / OIHW cross-correlation) as im2col + gemm per shard. The
// shard's index range [N, O, OH, OW, C, KH, KW] picks the output block and the
// part of the reduction (C, KH, KW) it sums; rows of the input outside the
// tensor (padding) read zeros, so the input view only needs the selection
// clipped to the tensor's bounds. With groups == O (depthwise style) output
// channel o reads input channels gmul*o + cg: summed tap by tap instead.
#include <algorithm>
#include <vector>

#include "backends/cpu/kernel_util.hpp"

namespace tapestry::backend::cpu {

namespace {

// The window geometry the conv2d template binds: stride, padding and dilation
// (height, width), and the input's H and W.
struct ConvGeometry {
  std::int64_t sh, sw, ph, pw, dh, dw, H, W;
};

ConvGeometry convGeometry(const graph::Operation& op) {
  return {intBinding(op, "sh"), intBinding(op, "sw"), intBinding(op, "ph"), intBinding(op, "pw"),
          intBinding(op, "dh"), intBinding(op, "dw"), intBinding(op, "H"),  intBinding(op, "W")};
}

// groups == 1: im2col of the shard's input box and one gemm with its weights.
template <class T> void conv2dGemm(const KernelCall& call) {
  using C = typename Num<T>::C; // float or double
  const TensorView& in = call.inputs[0][0];
  const TensorView& wt = call.inputs[1][0];
  const TensorView& out = call.outputs[0][0];
  const graph::Operation& op = call.op;
  const auto [sh, sw, ph, pw, dh, dw, H, W] = convGeometry(op);

  const ZPoint& s = call.index.start();
  const ZPoint& e = call.index.end();
  const std::int64_t o0 = s[1], Os = e[1] - s[1];
  const std::int64_t oh0 = s[2], OHs = e[2] - s[2];
  const std::int64_t ow0 = s[3], OWs = e[3] - s[3];
  const std::int64_t c0 = s[4], Cs = e[4] - s[4];
  const std::int64_t kh0 = s[5], KHs = e[5] - s[5];
  const std::int64_t kw0 = s[6], KWs = e[6] - s[6];
  const std::int64_t R = Cs * KHs * KWs;

  // The weight block as an [Os, R] matrix (R ordered c, kh, kw).
  std::vector<C> wmat(static_cast<std::size_t>(Os * R));
  for (std::int64_t o = 0; o < Os; ++o) {
    for (std::int64_t c = 0; c < Cs; ++c) {
      for (std::int64_t kh = 0; kh < KHs; ++kh) {
        for (std::int64_t kw = 0; kw < KWs; ++kw) {
          const std::int64_t at[4] = {o0 + o, c0 + c, kh0 + kh, kw0 + kw};
          wmat[static_cast<std::size_t>(o * R + (c * KHs + kh) * KWs + kw)] =
              Num<T>::load(*wt.at<T>(at));
        }
      }
    }
  }

  // Output rows per im2col chunk: keep the column matrix near 4M elements.
  const std::int64_t perRow = std::max<std::int64_t>(R * OWs, 1);
  const std::int64_t chunk = std::clamp<std::int64_t>((std::int64_t{1} << 22) / perRow, 1, OHs);
  std::vector<C> col(static_cast<std::size_t>(R * chunk * OWs));
  std::vector<C> res(static_cast<std::size_t>(Os * chunk * OWs));
  // Every in-bounds (ih, iw) the shard reads lies in the input's selection; an
  // empty selection (the shard sees only padding) reads zeros throughout, and
  // its view may be absent.
  const bool anyInput =
      !selection(inputIpf(call, 0), call.index, call.op.application.inputs[0].tensors[0].shape)
           .isEmpty();
  const std::int64_t strideW = anyInput ? in.strides[3] : 0;
  for (std::int64_t n = s[0]; n < e[0]; ++n) {
    for (std::int64_t ohA = 0; ohA < OHs; ohA += chunk) {
      const std::int64_t rows = std::min(chunk, OHs - ohA);
      const std::int64_t cols = rows * OWs;
      for (std::int64_t c = 0; c < Cs; ++c) {
        for (std::int64_t kh = 0; kh < KHs; ++kh) {
          for (std::int64_t kw = 0; kw < KWs; ++kw) {
            C* dst = col.data() + ((c * KHs + kh) * KWs + kw) * cols;
            for (std::int64_t r = 0; r < rows; ++r) {
              const std::int64_t ih = sh * (oh0 + ohA + r) + dh * (kh0 + kh) - ph;
              C* line = dst + r * OWs;
              if (!anyInput || ih < 0 || ih >= H) {
                std::fill_n(line, OWs, C(0));
                continue;
              }
              // Row ih of channel c from the view's first column.
              const std::int64_t w0 = in.region.start()[3];
              const std::int64_t base[4] = {n, c0 + c, ih, w0};
              const T* src = in.at<T>(base);
              for (std::int64_t ow = 0; ow < OWs; ++ow) {
                const std::int64_t iw = sw * (ow0 + ow) + dw * (kw0 + kw) - pw;
                line[ow] = (iw < 0 || iw >= W) ? C(0) : Num<T>::load(src[(iw - w0) * strideW]);
              }
            }
          }
        }
      }
      gemmDense(Os, cols, R, wmat.data(), col.data(), res.data());
      for (std::int64_t o = 0; o < Os; ++o) {
        for (std::int64_t r = 0; r < rows; ++r) {
          const std::int64_t at[4] = {n, o0 + o, oh0 + ohA + r, ow0};
          T* dst = out.at<T>(at);
          const C* from = res.data() + o * cols + r * OWs;
          for (std::int64_t ow = 0; ow < OWs; ++ow) {
            dst[ow * out.strides[3]] = Num<T>::store(from[ow]);
          }
        }
      }
    }
  }
}

// groups == O (depthwise style): a product per output channel would be a
// 1 x C/groups*KH*KW gemv, so the taps are summed directly, a row of outputs
// at a time (as the pools do): acc[j] += weight[o, c, kh, kw] * input[n,
// gmul*o + c, ih, iw(j)] for the shard's (c, kh, kw), taps in the padding left
// out.
template <class T> void depthwiseTyped(const KernelCall& call, std::int64_t gmul) {
  using C = typename Num<T>::C;
  const TensorView& in = call.inputs[0][0];
  const TensorView& wt = call.inputs[1][0];
  const TensorView& out = call.outputs[0][0];
  const graph::Operation& op = call.op;
  const auto [sh, sw, ph, pw, dh, dw, H, W] = convGeometry(op);
  const ZPoint& s = call.index.start();
  const ZPoint& e = call.index.end();
  // A shard that sees only padding reads nothing (its input view may be absent).
  const bool anyInput =
      !call.index.isEmpty() &&
      !selection(inputIpf(call, 0), call.index, op.application.inputs[0].tensors[0].shape)
           .isEmpty();
  const std::int64_t h0 = anyInput ? in.region.start()[2] : 0;
  const std::int64_t w0 = anyInput ? in.region.start()[3] : 0;
  const std::int64_t ow0 = s[3], OWs = e[3] - s[3];
  std::vector<TapSpan> taps(static_cast<std::size_t>(e[6] - s[6])); // output columns per kw
  for (std::int64_t kw = s[6]; kw < e[6]; ++kw) {
    taps[static_cast<std::size_t>(kw - s[6])] = tapsInside(sw * ow0 + dw * kw - pw, sw, OWs, W);
  }
  std::vector<C> acc(static_cast<std::size_t>(OWs));
  for (std::int64_t n = s[0]; n < e[0]; ++n) {
    for (std::int64_t o = s[1]; o < e[1]; ++o) {
      for (std::int64_t oh = s[2]; oh < e[2]; ++oh) {
        std::fill(acc.begin(), acc.end(), C(0));
        for (std::int64_t c = s[4]; c < e[4] && anyInput; ++c) {
          const std::int64_t corner[4] = {n, gmul * o + c, h0, w0};
          const T* plane = in.at<T>(corner);
          for (std::int64_t kh = s[5]; kh < e[5]; ++kh) {
            const std::int64_t ih = sh * oh + dh * kh - ph;
            if (ih < 0 || ih >= H) {
              continue;
            }
            const T* row = plane + (ih - h0) * in.strides[2];
            for (std::int64_t kw = s[6]; kw < e[6]; ++kw) {
              const std::int64_t tap[4] = {o, c, kh, kw};
              const C wv = Num<T>::load(*wt.at<T>(tap));
              const TapSpan q = taps[static_cast<std::size_t>(kw - s[6])];
              const std::int64_t col = sw * ow0 + dw * kw - pw - w0;
              for (std::int64_t j = q.lo; j < q.hi; ++j) {
                acc[static_cast<std::size_t>(j)] +=
                    wv * static_cast<C>(Num<T>::load(row[(col + j * sw) * in.strides[3]]));
              }
            }
          }
        }
        const std::int64_t at[4] = {n, o, oh, ow0};
        T* dst = out.at<T>(at);
        for (std::int64_t j = 0; j < OWs; ++j) {
          dst[j * out.strides[3]] = Num<T>::store(acc[static_cast<std::size_t>(j)]);
        }
      }
    }
  }
}

struct Conv2d {
  template <class T> static void run(const KernelCall& call) {
    const std::int64_t gmul = intBinding(call.op, "gmul");
    if (gmul != 0) {
      depthwiseTyped<T>(call, gmul);
      return;
    }
    conv2dGemm<T>(call);
  }
};

} // namespace

void registerConvKernels(CpuRegistry& registry) {
  registry.add("conv2d", &floatKernel<Conv2d>);
}

} // namespace tapestry::backend::cpu
