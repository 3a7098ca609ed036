// What conv2d_act does after its convolution (conv.cpp): result =
// clip(act(conv + bias + residual), min, max), act SiLU, HardSwish or none,
// per output element of the shard's
// box. The fallbacks apply it in their store loops; the oneDNN path fuses it
// into the primitive as post-ops where it can, and otherwise runs it as a
// pass over the output box after the convolution. Not a public header.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <oneapi/dnnl/dnnl.hpp>

#include "backends/backend.hpp"
#include "backends/cpu/kernel_util.hpp"

namespace tapestry::backend::cpu {

// The output box of a conv shard: first point and extent of [N, O, OH, OW].
struct OutputBox {
  std::array<std::int64_t, 4> start{};
  std::array<std::int64_t, 4> extent{};
};

// A bound of the clip in compute type C: float saturates a bound beyond its
// range to +-infinity (the defaults, +-the largest float64, clip nothing).
template <class C> C clipBound(double bound) {
  if constexpr (std::is_same_v<C, double>) {
    return bound;
  } else {
    constexpr double top = static_cast<double>(std::numeric_limits<C>::max());
    if (bound > top) {
      return std::numeric_limits<C>::infinity();
    }
    if (bound < -top) {
      return -std::numeric_limits<C>::infinity();
    }
    return static_cast<C>(bound);
  }
}

// Appends a clip to [lo, hi] to oneDNN post-ops: eltwise_relu for min 0 and
// no max, else eltwise_clip with the bounds as float (conv2d_act's epilogue,
// linear_act's activation in gemm_dnnl.cpp).
void appendClip(dnnl::post_ops& ops, double lo, double hi);

class ConvEpilogue {
public:
  // The activation before the clip: the silu or hard_swish param.
  enum class Act { None, Silu, HardSwish };

  // conv2d_act's and conv2d_grouped_act's params and residual for `call`;
  // conv2d (and any other kernel) has none: active() is false.
  static ConvEpilogue of(const KernelCall& call);

  bool active() const { return active_; }
  // The call has a residual view (input port 3).
  bool residual() const { return residual_; }
  double lo() const { return lo_; }
  double hi() const { return hi_; }
  // A bound is set: not the default +-largest float64 (nor an infinity).
  bool clips() const {
    return lo_ > std::numeric_limits<double>::lowest() || hi_ < std::numeric_limits<double>::max();
  }
  Act act() const { return act_; }
  // An activation or a clip to apply to the sum (oneDNN's eltwise post-ops).
  bool eltwise() const { return active_ && (act_ != Act::None || clips()); }
  // Anything to do after the convolution: a residual, an activation or a clip.
  bool changes() const { return (active_ && residual_) || eltwise(); }
  // relu: min 0 and no max.
  bool relu() const { return lo_ == 0 && hi_ >= std::numeric_limits<double>::max(); }

  // The residual view (port 3); only when residual().
  static const TensorView& residualView(const KernelCall& call) { return call.inputs[3][0]; }

  // min(max(x, lo), hi) as clip's float64 reference: NaN stays NaN and a lo
  // above hi gives hi. lo and hi in C (clipBound).
  template <class C> static C clip(C x, C lo, C hi) {
    const C t = x < lo ? lo : x;
    return hi < t ? hi : t;
  }

  // clip(act(x), lo, hi) in C: the store of every path.
  template <class C> C finish(C x, C lo, C hi) const {
    switch (act_) {
    case Act::Silu:
      x = silu(x);
      break;
    case Act::HardSwish:
      x = hardSwish(x);
      break;
    case Act::None:
      break;
    }
    return clip(x, lo, hi);
  }

  // out = clip(act(out + residual), min, max) over `box` of the output view, a
  // pass after the convolution: any strides, the sum in the compute type.
  void pass(const KernelCall& call, const OutputBox& box) const;
  // A user scratchpad (onednn.hpp) and the epilogue as oneDNN post-ops: with
  // `sum`, dst += what dst held (scale 1: the residual, copied there first);
  // with `eltwise`, the activation (swish with alpha 1, hardswish) and then,
  // where a bound is set, relu (alpha 0) when min is 0 and max unset, else
  // clip (alpha min, beta max, in float: an unset bound is an infinity).
  dnnl::primitive_attr postOps(bool sum, bool eltwise) const;
  // Copies the residual's `box` into the output view (before a convolution
  // whose sum post-op adds what dst holds).
  void copyResidual(const KernelCall& call, const OutputBox& box) const;

private:
  bool active_ = false;
  bool residual_ = false;
  Act act_ = Act::None;
  double lo_ = std::numeric_limits<double>::lowest();
  double hi_ = std::numeric_limits<double>::max();
};

} // namespace tapestry::backend::cpu
