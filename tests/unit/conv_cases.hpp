// What the conv2d kernel tests share (test_cpu_onednn.cpp,
// test_cpu_conv_panels.cpp): one-operation conv2d / conv2d_act graphs, their
// inputs drawn with the float64 reference's result, and the error measure.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/dtype.hpp"
#include "backends/reference.hpp"
#include "backends/tensor_io.hpp"
#include "fixtures.hpp"

namespace tapestry::testing::conv {

using namespace tapestry::backend;

using Shape = std::vector<std::int64_t>;

inline CpuBackend& cpuBackend() {
  static CpuBackend backend = [] {
    CpuBackend::setBlasThreads(1);
    return CpuBackend(2);
  }();
  return backend;
}

inline std::string shapeJson(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(s[i]);
  }
  return out + "]";
}

struct ConvCase {
  Shape input;
  Shape weight;
  const char* params;
  bool bias;
  bool constant; // weight and bias are constant graph inputs
  const char* kernel = "conv2d";
  bool residual = false; // conv2d_act's residual input "r"
};

inline std::string caseText(const ConvCase& c) {
  return std::string(c.kernel) + " " + shapeJson(c.input) + " * " + shapeJson(c.weight) + " " +
         c.params + (c.bias ? " bias" : "") + (c.residual ? " residual" : "") +
         (c.constant ? " constant" : "");
}

// The one-operation graph "y = conv2d(x, w[, b])" (or conv2d_act's, with
// [, r]) in `dtype`.
inline graph::ExpandedGraph convGraph(const ConvCase& c, const std::string& dtype,
                                      bool withResidual = true) {
  const std::string constant = c.constant ? R"(, "constant": true)" : "";
  std::string text = R"({"tapestry": "graph/v1", "name": "g", "tensors": {)";
  text += R"("x": {"dtype": ")" + dtype + R"(", "shape": )" + shapeJson(c.input) + "}, ";
  text += R"("w": {"dtype": ")" + dtype + R"(", "shape": )" + shapeJson(c.weight) + constant + "}";
  if (c.bias) {
    text += R"(, "b": {"dtype": ")" + dtype + R"(", "shape": [)" + std::to_string(c.weight[0]) +
            "]" + constant + "}";
  }
  const bool residual = c.residual && withResidual;
  if (residual) { // the result's shape
    const graph::ExpandedGraph plain = convGraph(c, dtype, false);
    text += R"(, "r": {"dtype": ")" + dtype + R"(", "shape": )" +
            shapeJson(plain.operations[0].application.outputs[0].tensors[0].shape) + "}";
  }
  text += R"(}, "operations": [{"name": "conv", "kernel": ")" + std::string(c.kernel) +
          R"(", "params": )" + std::string(c.params) +
          R"(, "inputs": {"input": "x", "weight": "w")" + (c.bias ? R"(, "bias": "b")" : "") +
          (residual ? R"(, "residual": "r")" : "") + R"(}, "outputs": {"result": "y"}}]})";
  return testing::expandText(text);
}

inline double load(const Buffer& b, std::int64_t i) {
  const std::byte* p = b.data() + i * static_cast<std::int64_t>(dtypeSize(b.dtype()));
  switch (b.dtype()) {
  case DType::Float32: {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::BFloat16: {
    BFloat16 v;
    std::memcpy(&v.bits, p, 2);
    return bfloat16ToFloat(v);
  }
  case DType::Float16: {
    Half v;
    std::memcpy(&v.bits, p, 2);
    return halfToFloat(v);
  }
  default:
    break;
  }
  double v;
  std::memcpy(&v, p, 8);
  return v;
}

// The same values in float64 (what the reference reads).
inline Buffer toFloat64(const Buffer& b) {
  Buffer out = Buffer::host(DType::Float64, b.region().shape().vector());
  for (std::int64_t i = 0; i < b.elementCount(); ++i) {
    out.elements<double>()[static_cast<std::size_t>(i)] = load(b, i);
  }
  return out;
}

inline std::vector<double> values(const Buffer& b) {
  std::vector<double> out(static_cast<std::size_t>(b.elementCount()));
  for (std::int64_t i = 0; i < b.elementCount(); ++i) {
    out[static_cast<std::size_t>(i)] = load(b, i);
  }
  return out;
}

// max |a - r| / max |r|; NaN fails.
inline double relError(const std::vector<double>& a, const std::vector<double>& r) {
  REQUIRE(a.size() == r.size());
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i])) {
      return INFINITY;
    }
    diff = std::max(diff, std::abs(a[i] - r[i]));
    scale = std::max(scale, std::abs(r[i]));
  }
  return scale == 0 ? diff : diff / scale;
}

// Error allowed against the float64 reference, relative to the result's
// largest magnitude: float32 sums of at most a few hundred products of
// numbers in [-1, 1] stay within 1e-5 (1e-4 when partial sums are rounded to
// float32 and added again); bfloat16 rounds the output (and each partial) to
// 8 bits, 2^-8 = 0.4% of the largest value, with room for a few roundings.
inline double tolerance(DType dtype, bool reductionSplit) {
  if (dtype == DType::BFloat16 || dtype == DType::Float16) {
    return 2e-2;
  }
  return reductionSplit ? 1e-4 : 1e-5;
}

// The graph's inputs drawn from `seed`, and the float64 reference's result.
struct Data {
  TensorBuffers inputs;
  Buffer expected; // float64
};

inline Data drawData(const graph::ExpandedGraph& g, const ConvCase& c, std::uint64_t seed) {
  Data d;
  d.inputs = drawInputs(g, seed);
  const graph::ExpandedGraph g64 = convGraph(c, "float64");
  TensorBuffers in64;
  for (const auto& [name, buffer] : d.inputs) {
    in64.emplace(name, toFloat64(buffer));
  }
  d.expected = evaluateGraph(cpuBackend(), g64, in64).at("y");
  return d;
}

// The buffer's values channels last (a copy) when `channelsLast`, else itself.
inline Buffer placed(const Buffer& b, bool channelsLast) {
  if (!channelsLast || b.region().rank() != 4) {
    return b;
  }
  Buffer out = cpuBackend()
                   .allocate(b.dtype(), b.region(), 0)
                   .withStrides(channelsLastStrides(b.region().shape().coords()));
  cpuBackend().copyRegion(b.view(), out.view(), b.region());
  return out;
}

} // namespace tapestry::testing::conv
