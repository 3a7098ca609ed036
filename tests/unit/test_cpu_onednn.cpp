// Tests for the CPU kernels that run on oneDNN (backends/cpu/conv.cpp): each
// against the float64 reference (backends/reference.hpp: the same graph in
// float64, which runs on the fallback) on whole tensors and on shards — the
// halves along every index dim (C, KH and KW too, as partial sums), three
// parts along OH, every dim halved at once — with padding, stride 2,
// dilation, depthwise, with and without bias, constant and non-constant
// weights; and prepared kernels run again with changed data, a moved constant
// weight, and a changed thread count. Also that float32 shards actually run on
// oneDNN (not its reference loops, nor the fallback) where they can.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/cpu/conv.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/cpu_isa.hpp"
#include "backends/cpu/kernel_util.hpp"
#include "backends/cpu/onednn.hpp"
#include "backends/cpu/pool.hpp"
#include "backends/dtype.hpp"
#include "backends/reference.hpp"
#include "backends/tensor_io.hpp"
#include "conv_cases.hpp"
#include "fixtures.hpp"

using namespace tapestry;
using namespace tapestry::backend;
using namespace tapestry::testing::conv;

namespace {

enum class ViewMode { Sub, Copy, Whole };

// Runs one shard through a prepared kernel, its input views as `mode` says
// (sub-views keep the whole tensor's strides), into a fresh output buffer;
// returns it with the prepared kernel's implementation.
std::pair<Buffer, std::string> runShard(const graph::ExpandedGraph& g, const TensorBuffers& inputs,
                                        const ZRange& shard, ViewMode mode) {
  const graph::Operation& op = g.operations[0];
  const ShardSelections sel = shardSelections(op, shard);
  std::vector<Buffer> keep;
  std::vector<PortViews> in;
  for (std::size_t p = 0; p < op.inputs.size(); ++p) {
    PortViews views;
    for (std::size_t t = 0; t < op.inputs[p].tensors.size(); ++t) {
      const graph::Tensor& tensor = g.tensors[op.inputs[p].tensors[t]];
      const Buffer& full = inputs.at(tensor.name);
      const ZRange& region = sel.inputs[p][t];
      TensorView view;
      if (region.isEmpty()) {
        views.push_back(view);
        continue;
      }
      if (mode == ViewMode::Copy) {
        keep.push_back(cpuBackend().allocate(full.dtype(), region, 0));
        cpuBackend().copyRegion(full.view(), keep.back().view(), region);
        view = keep.back().view();
      } else {
        view = mode == ViewMode::Sub ? full.view(region) : full.view();
      }
      view.constant = tensor.constant;
      views.push_back(view);
    }
    in.push_back(std::move(views));
  }
  Buffer out = cpuBackend().allocate(parseDType(op.application.outputs[0].tensors[0].dtype),
                                     sel.outputs[0][0], 0);
  const std::vector<PortViews> outViews = {{out.view()}};
  const KernelCall call{op, shard, in, outViews, 0};
  std::unique_ptr<PreparedKernel> prepared = cpuBackend().prepareKernel(call);
  REQUIRE(prepared != nullptr);
  const auto* conv = dynamic_cast<const cpu::PreparedConv*>(prepared.get());
  REQUIRE(conv != nullptr);
  prepared->run(call);
  return {out, conv->implementation()};
}

// Shards to try: whole; each dim halved; OH in three parts; every dim halved.
std::vector<Shape> splitsFor(const ZRange& index) {
  const std::size_t rank = index.rank();
  std::vector<Shape> out{Shape(rank, 1)};
  for (std::size_t d = 0; d < rank; ++d) {
    if (index.extent(d) >= 2) {
      Shape s(rank, 1);
      s[d] = 2;
      out.push_back(s);
    }
  }
  if (index.extent(2) >= 3) {
    Shape rows(rank, 1);
    rows[2] = 3;
    out.push_back(rows);
  }
  Shape all(rank, 1);
  for (std::size_t d = 0; d < rank; ++d) {
    all[d] = std::min<std::int64_t>(2, index.extent(d));
  }
  out.push_back(all);
  return out;
}

// Every split of the case in `dtype` against the float64 reference; float32
// shards that oneDNN can run must run there.
void checkCase(const ConvCase& c, const std::string& dtype) {
  INFO(dtype << " " << caseText(c));
  const graph::ExpandedGraph g = convGraph(c, dtype);
  const graph::Operation& op = g.operations[0];
  const metakernel::Application& app = op.application;
  const Data data = drawData(g, c, 7);
  // conv2d's C/groups channels of a group (conv2d_grouped's shards hold
  // whole groups: its index has no such dim).
  const auto gmulAt = app.bindings.find("gmul");
  const std::int64_t gmul = gmulAt != nullptr ? gmulAt->value.asInt() : 0;
  const std::vector<Shape> splits = splitsFor(app.index);
  for (std::size_t k = 0; k < splits.size(); ++k) {
    const Shape& split = splits[k];
    INFO("split " << shapeJson(split));
    bool reductionSplit = false;
    for (std::size_t d : app.reductionDims) {
      reductionSplit = reductionSplit || split[d] > 1;
    }
    if (reductionSplit && !app.reductionSplittable) {
      continue; // conv2d_act: a shard holds the whole sum
    }
    Buffer result = Buffer::host(parseDType(dtype), app.outputs[0].tensors[0].shape);
    for (const ZRange& shard : app.index.tile(split)) {
      INFO("shard " << shard.toString());
      auto [partial, implementation] =
          runShard(g, data.inputs, shard, static_cast<ViewMode>(k % 3));
      const ZRange input = shardSelections(op, shard).inputs[0][0];
      const bool groupPart = gmul > 1 && shard.extent(4) != app.index.extent(4);
      if (dtype == "float32" && !input.isEmpty() && !groupPart) {
        CHECK(implementation.rfind("onednn", 0) == 0);
        CHECK(implementation.find("ref") == std::string::npos);
      }
      if (dtype == "float64" || dtype == "float16") {
        CHECK(implementation.rfind("fallback", 0) == 0);
      }
      cpuBackend().combine(metakernel::Combine::Sum, result.view(), partial.view(),
                           partial.region());
    }
    CHECK(relError(values(result), values(data.expected)) <=
          tolerance(parseDType(dtype), reductionSplit));
  }
}

const std::vector<ConvCase> kCases = {
    // groups == 1: padding, bias, constant weights
    {{1, 16, 9, 9}, {32, 16, 3, 3}, R"({"padding": [1, 1]})", true, true},
    // stride, asymmetric padding and dilation, non-constant weights
    {{2, 5, 8, 7},
     {6, 5, 3, 2},
     R"({"stride": [2, 1], "padding": [1, 2], "dilation": [2, 1]})",
     true,
     false},
    // a first layer: 3 channels, 7 x 7 at stride 2
    {{1, 3, 16, 16}, {8, 3, 7, 7}, R"({"stride": [2, 2], "padding": [3, 3]})", false, true},
    // 1 x 1 at stride 2 (a ResNet shortcut), no bias
    {{1, 8, 8, 8}, {16, 8, 1, 1}, R"({"stride": [2, 2]})", false, false},
    // depthwise, with bias, at stride 1 and 2
    {{1, 16, 8, 8}, {16, 1, 3, 3}, R"({"groups": 16, "padding": [1, 1]})", true, true},
    {{2, 8, 9, 9},
     {8, 1, 3, 3},
     R"({"groups": 8, "stride": [2, 2], "padding": [1, 1]})",
     true,
     false},
    // groups == O with two channels per group (C split: the fallback)
    {{1, 8, 6, 6}, {4, 2, 3, 3}, R"({"groups": 4, "padding": [1, 1]})", true, true},
    // conv2d_grouped: 4 groups of 3 input and 2 output channels (ResNeXt's
    // shape), and 2 groups of 4 and 3 at stride 2 without bias (RegNet's)
    {{2, 12, 7, 7},
     {8, 3, 3, 3},
     R"({"groups": 4, "padding": [1, 1]})",
     true,
     true,
     "conv2d_grouped"},
    {{1, 8, 9, 9},
     {6, 4, 3, 3},
     R"({"groups": 2, "stride": [2, 2], "padding": [1, 1]})",
     false,
     false,
     "conv2d_grouped"},
    // a channel multiplier: groups == C, two output channels per group
    {{1, 4, 6, 6},
     {8, 1, 3, 3},
     R"({"groups": 4, "padding": [1, 1]})",
     true,
     true,
     "conv2d_grouped"},
};

} // namespace

TEST_CASE("conv2d on oneDNN: float32 shards against the float64 reference", "[cpu][onednn]") {
  for (const ConvCase& c : kCases) {
    checkCase(c, "float32");
  }
}

TEST_CASE("conv2d: bfloat16 (oneDNN where the CPU has it), float64 and float16 on the fallback",
          "[cpu][onednn]") {
  for (const ConvCase& c : kCases) {
    for (const char* dtype : {"bfloat16", "float64", "float16"}) {
      checkCase(c, dtype);
    }
  }
}

// conv2d_act: the cases' geometry with bias, residual, clips and activations.
const std::vector<ConvCase> kActCases = {
    {{1, 16, 9, 9},
     {32, 16, 3, 3},
     R"({"padding": [1, 1], "min": 0})",
     true,
     true,
     "conv2d_act",
     true},
    {{2, 5, 8, 7},
     {6, 5, 3, 2},
     R"({"stride": [2, 1], "padding": [1, 2], "dilation": [2, 1], "min": 0, "max": 6})",
     true,
     false,
     "conv2d_act",
     false},
    {{1, 8, 8, 8}, {16, 8, 1, 1}, R"({"stride": [2, 2]})", false, false, "conv2d_act", true},
    {{1, 16, 8, 8},
     {16, 1, 3, 3},
     R"({"groups": 16, "padding": [1, 1], "min": -0.25, "max": 0.25})",
     true,
     true,
     "conv2d_act",
     true},
    {{2, 8, 9, 9},
     {8, 1, 3, 3},
     R"({"groups": 8, "stride": [2, 2], "padding": [1, 1], "min": 0, "max": 6})",
     false,
     false,
     "conv2d_act",
     true},
    {{1, 8, 6, 6},
     {4, 2, 3, 3},
     R"({"groups": 4, "padding": [1, 1], "min": 0.5, "max": -0.5})",
     true,
     true,
     "conv2d_act",
     true},
    // conv2d_grouped_act: ResNeXt's ReLU after 4 groups, and a residual and
    // a clip after 2 groups at stride 2
    {{2, 12, 7, 7},
     {8, 3, 3, 3},
     R"({"groups": 4, "padding": [1, 1], "min": 0})",
     true,
     true,
     "conv2d_grouped_act"},
    {{1, 8, 9, 9},
     {6, 4, 3, 3},
     R"({"groups": 2, "stride": [2, 2], "padding": [1, 1], "min": -1, "max": 6})",
     false,
     false,
     "conv2d_grouped_act",
     true},
    // SiLU after a residual (oneDNN's swish post-op after its sum), HardSwish
    // on a depthwise convolution with a clip after it, and SiLU after 4 groups
    {{1, 16, 9, 9},
     {16, 16, 3, 3},
     R"({"padding": [1, 1], "silu": true})",
     true,
     true,
     "conv2d_act",
     true},
    {{2, 16, 8, 8},
     {16, 1, 3, 3},
     R"({"groups": 16, "stride": [2, 2], "padding": [1, 1], "hard_swish": true, "max": 0.5})",
     true,
     true,
     "conv2d_act",
     false},
    {{1, 8, 7, 7},
     {8, 2, 3, 3},
     R"({"groups": 4, "padding": [1, 1], "silu": true})",
     true,
     false,
     "conv2d_grouped_act",
     true},
};

TEST_CASE("conv2d_act on oneDNN: float32 shards over N, O, OH, OW against the float64 reference",
          "[cpu][onednn]") {
  for (const ConvCase& c : kActCases) {
    checkCase(c, "float32");
  }
}

TEST_CASE("conv2d_act: bfloat16 (oneDNN where the CPU has it), float64 and float16 on the fallback",
          "[cpu][onednn]") {
  for (const ConvCase& c : kActCases) {
    for (const char* dtype : {"bfloat16", "float64", "float16"}) {
      checkCase(c, dtype);
    }
  }
}

// conv2d_act's whole index as one prepared call on `layout`, every
// activation (input, residual, output) row-major or channels last; returns the
// output (row-major) and what ran it.
std::pair<Buffer, std::string> runAct(const graph::ExpandedGraph& g, const TensorBuffers& inputs,
                                      cpu::ConvLayout layout, bool channelsLast) {
  const graph::Operation& op = g.operations[0];
  std::vector<Buffer> keep;
  std::vector<PortViews> in;
  for (const auto& port : op.inputs) {
    PortViews views;
    for (std::size_t t : port.tensors) {
      keep.push_back(placed(inputs.at(g.tensors[t].name), channelsLast));
      views.push_back(keep.back().view());
    }
    in.push_back(std::move(views));
  }
  Buffer out = placed(Buffer::host(DType::Float32, op.application.outputs[0].tensors[0].shape),
                      channelsLast);
  const std::vector<PortViews> outViews = {{out.view()}};
  const KernelCall call{op, op.application.index, in, outViews, 0};
  std::unique_ptr<cpu::PreparedConv> prepared = cpu::prepareConv2d(call, layout);
  prepared->run(call);
  Buffer rowMajor = Buffer::host(DType::Float32, out.region().shape().vector());
  cpuBackend().copyRegion(out.view(), rowMajor.view(), out.region());
  return {rowMajor, prepared->implementation()};
}

TEST_CASE("conv2d_act on oneDNN: the epilogue as post-ops where dst is the output view, else a "
          "pass after the convolution",
          "[cpu][onednn][layout]") {
  struct Expect {
    ConvCase c;
    const char* fused; // what the implementation says when dst is the output view
  };
  const std::vector<Expect> cases = {
      {kActCases[0], "post-ops sum, relu"},  {kActCases[1], "post-ops clip"},
      {kActCases[2], "post-ops sum"},        {kActCases[3], "post-ops sum, clip"},
      {kActCases[5], "epilogue pass"}, // min above max: not oneDNN's clip
      {kActCases[8], "post-ops sum, swish"}, {kActCases[9], "post-ops hardswish, clip"},
  };
  for (const Expect& e : cases) {
    const graph::ExpandedGraph g = convGraph(e.c, "float32");
    const Data data = drawData(g, e.c, 5);
    for (const cpu::ConvLayout layout : {cpu::ConvLayout::Blocked, cpu::ConvLayout::Plain}) {
      for (const bool channelsLast : {false, true}) {
        INFO(caseText(e.c) << " layout " << static_cast<int>(layout)
                           << (channelsLast ? " channels last" : " row-major"));
        const auto [out, implementation] = runAct(g, data.inputs, layout, channelsLast);
        INFO(implementation);
        CHECK(relError(values(out), values(data.expected)) <= tolerance(DType::Float32, false));
        REQUIRE(implementation.rfind("onednn", 0) == 0);
        // dst is the output view itself: channels-last views in the layout
        // that runs them as they are, dense NCHW in Plain.
        const bool dstIsView = channelsLast == (layout == cpu::ConvLayout::Blocked);
        if (dstIsView) {
          CHECK(implementation.find(e.fused) != std::string::npos);
        } else {
          CHECK((implementation.find("post-ops") != std::string::npos ||
                 implementation.find("epilogue pass") != std::string::npos));
        }
      }
    }
  }
}

TEST_CASE("conv2d prepared once runs again with new data, a moved constant weight and new threads",
          "[cpu][onednn]") {
  for (const ConvCase& c : {kCases[0], kCases[1], kCases[4]}) {
    INFO(caseText(c));
    const graph::ExpandedGraph g = convGraph(c, "float32");
    const graph::Operation& op = g.operations[0];
    const ZRange& index = op.application.index;
    Data first = drawData(g, c, 1);
    const Data second = drawData(g, c, 2);
    // Views of `first`'s buffers; the output is written in place.
    auto viewsOf = [&](const TensorBuffers& inputs) {
      std::vector<PortViews> views;
      for (const auto& port : op.inputs) {
        PortViews pv;
        for (std::size_t t : port.tensors) {
          TensorView v = inputs.at(g.tensors[t].name).view();
          v.constant = g.tensors[t].constant;
          pv.push_back(v);
        }
        views.push_back(pv);
      }
      return views;
    };
    Buffer out = Buffer::host(DType::Float32, op.application.outputs[0].tensors[0].shape);
    const std::vector<PortViews> outViews = {{out.view()}};
    std::vector<PortViews> in = viewsOf(first.inputs);
    const KernelCall call{op, index, in, outViews, 0};
    std::unique_ptr<PreparedKernel> prepared = cpuBackend().prepareKernel(call);
    prepared->run(call);
    CHECK(relError(values(out), values(first.expected)) <= 1e-5);

    // New activations in the same buffer (and, for a non-constant weight,
    // new weights in place): the second run must read them.
    std::vector<std::string> changed = {"x"};
    if (!c.constant) {
      changed.push_back("w");
    }
    for (const std::string& name : changed) {
      const Buffer& to = first.inputs.at(name);
      std::memcpy(to.data(), second.inputs.at(name).data(),
                  static_cast<std::size_t>(to.byteSize()));
    }
    TensorBuffers now64; // what first's buffers hold now
    for (const auto& [name, buffer] : first.inputs) {
      now64.emplace(name, toFloat64(buffer));
    }
    const Buffer expected = evaluateGraph(cpuBackend(), convGraph(c, "float64"), now64).at("y");
    prepared->run(call);
    CHECK(relError(values(out), values(expected)) <= 1e-5);

    // A constant weight at another address is packed again.
    std::vector<PortViews> moved = viewsOf(second.inputs);
    const KernelCall movedCall{op, index, moved, outViews, 0};
    prepared->run(movedCall);
    CHECK(relError(values(out), values(second.expected)) <= 1e-5);

    // Another OpenMP team size rebuilds the primitive (oneDNN fixes some work
    // splits at creation), with the same result.
    CpuBackend::setBlasThreads(2);
    std::memset(out.data(), 0, static_cast<std::size_t>(out.byteSize()));
    prepared->run(movedCall);
    CpuBackend::setBlasThreads(1);
    CHECK(relError(values(out), values(second.expected)) <= 1e-5);
  }
}

TEST_CASE("ChannelBlocks copies NCHW views into nhwc, nChw8c and nChw16c as oneDNN's reorder does",
          "[cpu][onednn]") {
  using dnnl::memory;
  namespace dn = cpu::onednn;
  const dnnl::engine& engine = dn::cpuEngine();
  dnnl::stream stream(engine);
  // (N, C, H, W), and the plain box's strides: dense, or a sub-box of a larger
  // tensor (rows and planes apart), or every other column.
  struct Case {
    memory::dims dims;
    memory::dims strides;
  };
  const std::vector<Case> cases = {
      {{1, 64, 16, 16}, {16384, 256, 16, 1}}, {{2, 20, 5, 7}, {700, 35, 7, 1}},
      {{1, 24, 6, 9}, {4000, 130, 13, 1}},    {{1, 16, 4, 4}, {1024, 64, 16, 2}},
      {{1, 8, 1, 1}, {8, 1, 1, 1}},           {{1, 512, 2, 2}, {2048, 4, 2, 1}},
  };
  // At every ISA level this CPU has: float32's tiles are transposed in that
  // level's vector registers (8 x 8 with AVX, 4 x 4 with SSE2).
  for (int level = 0; level < kIsaCount; ++level) {
    const auto isa = static_cast<CpuIsa>(level);
    if (!cpuHasIsa(isa)) {
      continue;
    }
    setCpuIsa(isa);
    for (const Case& c : cases) {
      for (memory::format_tag tag :
           {memory::format_tag::nhwc, memory::format_tag::nChw8c, memory::format_tag::nChw16c}) {
        for (memory::data_type type : {memory::data_type::f32, memory::data_type::bf16}) {
          INFO(isaName(isa) << " dims " << c.dims[0] << "x" << c.dims[1] << "x" << c.dims[2] << "x"
                            << c.dims[3] << " tag " << static_cast<int>(tag) << " type "
                            << static_cast<int>(type));
          const memory::desc plainDesc(c.dims, type, c.strides);
          const memory::desc blockedDesc(c.dims, type, tag);
          const std::optional<dn::ChannelBlocks> blocks = dn::ChannelBlocks::of(blockedDesc);
          REQUIRE(blocks.has_value());
          const std::size_t size = memory::data_type_size(type);
          // Element i of the buffer is the number i % 1021 (no NaN payloads for
          // the reorder to change).
          std::vector<std::byte> plain(plainDesc.get_size());
          for (std::size_t i = 0; i * size < plain.size(); ++i) {
            const auto v = static_cast<float>(i % 1021);
            if (size == 4) {
              std::memcpy(plain.data() + i * 4, &v, 4);
            } else {
              const BFloat16 b = floatToBFloat16(v);
              std::memcpy(plain.data() + i * 2, &b.bits, 2);
            }
          }
          // Into the blocked layout: as oneDNN's reorder writes it (the padding
          // channels zero in both).
          std::vector<std::byte> mine(blockedDesc.get_size()), theirs(blockedDesc.get_size());
          blocks->toBlocked(plain.data(), c.strides, mine.data());
          memory from(plainDesc, engine, plain.data()), to(blockedDesc, engine, theirs.data());
          dnnl::reorder(from, to).execute(stream, from, to);
          const bool same = mine == theirs;
          CHECK(same);
          // And back, into a plain box whose other elements stay.
          std::vector<std::byte> back(plain.size(), std::byte{0x5A});
          blocks->fromBlocked(mine.data(), back.data(), c.strides);
          std::vector<std::byte> expected(plain.size(), std::byte{0x5A});
          memory to2(plainDesc, engine, expected.data());
          dnnl::reorder(to, to2).execute(stream, to, to2);
          const bool sameBack = back == expected;
          CHECK(sameBack);
        }
      }
    }
  }
  setCpuIsa(std::nullopt);
  // Other layouts are not ChannelBlocks'.
  CHECK_FALSE(dn::ChannelBlocks::of(
                  memory::desc({1, 8, 4, 4}, memory::data_type::f32, memory::format_tag::nchw))
                  .has_value());
}

namespace {

struct PoolCase {
  const char* kernel;
  Shape input;
  const char* params;
  bool onednn = true; // float32 runs on oneDNN (it has only reference code for dilation)
};

graph::ExpandedGraph poolGraph(const PoolCase& c, const std::string& dtype) {
  return testing::expandText(
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": ")" + dtype +
      R"(", "shape": )" + shapeJson(c.input) +
      R"(}}, "operations": [{"name": "pool", "kernel": ")" + c.kernel + R"(", "params": )" +
      c.params + R"(, "inputs": {"input": "x"}, "outputs": {"result": "y"}}]})");
}

// Every split of a pooling case in `dtype` against the float64 reference
// (the loops); float32 shards must run on oneDNN.
void checkPool(const PoolCase& c, const std::string& dtype) {
  INFO(dtype << " " << c.kernel << " " << shapeJson(c.input) << " " << c.params);
  const graph::ExpandedGraph g = poolGraph(c, dtype);
  const graph::Operation& op = g.operations[0];
  const metakernel::Application& app = op.application;
  const TensorBuffers inputs = drawInputs(g, 3);
  TensorBuffers in64;
  in64.emplace("x", toFloat64(inputs.at("x")));
  const Buffer expected = evaluateGraph(cpuBackend(), poolGraph(c, "float64"), in64).at("y");
  const std::vector<Shape> splits = {{1, 1, 1, 1}, {2, 1, 1, 1}, {1, 2, 1, 1}, {1, 1, 2, 1},
                                     {1, 1, 1, 2}, {1, 1, 3, 2}, {2, 2, 2, 2}};
  for (const Shape& wanted : splits) {
    Shape split = wanted;
    for (std::size_t d = 0; d < split.size(); ++d) {
      split[d] = std::min(split[d], app.index.extent(d));
    }
    INFO("split " << shapeJson(split));
    Buffer result = Buffer::host(parseDType(dtype), app.outputs[0].tensors[0].shape);
    for (const ZRange& shard : app.index.tile(split)) {
      INFO("shard " << shard.toString());
      const ShardSelections sel = shardSelections(op, shard);
      const std::vector<PortViews> in = {{inputs.at("x").view(sel.inputs[0][0])}};
      Buffer part = cpuBackend().allocate(result.dtype(), sel.outputs[0][0], 0);
      const std::vector<PortViews> out = {{part.view()}};
      const KernelCall call{op, shard, in, out, 0};
      std::unique_ptr<PreparedKernel> prepared = cpuBackend().prepareKernel(call);
      const auto* pool = dynamic_cast<const cpu::PreparedPool*>(prepared.get());
      REQUIRE(pool != nullptr);
      // oneDNN's pooling kernels take dense NCHW: the whole tensor here (the
      // shards' sub-views of it run on the loops).
      if (dtype == "float32" && c.onednn && shard == app.index) {
        CHECK(pool->implementation().rfind("onednn", 0) == 0);
      }
      prepared->run(call);
      // global_avgpool's partials add up; the windowed pools' shards are disjoint.
      cpuBackend().combine(metakernel::Combine::Sum, result.view(), part.view(), part.region());
    }
    CHECK(relError(values(result), values(expected)) <= tolerance(result.dtype(), true));
  }
}

} // namespace

TEST_CASE("maxpool2d and avgpool2d on oneDNN: shards against the float64 reference",
          "[cpu][onednn]") {
  const std::vector<PoolCase> cases = {
      {"maxpool2d", {1, 16, 16, 16}, R"({"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1]})"},
      {"maxpool2d",
       {2, 5, 9, 8},
       R"({"kernel": [2, 3], "stride": [1, 2], "padding": [1, 1], "dilation": [2, 1]})",
       false},
      {"avgpool2d", {1, 16, 12, 12}, R"({"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1]})"},
      {"avgpool2d",
       {2, 6, 7, 9},
       R"({"kernel": [3, 2], "stride": [2, 1], "padding": [1, 1], "count_include_pad": true})"},
      {"global_avgpool", {2, 8, 5, 6}, "{}", false},
  };
  for (const PoolCase& c : cases) {
    for (const char* dtype : {"float32", "bfloat16", "float64", "float16"}) {
      checkPool(c, dtype);
    }
  }
}

TEST_CASE("maxpool2d propagates NaN on oneDNN as in the loops", "[cpu][onednn]") {
  const PoolCase c{"maxpool2d", {1, 16, 4, 4}, R"({"kernel": [2, 2], "stride": [2, 2]})"};
  for (const char* dtype : {"float32", "float64"}) {
    INFO(dtype);
    const graph::ExpandedGraph g = poolGraph(c, dtype);
    const graph::Operation& op = g.operations[0];
    TensorBuffers inputs = drawInputs(g, 5);
    Buffer& x = inputs.at("x");
    // A NaN first and last in window (0, 0) of channel 0 and channel 1.
    auto setNaN = [&](std::int64_t i) {
      if (x.dtype() == DType::Float32) {
        x.elements<float>()[static_cast<std::size_t>(i)] = std::nanf("");
      } else {
        x.elements<double>()[static_cast<std::size_t>(i)] = std::nan("");
      }
    };
    setNaN(0);
    setNaN(16 + 5);
    Buffer y = Buffer::host(x.dtype(), op.application.outputs[0].tensors[0].shape);
    const std::vector<PortViews> in = {{x.view()}}, out = {{y.view()}};
    cpuBackend().runKernel(op, op.application.index, in, out);
    const std::vector<double> v = values(y);
    CHECK(std::isnan(v[0]));
    CHECK(std::isnan(v[4]));
    CHECK_FALSE(std::isnan(v[1]));
  }
}

TEST_CASE("copies between channels-last views run in memory order", "[cpu][layout]") {
  // Rows 2 and 3 of a channels-last [1, 8, 5, 6] tensor: 96 floats in one
  // run, where index order would make 8 runs (one per channel) of strided floats.
  const Shape shape{1, 8, 5, 6};
  const ZRange all = ZRange::fromShape(ZPoint(shape));
  const ZRange rows(ZPoint(Shape{0, 0, 2, 0}), ZPoint(Shape{1, 8, 4, 6}));
  Buffer from =
      cpuBackend().allocate(DType::Float32, all, 0).withStrides(channelsLastStrides(shape));
  auto* values = reinterpret_cast<float*>(from.data());
  for (std::int64_t i = 0; i < all.size(); ++i) {
    values[i] = static_cast<float>(i);
  }
  const Shape part{1, 8, 2, 6};
  Buffer into =
      cpuBackend().allocate(DType::Float32, rows, 0).withStrides(channelsLastStrides(part));
  const cpu::Walk s = cpu::walkRegion(from.view(), rows);
  const cpu::Walk d = cpu::walkRegion(into.view(), rows);
  auto runs = [&](bool anyOrder) {
    int n = 0;
    cpu::forEachRun<2>(
        rows, {&s, &d},
        [&](const std::array<std::int64_t, 2>&, std::int64_t, const std::array<std::int64_t, 2>&) {
          ++n;
        },
        anyOrder);
    return n;
  };
  CHECK(runs(true) == 1);
  CHECK(runs(false) == 8);
  cpu::copyViews(from.view(), into.view(), rows);
  for (std::int64_t c = 0; c < 8; ++c) {
    for (std::int64_t h = 2; h < 4; ++h) {
      for (std::int64_t w = 0; w < 6; ++w) {
        const Shape point{0, c, h, w};
        INFO(c << " " << h << " " << w);
        CHECK(*into.view().at<float>(point) == *from.view().at<float>(point));
      }
    }
  }
}

TEST_CASE("runDims walks channels-last boxes in memory order, in one run", "[cpu][layout]") {
  const Shape shape{2, 8, 5, 6};
  const ZRange all = ZRange::fromShape(ZPoint(shape));
  Buffer probe =
      cpuBackend().allocate(DType::Float32, all, 0).withStrides(channelsLastStrides(shape));
  const cpu::Walk last = cpu::walkRegion(probe.view(), all);
  Buffer rows = cpuBackend().allocate(DType::Float32, all, 0);
  const cpu::Walk plain = cpu::walkRegion(rows.view(), all);
  std::vector<cpu::RunDim<2>> dims;
  REQUIRE(cpu::runDims<2>(shape, {&last, &last}, dims, true));
  REQUIRE(dims.size() == 1);
  CHECK(dims[0].extent == 480);
  CHECK(dims[0].stride == std::array<std::int64_t, 2>{1, 1});
  REQUIRE(cpu::runDims<2>(shape, {&last, &last}, dims, false));
  CHECK(dims.size() == 3); // index order: only H and W merge
  // Row-major operands keep the index order either way: one run.
  REQUIRE(cpu::runDims<2>(shape, {&plain, &plain}, dims, true));
  CHECK(dims.size() == 1);
  // Mixed layouts: every point is still visited once (a transposing walk).
  REQUIRE(cpu::runDims<2>(shape, {&plain, &last}, dims, true));
  std::int64_t points = 1;
  for (const cpu::RunDim<2>& d : dims) {
    points *= d.extent;
  }
  CHECK(points == 480);
}
