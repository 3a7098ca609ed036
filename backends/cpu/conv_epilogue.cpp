// conv2d_act's epilogue as passes over a shard's output box (conv_epilogue.hpp).
#include "backends/cpu/conv_epilogue.hpp"

#include <array>
#include <cstring>
#include <limits>
#include <vector>

#include "backends/cpu/kernel_util.hpp"
#include "backends/cpu/onednn.hpp"

namespace tapestry::backend::cpu {

namespace {

ZRange regionOf(const OutputBox& b) {
  std::vector<std::int64_t> lo(b.start.begin(), b.start.end());
  std::vector<std::int64_t> hi(4);
  for (std::size_t d = 0; d < 4; ++d) {
    hi[d] = b.start[d] + b.extent[d];
  }
  return ZRange(ZPoint(std::move(lo)), ZPoint(std::move(hi)));
}

// fn(out, res, n, os, rs) once per run of the box, in memory order (a box
// laid out channels last walks channels innermost): n elements of the output
// view at out + j*os and of the residual view at res + j*rs.
template <class T, class F>
void forEachRunOf(const TensorView& out, const TensorView& res, const OutputBox& b, F&& fn) {
  const ZRange region = regionOf(b);
  const Walk wo = walkRegion(out, region);
  const Walk wr = walkRegion(res, region);
  std::vector<RunDim<2>> dims;
  if (!runDims<2>(b.extent, {&wo, &wr}, dims, true)) {
    return;
  }
  const RunDim<2> inner = dims.empty() ? RunDim<2>{1, {0, 0}} : dims.back();
  if (!dims.empty()) {
    dims.pop_back();
  }
  forEachOffset<2>(dims, [&](const std::array<std::int64_t, 2>& off) {
    fn(wo.ptr<T>() + off[0], wr.ptr<T>() + off[1], inner.extent, inner.stride[0], inner.stride[1]);
  });
}

} // namespace

ConvEpilogue ConvEpilogue::of(const KernelCall& call) {
  ConvEpilogue e;
  if (call.op.kernel != "conv2d_act" && call.op.kernel != "conv2d_grouped_act") {
    return e;
  }
  e.active_ = true;
  e.residual_ = call.hasInput(3);
  if (intBinding(call.op, "silu") != 0) {
    e.act_ = Act::Silu;
  } else if (intBinding(call.op, "hard_swish") != 0) {
    e.act_ = Act::HardSwish;
  }
  e.lo_ = floatParam(call.op, "min");
  e.hi_ = floatParam(call.op, "max");
  return e;
}

void ConvEpilogue::pass(const KernelCall& call, const OutputBox& box) const {
  const TensorView& out = call.outputs[0][0];
  const TensorView& res = residual_ ? residualView(call) : out;
  dispatchFloat(call, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = typename Num<T>::C;
    const C lo = clipBound<C>(lo_);
    const C hi = clipBound<C>(hi_);
    forEachRunOf<T>(out, res, box,
                    [&](T* y, const T* r, std::int64_t n, std::int64_t os, std::int64_t rs) {
                      for (std::int64_t j = 0; j < n; ++j) {
                        C v = Num<T>::load(y[j * os]);
                        if (residual_) {
                          v += Num<T>::load(r[j * rs]);
                        }
                        y[j * os] = Num<T>::store(finish(v, lo, hi));
                      }
                    });
  });
}

void ConvEpilogue::copyResidual(const KernelCall& call, const OutputBox& box) const {
  dispatchFloat(call, [&](auto tag) {
    using T = typename decltype(tag)::type;
    forEachRunOf<T>(call.outputs[0][0], residualView(call), box,
                    [&](T* y, const T* r, std::int64_t n, std::int64_t os, std::int64_t rs) {
                      if (os == 1 && rs == 1) {
                        std::memcpy(y, r, static_cast<std::size_t>(n) * sizeof(T));
                        return;
                      }
                      for (std::int64_t j = 0; j < n; ++j) {
                        y[j * os] = r[j * rs];
                      }
                    });
  });
}

void appendClip(dnnl::post_ops& ops, double lo, double hi) {
  if (lo == 0 && hi >= std::numeric_limits<double>::max()) {
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  } else {
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, clipBound<float>(lo),
                       clipBound<float>(hi));
  }
}

dnnl::primitive_attr ConvEpilogue::postOps(bool sum, bool eltwise) const {
  dnnl::primitive_attr attr = onednn::userScratchpad();
  dnnl::post_ops ops;
  if (sum) {
    ops.append_sum(1.0f);
  }
  if (eltwise && act_ == Act::Silu) {
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_swish, 1.0f, 0.0f);
  }
  if (eltwise && act_ == Act::HardSwish) {
    // oneDNN 2.x ignores alpha and beta (its hardswish is x * relu6(x + 3) /
    // 6); 3.x reads them as x * max(0, min(1, alpha x + beta)).
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_hardswish, 1.0f / 6.0f, 0.5f);
  }
  if (eltwise && clips()) {
    appendClip(ops, lo_, hi_);
  }
  attr.set_post_ops(ops);
  return attr;
}

} // namespace tapestry::backend::cpu
