// Tests for the panel products (VectorKernels::panelProduct and packPanels,
// backends/cpu/vector_math.hpp) at every ISA level this CPU has, and for the
// convolutions that run on them (backends/cpu/conv_panels.cpp): shards of at
// most 8 output pixels against 1 MiB or more of constant weights, whole and
// split along O, C (partial sums), OH and N, with views row-major and
// channels last, against the float64 reference; conv2d_act's bias, residual
// and clip; a prepared shard run again after its constant weight moved; and
// which shards the registry gives them.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/cpu/conv.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/cpu_isa.hpp"
#include "backends/cpu/vector_math.hpp"
#include "conv_cases.hpp"

using namespace tapestry;
using namespace tapestry::backend;
using namespace tapestry::testing::conv;

namespace {

std::vector<CpuIsa> isasHere() {
  std::vector<CpuIsa> out;
  for (const CpuIsa isa : {CpuIsa::Sse2, CpuIsa::Avx2, CpuIsa::Avx512}) {
    if (cpuHasIsa(isa)) {
      out.push_back(isa);
    }
  }
  return out;
}

// Sets the ISA level for a scope, and goes back to the default after it.
struct IsaScope {
  explicit IsaScope(CpuIsa isa) { setCpuIsa(isa); }
  ~IsaScope() { setCpuIsa(std::nullopt); }
  IsaScope(const IsaScope&) = delete;
  IsaScope& operator=(const IsaScope&) = delete;
};

const std::vector<ConvCase> kPanelCases = {
    // a last-layer 3 x 3: 2 x 2 pixels, 256 -> 256 channels (2.4 MB of weights)
    {{1, 256, 2, 2}, {256, 256, 3, 3}, R"({"padding": [1, 1]})", true, true},
    // a shortcut, 1 x 1 at stride 2 (4 x 4 -> 2 x 2), 600 output channels (not
    // a whole number of panel pairs), no bias
    {{1, 512, 4, 4}, {600, 512, 1, 1}, R"({"stride": [2, 2]})", false, true},
    // two images, dilation and asymmetric padding: 2 x 1 x 1 pixels
    {{2, 128, 3, 3}, {256, 128, 3, 3}, R"({"padding": [1, 0], "dilation": [2, 1]})", true, true},
    // eight pixels (two images of 2 x 2), 1 MiB of weights exactly
    {{2, 512, 2, 2}, {512, 512, 1, 1}, R"({})", true, true},
    // conv2d_act: bias, residual and relu
    {{1, 256, 2, 2},
     {256, 256, 3, 3},
     R"({"padding": [1, 1], "min": 0})",
     true,
     true,
     "conv2d_act",
     true},
    // conv2d_act: clip to [0, 6], no residual
    {{1, 512, 2, 2}, {512, 512, 1, 1}, R"({"min": 0, "max": 6})", true, true, "conv2d_act"},
    // conv2d_act: SiLU after a residual (EfficientNet's last blocks), and
    // HardSwish (MobileNetV3's)
    {{1, 512, 2, 2}, {640, 512, 1, 1}, R"({"silu": true})", true, true, "conv2d_act", true},
    {{1, 256, 2, 2},
     {256, 256, 3, 3},
     R"({"padding": [1, 1], "hard_swish": true})",
     false,
     true,
     "conv2d_act"},
};

struct Shard {
  Buffer out;
  std::string implementation;
};

// One shard prepared with `layout` (sub-views of the whole tensors, placed as
// `channelsLast` says) and run into a fresh output of the same placement.
Shard runShard(const graph::ExpandedGraph& g, const TensorBuffers& inputs, const ZRange& shard,
               bool channelsLast, cpu::ConvLayout layout) {
  const graph::Operation& op = g.operations[0];
  const ShardSelections sel = shardSelections(op, shard);
  std::vector<Buffer> keep;
  std::vector<PortViews> in;
  for (std::size_t p = 0; p < op.inputs.size(); ++p) {
    PortViews views;
    for (std::size_t t = 0; t < op.inputs[p].tensors.size(); ++t) {
      const graph::Tensor& tensor = g.tensors[op.inputs[p].tensors[t]];
      keep.push_back(placed(inputs.at(tensor.name), channelsLast));
      TensorView view = keep.back().view(sel.inputs[p][t]);
      view.constant = tensor.constant;
      views.push_back(view);
    }
    in.push_back(std::move(views));
  }
  const ZRange& region = sel.outputs[0][0];
  Buffer out = cpuBackend().allocate(DType::Float32, region, 0);
  if (channelsLast) {
    out = out.withStrides(channelsLastStrides(region.shape().coords()));
  }
  const std::vector<PortViews> outViews = {{out.view()}};
  const KernelCall call{op, shard, in, outViews, 0};
  std::unique_ptr<cpu::PreparedConv> prepared = cpu::prepareConv2d(call, layout);
  prepared->run(call);
  return {out, prepared->implementation()};
}

// Every split of a panel case on panel products: the sum of the shards'
// results against the float64 reference.
void checkPanels(const ConvCase& c, bool channelsLast) {
  INFO(caseText(c) << (channelsLast ? " channels last" : " row-major"));
  const graph::ExpandedGraph g = convGraph(c, "float32");
  const metakernel::Application& app = g.operations[0].application;
  const Data data = drawData(g, c, 11);
  int panels = 0; // shards that ran on panel products
  const std::vector<std::vector<std::int64_t>> splits = {
      {1, 1, 1, 1, 1, 1, 1}, {1, 2, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 2, 1, 1},
      {1, 1, 2, 1, 1, 1, 1}, {2, 1, 1, 1, 1, 1, 1}, {1, 3, 1, 1, 2, 1, 1}};
  for (const auto& split : splits) {
    const bool reductionSplit = split[4] > 1;
    if ((reductionSplit && !app.reductionSplittable) || split[0] > app.index.extent(0) ||
        split[2] > app.index.extent(2)) {
      continue;
    }
    INFO("split " << shapeJson(split));
    Buffer result = Buffer::host(DType::Float32, app.outputs[0].tensors[0].shape);
    for (const ZRange& shard : app.index.tile(split)) {
      INFO("shard " << shard.toString());
      const Shard s = runShard(g, data.inputs, shard, channelsLast, cpu::ConvLayout::Panels);
      // panels where the shard's own weights are 1 MiB or more, else oneDNN
      const std::int64_t weights =
          4 * shard.extent(1) * shard.extent(4) * shard.extent(5) * shard.extent(6);
      CHECK((s.implementation == "panel products") == (weights >= (1 << 20)));
      panels += s.implementation == "panel products" ? 1 : 0;
      cpuBackend().combine(metakernel::Combine::Sum, result.view(), s.out.view(), s.out.region());
    }
    // sums of up to 2304 float32 products (FanIn-scaled inputs): 1e-5 of the
    // largest result plus room for the partials' rounding
    CHECK(relError(values(result), values(data.expected)) <= 1e-4);
  }
  CHECK(panels > 0);
}

} // namespace

TEST_CASE("panelProduct: rows of x against W packed in panels, at every ISA level",
          "[cpu][panels]") {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const CpuIsa isa : isasHere()) {
    const cpu::VectorKernels& vk = cpu::vectorKernels(isa);
    for (const std::int64_t k : {1, 7, 64, 301}) {
      for (const std::int64_t n : {1, 16, 33, 70}) {
        for (std::int64_t rows = 1; rows <= cpu::kMaxPanelRows; ++rows) {
          INFO(isaName(isa) << " k " << k << " n " << n << " rows " << rows);
          const std::int64_t ldx = k + 3;
          const std::int64_t panels = cpu::panelCount(n);
          const std::int64_t ldy = panels * cpu::kPanelWidth + 5;
          std::vector<float> x(static_cast<std::size_t>(rows * ldx)),
              w(static_cast<std::size_t>(k * n));
          for (float& v : x) {
            v = unit(rng);
          }
          for (float& v : w) {
            v = unit(rng);
          }
          std::vector<float> packed(static_cast<std::size_t>(panels * k * cpu::kPanelWidth));
          cpu::packPanels(k, n, packed.data(),
                          [&](std::int64_t i, std::int64_t j) { return w[i * n + j]; });
          // all panels, then the last pair alone (others untouched)
          for (const std::int64_t first : {std::int64_t{0}, panels - 2}) {
            std::vector<float> y(static_cast<std::size_t>(rows * ldy), nan);
            vk.panelProduct(packed.data(), k, first, panels, x.data(), ldx, rows, y.data(), ldy);
            for (std::int64_t r = 0; r < rows; ++r) {
              for (std::int64_t j = 0; j < ldy; ++j) {
                const float got = y[static_cast<std::size_t>(r * ldy + j)];
                if (j < first * cpu::kPanelWidth || j >= panels * cpu::kPanelWidth) {
                  REQUIRE(std::isnan(got)); // outside the panels asked for
                } else if (j >= n) {
                  REQUIRE(got == 0.0f); // a padding column
                } else {
                  double sum = 0, size = 0;
                  for (std::int64_t i = 0; i < k; ++i) {
                    const double t = double{x[static_cast<std::size_t>(r * ldx + i)]} *
                                     w[static_cast<std::size_t>(i * n + j)];
                    sum += t;
                    size += std::abs(t);
                  }
                  REQUIRE(std::abs(got - sum) <= 1e-6 * size + 1e-30);
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("conv2d and conv2d_act on panel products: shards against the float64 reference, at "
          "every ISA level",
          "[cpu][panels]") {
  for (const CpuIsa isa : isasHere()) {
    INFO(isaName(isa));
    IsaScope scope(isa);
    for (const ConvCase& c : kPanelCases) {
      for (const bool channelsLast : {false, true}) {
        checkPanels(c, channelsLast);
      }
    }
  }
}

TEST_CASE("a convolution on panel products runs again with new data and a moved constant weight",
          "[cpu][panels]") {
  const ConvCase& c = kPanelCases[4]; // conv2d_act with bias, residual and relu
  const graph::ExpandedGraph g = convGraph(c, "float32");
  const graph::Operation& op = g.operations[0];
  const ZRange& index = op.application.index;
  const Data first = drawData(g, c, 1);
  const Data second = drawData(g, c, 2);
  // Buffers whose data the second run overwrites in place, but the weight's,
  // which the second run reads from another buffer (a moved constant).
  TensorBuffers live;
  for (const auto& [name, buffer] : first.inputs) {
    Buffer copy = Buffer::host(DType::Float32, buffer.region().shape().vector());
    cpuBackend().copyRegion(buffer.view(), copy.view(), buffer.region());
    live.emplace(name, copy);
  }
  Buffer out = Buffer::host(DType::Float32, op.application.outputs[0].tensors[0].shape);
  auto callWith = [&](const Buffer& weight) {
    std::vector<PortViews> in;
    for (const auto& port : op.inputs) {
      PortViews views;
      for (std::size_t t : port.tensors) {
        const graph::Tensor& tensor = g.tensors[t];
        TensorView view = tensor.name == "w" ? weight.view() : live.at(tensor.name).view();
        view.constant = tensor.constant;
        views.push_back(view);
      }
      in.push_back(std::move(views));
    }
    return in;
  };
  const std::vector<PortViews> outViews = {{out.view()}};
  const std::vector<PortViews> in1 = callWith(live.at("w"));
  const KernelCall call1{op, index, in1, outViews, 0};
  std::unique_ptr<cpu::PreparedConv> prepared = cpu::prepareConv2d(call1, cpu::ConvLayout::Panels);
  REQUIRE(prepared->implementation() == "panel products");
  prepared->run(call1);
  CHECK(relError(values(out), values(first.expected)) <= 1e-4);
  for (const auto& [name, buffer] : second.inputs) {
    if (name != "w") {
      cpuBackend().copyRegion(buffer.view(), live.at(name).view(), buffer.region());
    }
  }
  const std::vector<PortViews> in2 = callWith(second.inputs.at("w"));
  const KernelCall call2{op, index, in2, outViews, 0};
  prepared->run(call2);
  CHECK(relError(values(out), values(second.expected)) <= 1e-4);
}

TEST_CASE("the registry runs few pixels against 1 MiB of constant weights on panel products "
          "where the CPU has AVX-512",
          "[cpu][panels]") {
  struct Expect {
    ConvCase c;
    bool panels; // on an AVX-512 CPU
  };
  const std::vector<Expect> cases = {
      {kPanelCases[0], true},
      {kPanelCases[3], true},
      // weights not constant
      {{{1, 256, 2, 2}, {256, 256, 3, 3}, R"({"padding": [1, 1]})", true, false}, false},
      // nine pixels
      {{{1, 256, 3, 3}, {256, 256, 3, 3}, R"({"padding": [1, 1]})", true, true}, false},
      // under 1 MiB of weights
      {{{1, 128, 2, 2}, {128, 128, 3, 3}, R"({"padding": [1, 1]})", true, true}, false},
  };
  for (const Expect& e : cases) {
    INFO(caseText(e.c));
    const graph::ExpandedGraph g = convGraph(e.c, "float32");
    const Data data = drawData(g, e.c, 3);
    const ZRange& index = g.operations[0].application.index;
    const Shard s = runShard(g, data.inputs, index, false, cpu::kConvLayout);
    const bool expected = e.panels && activeIsa() == CpuIsa::Avx512;
    INFO(s.implementation);
    CHECK((s.implementation == "panel products") == expected);
    CHECK(relError(values(s.out), values(data.expected)) <= 1e-4);
    // and ConvLayout::Panels where they apply on any CPU
    const Shard asked = runShard(g, data.inputs, index, false, cpu::ConvLayout::Panels);
    CHECK((asked.implementation == "panel products") == e.panels);
  }
}
