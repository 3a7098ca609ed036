// The CUDA backend's convolutions: conv2d, conv2d_act and conv2d_grouped. A shard with groups
// == 1 runs as products (planConvGemm): per batch element, an im2col of its
// input box into scratch and one cuBLASLt product with the weights, the bias
// added to the rows through beta = 1; conv2d_act's residual, activation
// and clip in a pass after. Grouped shards (depthwise, conv2d_grouped), and those that read
// only padding, run the direct kernel: a thread per output element summing its
// (C, KH, KW) box.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "backends/cuda/cuda_ops_internal.hpp"
#include "backends/cuda/cuda_plan.hpp"
#include "core/diag/error.hpp"

namespace tapestry::cuda::ops {

using backend::DType;
using backend::KernelCall;

namespace {

// The shard as planConvGemm's products: the weights read in place or
// gathered once, then per batch element an im2col and a product into the
// output (or a dense block scattered into it); then conv2d_act's residual,
// activation and clip in one pass over the shard's output box.
void convAsProducts(const KernelCall& call, const KernelContext& c, const ConvParams& p,
                    const ConvGemm& g) {
  const DType dtype = floatOutput(call);
  const ElementType type = elementType(dtype);
  const auto size = static_cast<std::int64_t>(backend::dtypeSize(dtype));
  const ConvView input = convView(call.inputs[0][0]);
  const ConvView weight = convView(call.inputs[1][0]);
  const ConvView output = convView(call.outputs[0][0]);
  const std::int64_t Cs = p.end[4] - p.begin[4], KHs = p.end[5] - p.begin[5],
                     KWs = p.end[6] - p.begin[6], OHs = p.end[2] - p.begin[2],
                     OWs = p.end[3] - p.begin[3];
  const std::byte* W = static_cast<const std::byte*>(weight.data) + g.weight0 * size;
  std::int64_t rsW = g.weightRows.value_or(g.K);
  Scratch denseW;
  if (!g.weightRows) {
    denseW = Scratch(static_cast<std::size_t>(g.M * g.K * size), c.gpu, c.stream);
    const std::int64_t extent[4] = {g.M, Cs, KHs, KWs};
    const std::vector<std::int64_t> strides[2] = {
        {weight.stride[0], weight.stride[1], weight.stride[2], weight.stride[3]},
        {g.K, KHs * KWs, KWs, 1}};
    checkCuda(
        launchCopy(static_cast<int>(size), W, denseW.get(), makeWalk(extent, strides), c.stream),
        what(call) + ": gathering the weights");
    W = denseW.get();
  }
  Scratch col(static_cast<std::size_t>(g.K * g.N * size), c.gpu, c.stream);
  Scratch denseOut;
  if (!g.outputRows) {
    denseOut = Scratch(static_cast<std::size_t>(g.M * g.N * size), c.gpu, c.stream);
  }
  GemmExtras extras;
  if (p.bias != nullptr) {
    extras.bias =
        static_cast<const std::byte*>(p.bias) + (p.begin[1] - p.biasStart) * p.biasStride * size;
    extras.bs = p.biasStride;
    extras.biasRows = true;
  }
  auto outAt = [&](std::int64_t n) {
    return static_cast<std::byte*>(const_cast<void*>(output.data)) +
           convOffsetOf(output, n, p.begin[1], p.begin[2], p.begin[3]) * size;
  };
  for (std::int64_t n = p.begin[0]; n < p.end[0]; ++n) {
    checkCuda(launchIm2col(type, input, n, p, col.get(), c.stream), what(call) + ": im2col");
    std::byte* out = g.outputRows ? outAt(n) : denseOut.get();
    gemm(c, dtype, g.M, g.N, g.K, W, rsW, 1, col.get(), g.N, 1, out, g.outputRows.value_or(g.N), 1,
         extras);
    if (!g.outputRows) {
      const std::int64_t extent[3] = {g.M, OHs, OWs};
      const std::vector<std::int64_t> strides[2] = {
          {g.N, OWs, 1}, {output.stride[1], output.stride[2], output.stride[3]}};
      checkCuda(
          launchCopy(static_cast<int>(size), out, outAt(n), makeWalk(extent, strides), c.stream),
          what(call) + ": scattering a product");
    }
  }
  const bool clips = p.lo > -std::numeric_limits<double>::infinity() ||
                     p.hi < std::numeric_limits<double>::infinity();
  if (p.residual.data == nullptr && p.act == EpilogueAct::None && !clips) {
    return;
  }
  const std::int64_t extent[4] = {p.end[0] - p.begin[0], g.M, OHs, OWs};
  const ConvView& r = p.residual.data != nullptr ? p.residual : output;
  const std::vector<std::int64_t> strides[2] = {
      {output.stride[0], output.stride[1], output.stride[2], output.stride[3]},
      {r.stride[0], r.stride[1], r.stride[2], r.stride[3]}};
  const void* residual =
      p.residual.data == nullptr
          ? nullptr
          : static_cast<const std::byte*>(p.residual.data) +
                convOffsetOf(p.residual, p.begin[0], p.begin[1], p.begin[2], p.begin[3]) * size;
  checkCuda(launchEpilogue(type, outAt(p.begin[0]), residual, makeWalk(extent, strides), p.act,
                           p.lo, p.hi, c.stream),
            what(call) + ": the epilogue");
}

void launchConv(const KernelCall& call, const KernelContext& c, const ConvParams& p) {
  if (call.index.isEmpty()) {
    return;
  }
  const ConvView weight = convView(call.inputs[1][0]);
  const ConvView output = convView(call.outputs[0][0]);
  if (const std::optional<ConvGemm> g = planConvGemm(p, weight, output)) {
    convAsProducts(call, c, p, *g);
    return;
  }
  checkCuda(launchConv2d(elementType(floatOutput(call)), convView(call.inputs[0][0]), weight,
                         output, p, c.stream),
            what(call));
}

} // namespace

// conv2d, and conv2d_act (convParams reads its residual, activation and clip
// bounds): its shards hold the whole of C, KH and KW, so each adds the bias,
// result = clip(act(conv + bias + residual), min, max), after the products or in the direct
// kernel before its store.
void conv2dKernel(const KernelCall& call, const KernelContext& c) {
  launchConv(call, c, convParams(call));
}

} // namespace tapestry::cuda::ops
