// conv2d and conv2d_act (conv2d with a residual add and a clip) on the CPU:
// prepared kernels on oneDNN, with a fallback for what oneDNN does not run
// here (float64, float16, shards that see only padding).
// The registry uses the default layout; bench_conv_cpu compares the others.
// Not a public header.
#pragma once

#include <memory>
#include <string>

#include "backends/backend.hpp"

namespace tapestry::backend::cpu {

// How the oneDNN convolution holds its activations. The executor's views are
// row-major NCHW (any strides); the convolution may read and write them as
// they are, or through per-call reorders into a layout it prefers.
enum class ConvLayout {
  Blocked, // the layout oneDNN prefers (nChw16c on AVX-512), reorders in and out
  Plain,   // dense nchw (a reorder only when the view is not dense)
  Nhwc,    // channels last, reorders in and out
  Panels,  // panel products where they apply (conv_panels.cpp), else Blocked
};

// The layout the registry's conv2d uses: measured by bench_conv_cpu
// (docs/cost-model.md has the figures).
inline constexpr ConvLayout kConvLayout = ConvLayout::Blocked;

// A prepared conv2d call that can say what runs it.
class PreparedConv : public PreparedKernel {
public:
  // "onednn brgconv:avx512_core" (oneDNN's implementation name), or
  // "fallback gemm" / "fallback depthwise".
  virtual std::string implementation() const = 0;
};

// Prepares a checked conv2d or conv2d_act call (CpuRegistry's prepare uses
// kConvLayout, and panel products where the CPU has AVX-512 and they apply).
std::unique_ptr<PreparedConv> prepareConv2d(const KernelCall& call, ConvLayout layout);

// A float32 shard of at most kMaxPanelRows output pixels against 1 MiB or
// more of constant weights, not grouped, as panel products on any CPU;
// null for any other shard (conv_panels.cpp).
std::unique_ptr<PreparedConv> preparePanelConv(const KernelCall& call);

} // namespace tapestry::backend::cpu
