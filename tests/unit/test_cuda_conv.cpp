// The CUDA backend's convolutions planned on the host (cuda_ops_conv.cpp,
// kernels_nn.cu): conv2d and conv2d_act shards as im2col products and through
// the direct kernel, replayed on the host against the CPU backend, and
// planConvGemm's in-place reads and writes. Runs without a GPU (part of
// unit_cuda_plan).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/cuda_plan.hpp"
#include "tests/unit/cuda_replay.hpp"
#include "tests/unit/fixtures.hpp"

using namespace tapestry;
using namespace tapestry::cuda;
using namespace tapestry::testing::cuda_replay;

namespace {

// wholeAndHalves of the op's index, less the halves of a reduction dim where
// the op's output has no combine (conv2d_act's and conv2d_grouped_act's
// shards hold the whole sum).
std::vector<ZRange> runnableHalves(const graph::Operation& op) {
  std::vector<ZRange> shards;
  for (const ZRange& shard : wholeAndHalves(op.application.index)) {
    bool whole = true;
    for (std::size_t d : op.application.reductionDims) {
      whole = whole && shard.extent(d) == op.application.index.extent(d);
    }
    if (op.application.reductionSplittable || whole) {
      shards.push_back(shard);
    }
  }
  return shards;
}

// The one-operation graphs, each through `emulate` and the CPU backend on
// its runnableHalves (compareWithCpu), inputs drawn from one generator seeded
// `seed`; returns how many shards ran.
std::size_t replayEach(const std::vector<std::string>& graphs, unsigned seed,
                       const std::function<void(const backend::KernelCall&)>& emulate) {
  std::mt19937 rng(seed);
  std::size_t shardsRun = 0;
  for (const std::string& text : graphs) {
    const graph::ExpandedGraph g = testing::expandText(text);
    const graph::Operation& op = g.operations[0];
    INFO(op.kernel << " " << op.application.params.dump());
    shardsRun += compareWithCpu(op, runnableHalves(op), rng, emulate);
  }
  return shardsRun;
}

// conv2d_act's activation as the device's epilogueActivation computes it
// (device_util.cuh): SiLU, HardSwish or nothing.
double activated(EpilogueAct act, double x) {
  if (act == EpilogueAct::Silu) {
    return x / (1 + std::exp(-x));
  }
  if (act == EpilogueAct::HardSwish) {
    return x * std::clamp(x / 6 + 0.5, 0.0, 1.0);
  }
  return x;
}

// The CUDA backend's conv2d / conv2d_act shard as products (convAsProducts,
// cuda_ops_conv.cpp) on the host, float64 views: planConvGemm's weights (in
// place, or gathered dense), per batch element the im2col block by its
// definition and the planned cuBLASLt product replayed, the bias on the rows,
// the output in place or scattered from a dense block, then the residual, the
// activation and the clip.
void emulateConv(const backend::KernelCall& call) {
  const ConvParams p = convParams(call);
  const ConvView input = convView(call.inputs[0][0]);
  const ConvView weight = convView(call.inputs[1][0]);
  const ConvView output = convView(call.outputs[0][0]);
  const std::optional<ConvGemm> g = planConvGemm(p, weight, output);
  REQUIRE(g.has_value());
  const std::int64_t KHs = p.end[5] - p.begin[5], KWs = p.end[6] - p.begin[6],
                     OWs = p.end[3] - p.begin[3];
  const auto* in = static_cast<const double*>(input.data);
  const auto* wt = static_cast<const double*>(weight.data);
  auto* out = static_cast<double*>(const_cast<void*>(output.data));
  // W [M, K] as the product reads it.
  std::vector<double> W;
  std::int64_t rsW = g->K;
  if (g->weightRows) {
    rsW = *g->weightRows;
    W.assign(wt + g->weight0, wt + g->weight0 + (g->M - 1) * rsW + g->K);
  } else {
    for (std::int64_t o = 0; o < g->M; ++o) {
      for (std::int64_t k = 0; k < g->K; ++k) {
        const std::int64_t c = p.begin[4] + k / (KHs * KWs), kh = p.begin[5] + k / KWs % KHs,
                           kw = p.begin[6] + k % KWs;
        W.push_back(wt[convOffsetOf(weight, p.begin[1] + o, c, kh, kw)]);
      }
    }
  }
  const std::optional<MatrixLayout> la = matrixLayout(g->M, g->K, rsW, 1);
  const std::optional<MatrixLayout> lb = matrixLayout(g->K, g->N, g->N, 1);
  const std::int64_t rsOut = g->outputRows.value_or(g->N);
  const std::optional<std::int64_t> ldc = outputLd(g->M, g->N, rsOut, 1);
  REQUIRE(la.has_value());
  REQUIRE(lb.has_value());
  REQUIRE(ldc.has_value());
  const LtGemm lt = planGemm(g->M, g->N, g->K, *la, *lb, *ldc);
  for (std::int64_t n = p.begin[0]; n < p.end[0]; ++n) {
    std::vector<double> col(static_cast<std::size_t>(g->K * g->N));
    for (std::int64_t k = 0; k < g->K; ++k) {
      const std::int64_t c = p.begin[4] + k / (KHs * KWs), kh = p.begin[5] + k / KWs % KHs,
                         kw = p.begin[6] + k % KWs;
      for (std::int64_t q = 0; q < g->N; ++q) {
        const std::int64_t oh = p.begin[2] + q / OWs, ow = p.begin[3] + q % OWs;
        const std::int64_t ih = p.sh * oh + p.dh * kh - p.ph, iw = p.sw * ow + p.dw * kw - p.pw;
        col[static_cast<std::size_t>(k * g->N + q)] = ih < 0 || ih >= p.H || iw < 0 || iw >= p.W
                                                          ? 0.0
                                                          : in[convOffsetOf(input, n, c, ih, iw)];
      }
    }
    std::vector<double> D(static_cast<std::size_t>((g->M - 1) * *ldc + g->N), std::nan(""));
    replayLt(lt, col, W, D); // cuBLASLt's A is our B
    for (std::int64_t o = 0; o < g->M; ++o) {
      const double bias =
          p.bias == nullptr
              ? 0.0
              : static_cast<const double*>(p.bias)[(p.begin[1] + o - p.biasStart) * p.biasStride];
      for (std::int64_t q = 0; q < g->N; ++q) {
        const std::int64_t oh = p.begin[2] + q / OWs, ow = p.begin[3] + q % OWs;
        double v = D[static_cast<std::size_t>(o * *ldc + q)] + bias;
        if (p.residual.data != nullptr) {
          v += static_cast<const double*>(
              p.residual.data)[convOffsetOf(p.residual, n, p.begin[1] + o, oh, ow)];
        }
        out[convOffsetOf(output, n, p.begin[1] + o, oh, ow)] =
            std::min(std::max(activated(p.act, v), p.lo), p.hi);
      }
    }
  }
}

} // namespace

TEST_CASE("conv2d shards as im2col products: the CUDA kernel's plan, replayed", "[cuda]") {
  // Every shard that halves one index dim (C, KH and KW included: partial
  // sums, the bias on the first), through the emulated products and the CPU
  // backend, into NaN-filled outputs: the same numbers in the shard's
  // selection. Halving OW writes the output through a dense block; halving C,
  // KH or KW gathers the weights.
  const std::vector<std::string> graphs = {
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float64", "shape": [2, 3, 7, 6]}, "w": {"dtype": "float64", "shape": [4, 3, 3, 3]}, "b": {"dtype": "float64", "shape": [4]}},
          "operations": [{"name": "op", "kernel": "conv2d", "params": {"padding": [1, 1]}, "inputs": {"input": "x", "weight": "w", "bias": "b"}}]})",
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float64", "shape": [2, 2, 9, 8]}, "w": {"dtype": "float64", "shape": [3, 2, 2, 3]}},
          "operations": [{"name": "op", "kernel": "conv2d", "params": {"padding": [2, 1], "stride": [2, 1], "dilation": [2, 2]}, "inputs": {"input": "x", "weight": "w"}}]})",
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float64", "shape": [2, 3, 6, 6]}, "w": {"dtype": "float64", "shape": [4, 3, 3, 3]}, "b": {"dtype": "float64", "shape": [4]}, "r": {"dtype": "float64", "shape": [2, 4, 6, 6]}},
          "operations": [{"name": "op", "kernel": "conv2d_act", "params": {"padding": [1, 1], "min": -20, "max": 25}, "inputs": {"input": "x", "weight": "w", "bias": "b", "residual": "r"}}]})",
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float64", "shape": [2, 3, 6, 5]}, "w": {"dtype": "float64", "shape": [4, 3, 3, 3]}, "b": {"dtype": "float64", "shape": [4]}, "r": {"dtype": "float64", "shape": [2, 4, 3, 3]}},
          "operations": [{"name": "op", "kernel": "conv2d_act", "params": {"padding": [1, 1], "stride": [2, 2], "silu": true}, "inputs": {"input": "x", "weight": "w", "bias": "b", "residual": "r"}}]})"};
  CHECK(replayEach(graphs, 13, emulateConv) >= 30);
}

namespace {

// The CUDA backend's direct conv2d kernel (conv2dKernel, kernels_nn.cu: a
// thread per output element of the shard) replayed on the host, float64
// views: its sum over the shard's (C, KH, KW) box from the bias, input
// channel (o div og)*gmul + c, taps in the padding skipped; then conv2d_act's
// residual, activation and clip.
void emulateDirectConv(const backend::KernelCall& call) {
  const ConvParams p = convParams(call);
  const ConvView input = convView(call.inputs[0][0]);
  const ConvView weight = convView(call.inputs[1][0]);
  const ConvView output = convView(call.outputs[0][0]);
  const auto* in = static_cast<const double*>(input.data);
  const auto* wt = static_cast<const double*>(weight.data);
  auto* out = static_cast<double*>(const_cast<void*>(output.data));
  for (std::int64_t n = p.begin[0]; n < p.end[0]; ++n)
    for (std::int64_t o = p.begin[1]; o < p.end[1]; ++o)
      for (std::int64_t oh = p.begin[2]; oh < p.end[2]; ++oh)
        for (std::int64_t ow = p.begin[3]; ow < p.end[3]; ++ow) {
          double acc = p.bias == nullptr
                           ? 0.0
                           : static_cast<const double*>(p.bias)[(o - p.biasStart) * p.biasStride];
          for (std::int64_t c = p.begin[4]; c < p.end[4] && p.anyInput; ++c)
            for (std::int64_t kh = p.begin[5]; kh < p.end[5]; ++kh)
              for (std::int64_t kw = p.begin[6]; kw < p.end[6]; ++kw) {
                const std::int64_t ih = p.sh * oh + p.dh * kh - p.ph;
                const std::int64_t iw = p.sw * ow + p.dw * kw - p.pw;
                if (ih >= 0 && ih < p.H && iw >= 0 && iw < p.W) {
                  acc += in[convOffsetOf(input, n, o / p.og * p.gmul + c, ih, iw)] *
                         wt[convOffsetOf(weight, o, c, kh, kw)];
                }
              }
          if (p.residual.data != nullptr) {
            acc +=
                static_cast<const double*>(p.residual.data)[convOffsetOf(p.residual, n, o, oh, ow)];
          }
          out[convOffsetOf(output, n, o, oh, ow)] =
              std::min(std::max(activated(p.act, acc), p.lo), p.hi);
        }
}

} // namespace

TEST_CASE("grouped conv2d shards through the direct kernel: convParams' channel map and "
          "epilogue, replayed",
          "[cuda]") {
  // conv2d depthwise (a C part included) and conv2d_grouped (its index [N, G,
  // OH, OW, KH, KW] as conv2d's box: output channels OG*g0 on, c over one
  // group's CG), every shard that halves one index dim, against the CPU backend.
  const std::vector<std::string> graphs = {
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float64", "shape": [2, 8, 7, 6]}, "w": {"dtype": "float64", "shape": [4, 2, 3, 3]}, "b": {"dtype": "float64", "shape": [4]}},
          "operations": [{"name": "op", "kernel": "conv2d", "params": {"padding": [1, 1], "groups": 4}, "inputs": {"input": "x", "weight": "w", "bias": "b"}}]})",
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float64", "shape": [2, 12, 7, 6]}, "w": {"dtype": "float64", "shape": [8, 3, 3, 3]}, "b": {"dtype": "float64", "shape": [8]}},
          "operations": [{"name": "op", "kernel": "conv2d_grouped", "params": {"padding": [1, 1], "groups": 4}, "inputs": {"input": "x", "weight": "w", "bias": "b"}}]})",
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float64", "shape": [1, 8, 9, 9]}, "w": {"dtype": "float64", "shape": [6, 4, 3, 2]}},
          "operations": [{"name": "op", "kernel": "conv2d_grouped", "params": {"padding": [1, 0], "stride": [2, 2], "dilation": [1, 2], "groups": 2}, "inputs": {"input": "x", "weight": "w"}}]})",
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float64", "shape": [2, 6, 7, 6]}, "w": {"dtype": "float64", "shape": [6, 1, 3, 3]}, "b": {"dtype": "float64", "shape": [6]}},
          "operations": [{"name": "op", "kernel": "conv2d_act", "params": {"padding": [1, 1], "groups": 6, "silu": true}, "inputs": {"input": "x", "weight": "w", "bias": "b"}}]})",
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float64", "shape": [1, 8, 9, 9]}, "w": {"dtype": "float64", "shape": [6, 4, 3, 3]}, "r": {"dtype": "float64", "shape": [1, 6, 5, 5]}},
          "operations": [{"name": "op", "kernel": "conv2d_grouped_act", "params": {"padding": [1, 1], "stride": [2, 2], "groups": 2, "hard_swish": true, "max": 0.3}, "inputs": {"input": "x", "weight": "w", "residual": "r"}}]})"};
  CHECK(replayEach(graphs, 17, emulateDirectConv) >= 35);
}

TEST_CASE("planConvGemm reads weights and writes outputs in place where their boxes are one run",
          "[cuda]") {
  ConvParams p;
  const std::int64_t begin[7] = {0, 0, 0, 0, 0, 0, 0};
  const std::int64_t end[7] = {2, 4, 5, 6, 3, 3, 3};
  std::copy(begin, begin + 7, p.begin);
  std::copy(end, end + 7, p.end);
  ConvView weight; // [4, 3, 3, 3] dense
  weight.stride[0] = 27;
  weight.stride[1] = 9;
  weight.stride[2] = 3;
  weight.stride[3] = 1;
  ConvView output; // [2, 4, 5, 6] dense
  output.stride[0] = 120;
  output.stride[1] = 30;
  output.stride[2] = 6;
  output.stride[3] = 1;
  std::optional<ConvGemm> g = planConvGemm(p, weight, output);
  REQUIRE(g.has_value());
  CHECK(g->M == 4);
  CHECK(g->K == 27);
  CHECK(g->N == 30);
  CHECK(g->weightRows == std::optional<std::int64_t>(27));
  CHECK(g->outputRows == std::optional<std::int64_t>(30));
  CHECK(g->weight0 == 0);
  p.begin[4] = 1; // C split: the (C, KH, KW) box is still one run (C outermost)
  g = planConvGemm(p, weight, output);
  REQUIRE(g.has_value());
  CHECK(g->weightRows == std::optional<std::int64_t>(27));
  CHECK(g->weight0 == 9);
  p.begin[4] = 0;
  p.end[6] = 2; // KW split: rows of 2 taps, 3 apart: gathered
  g = planConvGemm(p, weight, output);
  REQUIRE(g.has_value());
  CHECK_FALSE(g->weightRows.has_value());
  p.end[6] = 3;
  p.begin[3] = 3; // OW split: output rows of 3 pixels, 6 apart: a dense block
  g = planConvGemm(p, weight, output);
  REQUIRE(g.has_value());
  CHECK_FALSE(g->outputRows.has_value());
  p.begin[3] = 0;
  p.gmul = 3; // depthwise style: the direct kernel
  CHECK_FALSE(planConvGemm(p, weight, output).has_value());
  p.gmul = 0;
  p.anyInput = false; // only padding
  CHECK_FALSE(planConvGemm(p, weight, output).has_value());
}
