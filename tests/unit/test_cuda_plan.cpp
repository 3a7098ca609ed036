// The CUDA backend's host-side planning, which needs no GPU: plan devices onto
// GPUs and streams, kernel walks (merging, broadcasting, limits), contiguous
// regions, cuBLASLt operand layouts (checked by replaying the column-major
// product on the host against a plain row-major one), matmul and linear
// shards with transposed operands replayed as the kernel's cuBLASLt calls,
// pointer alignment, and the kernel registry against the CPU backend's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <vector>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/cuda/cuda_ops.hpp"
#include "backends/cuda/cuda_plan.hpp"
#include "backends/cuda/cuda_probe.hpp"
#include "backends/products.hpp"
#include "core/diag/error.hpp"
#include "core/driver/run_command.hpp"
#include "tests/unit/fixtures.hpp"

using namespace tapestry;
using namespace tapestry::cuda;

namespace {

DeviceWalk walk(std::vector<std::int64_t> extent, std::vector<std::vector<std::int64_t>> strides) {
  return makeWalk(extent, strides);
}

backend::TensorView view(std::vector<std::int64_t> start, std::vector<std::int64_t> end,
                         std::vector<std::int64_t> strides) {
  backend::TensorView v;
  static std::byte storage[8];
  v.data = storage;
  v.region = ZRange(ZPoint(std::move(start)), ZPoint(std::move(end)));
  v.strides = std::move(strides);
  v.device = 0;
  return v;
}

// cuBLASLt's D = op(A)·op(B) in column-major terms, replayed on the host.
void replayLt(const LtGemm& g, const std::vector<double>& a, const std::vector<double>& b,
              std::vector<double>& d) {
  const auto m = static_cast<std::int64_t>(g.c.rows);
  const auto n = static_cast<std::int64_t>(g.c.cols);
  const auto k = static_cast<std::int64_t>(g.a.transpose ? g.a.rows : g.a.cols);
  REQUIRE(static_cast<std::int64_t>(g.b.transpose ? g.b.cols : g.b.rows) == k);
  REQUIRE(static_cast<std::int64_t>(g.a.transpose ? g.a.cols : g.a.rows) == m);
  REQUIRE(static_cast<std::int64_t>(g.b.transpose ? g.b.rows : g.b.cols) == n);
  // cuBLASLt requires ld >= rows for column-major layouts.
  REQUIRE(g.a.ld >= static_cast<std::int64_t>(g.a.rows));
  REQUIRE(g.b.ld >= static_cast<std::int64_t>(g.b.rows));
  REQUIRE(g.c.ld >= static_cast<std::int64_t>(g.c.rows));
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        const double x = g.a.transpose ? a[static_cast<std::size_t>(p + i * g.a.ld)]
                                       : a[static_cast<std::size_t>(i + p * g.a.ld)];
        const double y = g.b.transpose ? b[static_cast<std::size_t>(j + p * g.b.ld)]
                                       : b[static_cast<std::size_t>(p + j * g.b.ld)];
        sum += x * y;
      }
      d[static_cast<std::size_t>(i + j * g.c.ld)] = sum;
    }
  }
}

struct Strided {
  std::vector<double> data;
  std::int64_t rs = 0;
  std::int64_t cs = 0;
  double at(std::int64_t i, std::int64_t j) const {
    return data[static_cast<std::size_t>(i * rs + j * cs)];
  }
};

// A rows x cols matrix stored row-major (pad extra columns) or column-major.
Strided matrix(std::int64_t rows, std::int64_t cols, bool columnMajor, std::int64_t pad,
               std::mt19937& rng) {
  Strided m;
  if (columnMajor) {
    m.rs = 1;
    m.cs = rows + pad;
    m.data.resize(static_cast<std::size_t>(m.cs * cols));
  } else {
    m.rs = cols + pad;
    m.cs = 1;
    m.data.resize(static_cast<std::size_t>(m.rs * rows));
  }
  std::uniform_int_distribution<int> dist(-4, 4);
  for (double& x : m.data) {
    x = dist(rng);
  }
  return m;
}

} // namespace

TEST_CASE("plan devices map to GPUs when there are enough, else to streams on GPU 0", "[cuda]") {
  CHECK(placeDevices(2, 4) == std::vector<DevicePlacement>{{0, 0}, {1, 0}});
  CHECK(placeDevices(4, 4) == std::vector<DevicePlacement>{{0, 0}, {1, 0}, {2, 0}, {3, 0}});
  CHECK(placeDevices(4, 1) == std::vector<DevicePlacement>{{0, 0}, {0, 1}, {0, 2}, {0, 3}});
  CHECK(placeDevices(3, 2) == std::vector<DevicePlacement>{{0, 0}, {0, 1}, {0, 2}});
  CHECK(placeDevices(0, 2) == std::vector<DevicePlacement>{{0, 0}});
}

TEST_CASE("kernel walks drop unit dims and merge contiguous ones", "[cuda]") {
  // A dense [4, 5, 6] copy is one run of 120.
  DeviceWalk w = walk({4, 5, 6}, {{30, 6, 1}, {30, 6, 1}});
  CHECK(w.count == 120);
  REQUIRE(w.rank == 1);
  CHECK(w.extent[0] == 120);
  CHECK(w.stride[0][0] == 1);
  CHECK(w.stride[1][0] == 1);

  // A column block of a wider buffer keeps its rows apart.
  w = walk({4, 3}, {{10, 1}, {3, 1}});
  REQUIRE(w.rank == 2);
  CHECK(w.extent[0] == 4);
  CHECK(w.extent[1] == 3);
  CHECK(w.stride[0][0] == 10);
  CHECK(w.stride[1][0] == 3);

  // A transpose never merges; unit dims vanish; broadcasts keep stride 0.
  w = walk({1, 4, 3}, {{99, 1, 4}, {99, 3, 1}});
  REQUIRE(w.rank == 2);
  CHECK(w.stride[0][0] == 1);
  CHECK(w.stride[0][1] == 4);
  w = walk({4, 3}, {{3, 1}, {0, 1}, {3, 1}});
  REQUIRE(w.rank == 2);
  CHECK(w.stride[1][0] == 0);
  CHECK(w.stride[1][1] == 1);

  // Empty boxes walk nothing; a single point is rank 0.
  CHECK(walk({4, 0, 3}, {{0, 0, 0}}).count == 0);
  w = walk({1, 1}, {{7, 1}});
  CHECK(w.count == 1);
  CHECK(w.rank == 0);

  // Too many separate dims is an error, not a silent truncation.
  std::vector<std::int64_t> extent(kMaxWalkDims + 1, 2);
  std::vector<std::int64_t> strides(kMaxWalkDims + 1);
  for (std::size_t d = 0; d < strides.size(); ++d) {
    strides[d] = std::int64_t{4} << (2 * (strides.size() - d)); // never contiguous
  }
  CHECK_THROWS_AS(walk(extent, {strides}), Error);
  CHECK_THROWS_AS(walk({2}, {{1, 2}}), InternalError);
}

TEST_CASE("where walks four operands: a broadcast bool condition, X, Y and result", "[cuda]") {
  // where(condition [8, 1], X [8, 5], Y [5]) -> result [8, 5].
  const DeviceWalk w = walk({8, 5}, {{1, 0}, {5, 1}, {0, 1}, {5, 1}});
  CHECK(kMaxWalkOperands == 4);
  CHECK(w.count == 40);
  REQUIRE(w.rank == 2);
  CHECK(w.stride[0][0] == 1);
  CHECK(w.stride[0][1] == 0);
  CHECK(w.stride[2][0] == 0);
  CHECK(w.stride[3][1] == 1);
  CHECK_THROWS_AS(walk({2}, {{1}, {1}, {1}, {1}, {1}}), InternalError);
}

TEST_CASE("contiguous regions are one block in memory", "[cuda]") {
  // A [6, 10] buffer: whole rows are one block, a column block is not.
  const backend::TensorView v = view({0, 0}, {6, 10}, {10, 1});
  CHECK(isContiguous(v, ZRange(ZPoint(std::vector<std::int64_t>{2, 0}),
                               ZPoint(std::vector<std::int64_t>{5, 10}))));
  CHECK_FALSE(isContiguous(
      v, ZRange(ZPoint(std::vector<std::int64_t>{2, 3}), ZPoint(std::vector<std::int64_t>{5, 7}))));
  // One row of a column block is.
  CHECK(isContiguous(
      v, ZRange(ZPoint(std::vector<std::int64_t>{2, 3}), ZPoint(std::vector<std::int64_t>{3, 7}))));
  // A transposed view is not.
  const backend::TensorView t = view({0, 0}, {10, 6}, {1, 10});
  CHECK_FALSE(isContiguous(t, t.region));
}

TEST_CASE("matrix layouts follow the CPU backend's cblas reading", "[cuda]") {
  CHECK(matrixLayout(4, 3, 3, 1) == MatrixLayout{false, 3}); // row-major
  CHECK(matrixLayout(4, 3, 8, 1) == MatrixLayout{false, 8}); // a column block
  CHECK(matrixLayout(4, 3, 1, 4) == MatrixLayout{true, 4});  // column-major
  CHECK(matrixLayout(4, 3, 1, 9) == MatrixLayout{true, 9});
  CHECK_FALSE(matrixLayout(4, 3, 6, 2).has_value());          // every other element
  CHECK_FALSE(matrixLayout(4, 3, 2, 1).has_value());          // rows overlap
  CHECK(matrixLayout(1, 5, 77, 1) == MatrixLayout{false, 5}); // one row: any row stride
  CHECK(matrixLayout(5, 1, 1, 77) == MatrixLayout{false, 1}); // one column, rows stride 1
  CHECK(matrixLayout(5, 1, 3, 77) == MatrixLayout{false, 3});
  CHECK(outputLd(4, 3, 3, 1) == std::optional<std::int64_t>(3));
  CHECK(outputLd(1, 3, 0, 1) == std::optional<std::int64_t>(3));
  CHECK_FALSE(outputLd(4, 3, 1, 4).has_value()); // column-major outputs are scattered
  CHECK_FALSE(outputLd(4, 3, 2, 1).has_value());
}

TEST_CASE("row-major products map onto one column-major cuBLASLt call", "[cuda]") {
  std::mt19937 rng(5);
  for (const auto& [M, N, K] : std::vector<std::array<std::int64_t, 3>>{
           {3, 4, 5}, {1, 7, 3}, {6, 1, 2}, {5, 5, 1}, {1, 1, 4}}) {
    for (int mask = 0; mask < 8; ++mask) {
      const bool colA = (mask & 1) != 0;
      const bool colB = (mask & 2) != 0;
      const std::int64_t pad = (mask & 4) != 0 ? 2 : 0;
      INFO("M " << M << " N " << N << " K " << K << " A " << (colA ? "col" : "row") << " B "
                << (colB ? "col" : "row") << " pad " << pad);
      const Strided A = matrix(M, K, colA, pad, rng);
      const Strided B = matrix(K, N, colB, pad, rng);
      const std::optional<MatrixLayout> la = matrixLayout(M, K, A.rs, A.cs);
      const std::optional<MatrixLayout> lb = matrixLayout(K, N, B.rs, B.cs);
      REQUIRE(la.has_value());
      REQUIRE(lb.has_value());
      const std::int64_t rsC = N + pad;
      const std::optional<std::int64_t> ldc = outputLd(M, N, rsC, 1);
      REQUIRE(ldc.has_value());
      const LtGemm g = planGemm(M, N, K, *la, *lb, *ldc);
      INFO(g.toString());
      std::vector<double> C(static_cast<std::size_t>(M * rsC + N), -1);
      replayLt(g, B.data, A.data, C); // cuBLASLt's A is our B
      for (std::int64_t i = 0; i < M; ++i) {
        for (std::int64_t j = 0; j < N; ++j) {
          double expected = 0;
          for (std::int64_t p = 0; p < K; ++p) {
            expected += A.at(i, p) * B.at(p, j);
          }
          CHECK(C[static_cast<std::size_t>(i * (M == 1 ? N : rsC) + j)] == expected);
        }
      }
    }
  }
}

namespace {

// The CUDA backend's matmul/linear kernel (productKernel,
// cuda_ops_products.cpp) on the host: the shard's planProduct, one cuBLASLt call per outer offset
// and batch element planned by matrixLayout / outputLd / planGemm and replayed in column-major
// terms, the bias added to every row. float64 views. linear_act only where its products take its
// epilogue (linearActByLt): each call then applies the tanh GELU to its own block (GELU_BIAS or
// GELU, or the backend's pass after the bias broadcast: the same numbers in float64), or reads the
// residual's block as cuBLASLt's C (residualProducts' offsets).
void emulateProduct(const backend::KernelCall& call) {
  const backend::ProductPlan plan = backend::planProduct(call);
  const backend::GemmGeometry& g = plan.gemm;
  const LinearActByLt byLt = call.op.kernel != "linear_act"
                                 ? LinearActByLt::None
                                 : linearActByLt(linearActActivation(call.op), call.hasInput(3),
                                                 clipBoundOf(backend::floatParam(call.op, "min")),
                                                 clipBoundOf(backend::floatParam(call.op, "max")));
  REQUIRE((call.op.kernel != "linear_act" || byLt != LinearActByLt::None));
  const bool geluTanh = byLt == LinearActByLt::GeluTanh;
  std::optional<backend::ProductPlan> residual;
  if (byLt == LinearActByLt::Residual) {
    residual = residualProducts(call, plan);
    REQUIRE(residual.has_value());
  }
  const auto* x = reinterpret_cast<const double*>(call.inputs[0][0].data);
  const auto* w = reinterpret_cast<const double*>(call.inputs[1][0].data);
  auto* r = reinterpret_cast<double*>(call.outputs[0][0].data);
  const double* bias =
      g.bias ? reinterpret_cast<const double*>(call.inputs[2][0].data) + plan.bias0 : nullptr;
  const std::optional<MatrixLayout> la = matrixLayout(g.M, g.K, g.rsA, g.csA);
  const std::optional<MatrixLayout> lb = matrixLayout(g.K, g.N, g.rsB, g.csB);
  const std::optional<std::int64_t> ldc = outputLd(g.M, g.N, g.rsC, g.csC);
  INFO(g.toString());
  // Transposed operands and these outputs are read and written in place.
  REQUIRE(la.has_value());
  REQUIRE(lb.has_value());
  REQUIRE(ldc.has_value());
  const LtGemm lt = planGemm(g.M, g.N, g.K, *la, *lb, *ldc);
  // Everything from an operand's first element that its layout may reach.
  auto span = [](const double* p, std::int64_t rows, std::int64_t cols, MatrixLayout l) {
    const std::int64_t n = l.transpose ? (cols - 1) * l.ld + rows : (rows - 1) * l.ld + cols;
    return std::vector<double>(p, p + n);
  };
  for (std::size_t oi = 0; oi < plan.outer.size(); ++oi) {
    const auto& o = plan.outer[oi];
    for (std::int64_t b = 0; b < g.batch; ++b) {
      const double* R = nullptr;
      std::int64_t ldr = 0;
      if (residual) {
        const backend::GemmGeometry& rg = residual->gemm;
        R = reinterpret_cast<const double*>(call.inputs[3][0].data) + residual->outer[oi][2] +
            b * rg.bsC;
        const std::optional<std::int64_t> ld = outputLd(g.M, g.N, rg.rsC, rg.csC);
        REQUIRE(ld.has_value()); // read in place as C
        ldr = *ld;
      }
      const std::vector<double> A = span(x + o[0] + b * g.bsA, g.M, g.K, *la);
      const std::vector<double> B = span(w + o[1] + b * g.bsB, g.K, g.N, *lb);
      std::vector<double> D(static_cast<std::size_t>((g.M - 1) * *ldc + g.N), std::nan(""));
      replayLt(lt, B, A, D); // cuBLASLt's A is our B
      double* C = r + o[2] + b * g.bsC;
      for (std::int64_t i = 0; i < g.M; ++i) {
        for (std::int64_t j = 0; j < g.N; ++j) {
          const double sum = D[static_cast<std::size_t>(i * *ldc + j)] +
                             (R != nullptr ? R[i * ldr + j] : 0.0) +
                             (bias != nullptr ? bias[j * g.biasStride] : 0.0);
          C[i * g.rsC + j * g.csC] =
              geluTanh
                  ? 0.5 * sum *
                        (1 + std::tanh(std::sqrt(2 / M_PI) * (sum + 0.044715 * sum * sum * sum)))
                  : sum;
        }
      }
    }
  }
}

} // namespace

namespace {

// Every shard of `op` in `shards`, through `emulate` (a CUDA kernel's plan
// replayed on the host) and through the CPU backend, on the same random
// integer-valued float64 inputs, into NaN-filled outputs: the same numbers in
// the shard's selection. Returns how many shards ran.
std::size_t compareWithCpu(const graph::Operation& op, const std::vector<ZRange>& shards,
                           std::mt19937& rng,
                           const std::function<void(const backend::KernelCall&)>& emulate) {
  backend::CpuBackend cpu(1);
  std::uniform_int_distribution<int> dist(-4, 4);
  std::vector<backend::Buffer> inputs;
  std::vector<backend::PortViews> ins;
  inputs.reserve(op.application.inputs.size());
  for (const auto& port : op.application.inputs) {
    if (port.tensors.empty()) { // an optional input not given
      ins.emplace_back();
      continue;
    }
    inputs.push_back(backend::Buffer::host(backend::DType::Float64, port.tensors[0].shape));
    for (double& v : inputs.back().elements<double>()) {
      v = dist(rng);
    }
    ins.push_back({inputs.back().view()});
  }
  const std::vector<std::int64_t>& shape = op.application.outputs[0].tensors[0].shape;
  for (const ZRange& shard : shards) {
    INFO("shard " << shard.toString());
    const backend::Buffer emulated = backend::Buffer::host(backend::DType::Float64, shape);
    const backend::Buffer expected = backend::Buffer::host(backend::DType::Float64, shape);
    std::fill(emulated.elements<double>().begin(), emulated.elements<double>().end(), std::nan(""));
    std::fill(expected.elements<double>().begin(), expected.elements<double>().end(), std::nan(""));
    std::vector<backend::PortViews> outE = {{emulated.view()}};
    std::vector<backend::PortViews> outC = {{expected.view()}};
    emulate(backend::KernelCall{op, shard, ins, outE, 0});
    cpu.runKernel(op, shard, ins, outC, 0);
    const ZRange sel = backend::selection(op.application.outputs[0].ipfs[0], shard, shape);
    std::size_t checked = 0;
    sel.forEachPoint([&](const ZPoint& p) {
      const double* e = emulated.view().at<double>(p.coords());
      const double* c = expected.view().at<double>(p.coords());
      CHECK(*e == Approx(*c).margin(1e-9));
      ++checked;
    });
    CHECK(checked == static_cast<std::size_t>(sel.size()));
  }
  return shards.size();
}

// The whole index space and both halves of each dim of extent 2 or more.
std::vector<ZRange> wholeAndHalves(const ZRange& index) {
  std::vector<ZRange> shards = {index};
  for (std::size_t d = 0; d < index.rank(); ++d) {
    if (index.extent(d) > 1) {
      for (const ZRange& half : index.split(d, 2)) {
        shards.push_back(half);
      }
    }
  }
  return shards;
}

} // namespace

TEST_CASE("matmul and linear with transposed operands: the CUDA kernel's gemms, replayed",
          "[cuda]") {
  // Every shard that halves one index dim (k included), through the emulated
  // CUDA kernel and through the CPU backend, into NaN-filled outputs: the
  // same numbers in the shard's selection.
  const std::vector<std::string> graphs = {
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float64", "shape": [2, 5, 3]}, "w": {"dtype": "float64", "shape": [4, 5]}},
          "operations": [{"name": "op", "kernel": "matmul", "params": {"transpose_x": true, "transpose_w": true}, "inputs": {"X": "x", "W": "w"}}]})",
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float64", "shape": [2, 3, 6]}, "w": {"dtype": "float64", "shape": [2, 4, 6]}},
          "operations": [{"name": "op", "kernel": "matmul", "params": {"transpose_w": true}, "inputs": {"X": "x", "W": "w"}}]})",
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float64", "shape": [6, 4]}, "w": {"dtype": "float64", "shape": [6, 5]}},
          "operations": [{"name": "op", "kernel": "matmul", "params": {"transpose_x": true}, "inputs": {"X": "x", "W": "w"}}]})",
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float64", "shape": [2, 6, 3]}, "w": {"dtype": "float64", "shape": [5, 6]}, "b": {"dtype": "float64", "shape": [5]}},
          "operations": [{"name": "op", "kernel": "linear", "params": {"transpose_x": true, "transpose_w": true}, "inputs": {"X": "x", "W": "w", "bias": "b"}}]})",
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float64", "shape": [3, 6]}, "w": {"dtype": "float64", "shape": [5, 6]}, "b": {"dtype": "float64", "shape": [5]}},
          "operations": [{"name": "op", "kernel": "linear", "params": {"transpose_w": true}, "inputs": {"X": "x", "W": "w", "bias": "b"}}]})",
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float64", "shape": [2, 6, 3]}, "w": {"dtype": "float64", "shape": [5, 6]}, "b": {"dtype": "float64", "shape": [5]}},
          "operations": [{"name": "op", "kernel": "linear_act", "params": {"transpose_x": true, "transpose_w": true, "gelu_tanh": true}, "inputs": {"X": "x", "W": "w", "bias": "b"}}]})",
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float64", "shape": [2, 3, 6]}, "w": {"dtype": "float64", "shape": [6, 5]}},
          "operations": [{"name": "op", "kernel": "linear_act", "params": {"gelu_tanh": true}, "inputs": {"X": "x", "W": "w"}}]})",
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float64", "shape": [2, 3, 6]}, "w": {"dtype": "float64", "shape": [5, 6]}, "b": {"dtype": "float64", "shape": [5]}, "r": {"dtype": "float64", "shape": [2, 3, 5]}},
          "operations": [{"name": "op", "kernel": "linear_act", "params": {"transpose_w": true}, "inputs": {"X": "x", "W": "w", "bias": "b", "residual": "r"}}]})",
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float64", "shape": [2, 6, 3]}, "w": {"dtype": "float64", "shape": [6, 5]}, "r": {"dtype": "float64", "shape": [2, 3, 5]}},
          "operations": [{"name": "op", "kernel": "linear_act", "params": {"transpose_x": true}, "inputs": {"X": "x", "W": "w", "residual": "r"}}]})"};
  std::mt19937 rng(11);
  for (const std::string& text : graphs) {
    const graph::ExpandedGraph g = testing::expandText(text);
    const graph::Operation& op = g.operations[0];
    INFO(op.kernel << " " << op.application.params.dump());
    compareWithCpu(op, wholeAndHalves(op.application.index), rng, emulateProduct);
  }
}

TEST_CASE("cuBLASLt's epilogue takes a packed, aligned bias and the tanh GELU over it", "[cuda]") {
  using backend::DType;
  for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    INFO(backend::dtypeName(d));
    const bool half = d == DType::Float16 || d == DType::BFloat16;
    CHECK(ltEpilogue(d, false, 0, 0, false) == LtEpilogue::None);
    CHECK(ltEpilogue(d, true, 1, 16, false) == LtEpilogue::Bias);
    CHECK(ltEpilogue(d, true, 1, 256, false) == LtEpilogue::Bias);
    CHECK(ltEpilogue(d, true, 1, 8, false) == LtEpilogue::None);  // a shard's bias off 16 bytes
    CHECK(ltEpilogue(d, true, 2, 16, false) == LtEpilogue::None); // not packed
    // The GELU in 16-bit types only; float32 and float64 keep the exact pass.
    CHECK(ltEpilogue(d, false, 0, 0, true) == (half ? LtEpilogue::Gelu : LtEpilogue::None));
    CHECK(ltEpilogue(d, true, 1, 32, true) == (half ? LtEpilogue::GeluBias : LtEpilogue::Bias));
    // A bias the epilogue cannot take is broadcast into D (beta = 1): then the
    // GELU is the backend's pass too, never cuBLASLt's over beta·C.
    CHECK(ltEpilogue(d, true, 1, 4, true) == LtEpilogue::None);
    CHECK(ltEpilogue(d, true, 3, 64, true) == LtEpilogue::None);
  }
  CHECK(epilogueAddsBias(LtEpilogue::GeluBias));
  CHECK_FALSE(epilogueAddsBias(LtEpilogue::Gelu));
  CHECK(epilogueAppliesGelu(LtEpilogue::Gelu));
  CHECK_FALSE(epilogueAppliesGelu(LtEpilogue::Bias));
}

TEST_CASE("linear_act's products take its epilogue when it is the tanh GELU or the residual alone",
          "[cuda]") {
  const double inf = std::numeric_limits<double>::infinity();
  using enum LinearActByLt;
  CHECK(linearActByLt(EpilogueAct::GeluTanh, false, -inf, inf) == GeluTanh);
  CHECK(linearActByLt(EpilogueAct::None, true, -inf, inf) == Residual);
  CHECK(linearActByLt(EpilogueAct::GeluTanh, true, -inf, inf) == None); // both: one pass
  CHECK(linearActByLt(EpilogueAct::GeluTanh, false, -1, inf) == None);  // a clip
  CHECK(linearActByLt(EpilogueAct::None, true, -inf, 6) == None);
  CHECK(linearActByLt(EpilogueAct::Gelu, false, -inf, inf) == None); // erf, not tanh
  CHECK(linearActByLt(EpilogueAct::Silu, false, -inf, inf) == None);
  CHECK(linearActByLt(EpilogueAct::Silu, true, -inf, inf) == None);
  CHECK(linearActByLt(EpilogueAct::None, false, 0, inf) == None); // ReLU keeps NaN
  CHECK(clipBoundOf(1.7976931348623157e308) == inf);
  CHECK(clipBoundOf(-1.7976931348623157e308) == -inf);
  CHECK(clipBoundOf(6) == 6);
  const graph::ExpandedGraph g = testing::expandText(
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float32", "shape": [3, 6]}, "w": {"dtype": "float32", "shape": [6, 5]}},
          "operations": [{"name": "a", "kernel": "linear_act", "params": {"gelu_tanh": true}, "inputs": {"X": "x", "W": "w"}},
                         {"name": "b", "kernel": "linear_act", "params": {"gelu": true}, "inputs": {"X": "x", "W": "w"}},
                         {"name": "c", "kernel": "linear_act", "params": {"silu": true}, "inputs": {"X": "x", "W": "w"}},
                         {"name": "d", "kernel": "linear_act", "params": {"min": 0}, "inputs": {"X": "x", "W": "w"}}]})");
  CHECK(linearActActivation(g.operations[0]) == EpilogueAct::GeluTanh);
  CHECK(linearActActivation(g.operations[1]) == EpilogueAct::Gelu);
  CHECK(linearActActivation(g.operations[2]) == EpilogueAct::Silu);
  CHECK(linearActActivation(g.operations[3]) == EpilogueAct::None);
}

TEST_CASE("pointer alignment is the largest power of two up to 256", "[cuda]") {
  alignas(256) static std::byte block[512];
  CHECK(pointerAlignment(block) == 256);
  CHECK(pointerAlignment(block + 2) == 2);
  CHECK(pointerAlignment(block + 48) == 16);
  CHECK(pointerAlignment(block + 1) == 1);
  CHECK(pointerAlignment(block + 256 + 128) == 128);
}

TEST_CASE("dtypes map onto the kernels' element types", "[cuda]") {
  CHECK(elementType(backend::DType::Float32) == ElementType::Float32);
  CHECK(elementType(backend::DType::Float64) == ElementType::Float64);
  CHECK(elementType(backend::DType::Float16) == ElementType::Float16);
  CHECK(elementType(backend::DType::BFloat16) == ElementType::BFloat16);
  CHECK(elementType(backend::DType::Int32) == ElementType::Int32);
  CHECK(elementType(backend::DType::Int64) == ElementType::Int64);
  CHECK(elementType(backend::DType::Bool) == ElementType::Bool);
}

TEST_CASE("the CUDA backend registers every kernel the CPU backend has", "[cuda]") {
  backend::CpuBackend cpu(1);
  CHECK(cudaKernels().names() == cpu.kernelNames());
  CHECK(cudaKernels().names().size() == 102); // argmax, argmin, attention*, rope: from their bodies
}

TEST_CASE("buffers share contiguous blocks of rows without copying", "[cuda]") {
  const backend::Buffer b =
      backend::Buffer::host(backend::DType::Float32, ZRange::fromShape(ZPoint({6, 4, 5})), 3);
  auto range = [](std::vector<std::int64_t> start, std::vector<std::int64_t> end) {
    return ZRange(ZPoint(std::move(start)), ZPoint(std::move(end)));
  };
  // Rows 2..4 of every column: one block, 40 elements in.
  const backend::Buffer rows = b.share(range({2, 0, 0}, {4, 4, 5}), 1);
  REQUIRE(rows.data() != nullptr);
  CHECK(rows.data() == b.data() + 40 * 4);
  CHECK(rows.device() == 1);
  CHECK(rows.region() == range({2, 0, 0}, {4, 4, 5}));
  // Part of one row is contiguous too; a column block is not.
  CHECK(b.share(range({1, 2, 0}, {2, 3, 5}), 0).data() == b.data() + (20 + 10) * 4);
  CHECK(b.share(range({1, 2, 1}, {2, 3, 4}), 0).data() == b.data() + (20 + 10 + 1) * 4);
  CHECK(b.share(range({0, 1, 0}, {6, 3, 5}), 0).data() == nullptr);
  CHECK(b.share(range({0, 0, 0}, {6, 4, 6}), 0).data() == nullptr); // outside
  CHECK(b.share(ZRange::empty(3), 0).data() == nullptr);
  // The CPU backend never shares (residents are copies there).
  backend::CpuBackend cpu(2);
  CHECK(cpu.shareRegion(b, range({0, 0, 0}, {1, 4, 5}), 0).data() == nullptr);
}

TEST_CASE("run and bench wire --backend cuda and --tf32", "[cuda]") {
  driver::RunConfig run;
  run.planPath = std::string(TAPESTRY_TESTDATA_DIR) + "/plans/mm_relu_2dev.json";
  run.quiet = true;
  run.tf32 = true;
  std::ostringstream out;
  std::ostringstream err;
  CHECK_THROWS_AS(driver::runCommand(run, out, err), UsageError); // --tf32 needs cuda
  if (!probe().available) {
    run.backend = "cuda";
    try {
      driver::runCommand(run, out, err);
      FAIL("expected BackendUnavailable");
    } catch (const BackendUnavailable& e) {
      CHECK(e.exitCode() == ExitCode::BackendUnavailable);
      CHECK(e.message().rfind("no CUDA GPU found", 0) == 0);
    }
    driver::BenchConfig bench;
    bench.planPath = run.planPath;
    bench.backend = "cuda";
    bench.quiet = true;
    CHECK_THROWS_AS(driver::benchCommand(bench, out, err), BackendUnavailable);
  }
}

TEST_CASE("linear_act's residual is read as cuBLASLt's C only where it walks like the result",
          "[cuda]") {
  const graph::ExpandedGraph g = testing::expandText(
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float64", "shape": [2, 3, 6]}, "w": {"dtype": "float64", "shape": [6, 5]}, "r": {"dtype": "float64", "shape": [2, 3, 5]}},
          "operations": [{"name": "op", "kernel": "linear_act", "inputs": {"X": "x", "W": "w", "residual": "r"}}]})");
  const graph::Operation& op = g.operations[0];
  const backend::Buffer x = backend::Buffer::host(backend::DType::Float64, {2, 3, 6});
  const backend::Buffer w = backend::Buffer::host(backend::DType::Float64, {6, 5});
  const backend::Buffer result = backend::Buffer::host(backend::DType::Float64, {2, 3, 5});
  // The residual inside a [2, 4, 5] block: rows of one batch element 5 apart
  // as the result's, batch elements 20 apart where the result's are 15.
  const backend::Buffer padded = backend::Buffer::host(backend::DType::Float64, {2, 4, 5});
  backend::TensorView apart = padded.view();
  apart.region = ZRange(ZPoint({0, 0, 0}), ZPoint({2, 3, 5}));
  const std::vector<backend::PortViews> ins = {
      {x.view()}, {w.view()}, {backend::TensorView{}}, {result.view()}};
  const std::vector<backend::PortViews> insApart = {
      {x.view()}, {w.view()}, {backend::TensorView{}}, {apart}};
  const std::vector<backend::PortViews> outs = {{result.view()}};
  const ZRange& index = op.application.index;
  {
    const backend::KernelCall call{op, index, ins, outs, 0};
    const backend::ProductPlan plan = backend::planProduct(call);
    CHECK(plan.gemm.M == 6); // the batch folds into the rows
    const std::optional<backend::ProductPlan> r = residualProducts(call, plan);
    REQUIRE(r.has_value());
    CHECK(r->gemm.rsC == 5);
    CHECK(r->gemm.csC == 1);
    CHECK(r->outer == plan.outer);
  }
  {
    // The result's rows fold the batch; the residual's cannot: a pass adds it.
    const backend::KernelCall call{op, index, insApart, outs, 0};
    const backend::ProductPlan plan = backend::planProduct(call);
    CHECK_FALSE(residualProducts(call, plan).has_value());
  }
  {
    const std::vector<backend::PortViews> none = {{x.view()}, {w.view()}, {}, {}};
    const backend::KernelCall call{op, index, none, outs, 0};
    CHECK_FALSE(residualProducts(call, backend::planProduct(call)).has_value());
  }
}

namespace {

// The CUDA backend's conv2d / conv2d_act shard as products (convAsProducts,
// cuda_ops_conv.cpp) on the host, float64 views: planConvGemm's weights (in
// place, or gathered dense), per batch element the im2col block by its
// definition and the planned cuBLASLt product replayed, the bias on the rows,
// the output in place or scattered from a dense block, then the residual and
// the clip.
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
        out[convOffsetOf(output, n, p.begin[1] + o, oh, ow)] = std::min(std::max(v, p.lo), p.hi);
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
          "operations": [{"name": "op", "kernel": "conv2d_act", "params": {"padding": [1, 1], "min": -20, "max": 25}, "inputs": {"input": "x", "weight": "w", "bias": "b", "residual": "r"}}]})"};
  std::mt19937 rng(13);
  std::size_t shardsRun = 0;
  for (const std::string& text : graphs) {
    const graph::ExpandedGraph g = testing::expandText(text);
    const graph::Operation& op = g.operations[0];
    INFO(op.kernel << " " << op.application.params.dump());
    std::vector<ZRange> shards;
    for (const ZRange& shard : wholeAndHalves(op.application.index)) {
      // conv2d_act's shards hold the whole sum (no combine).
      if (op.kernel != "conv2d_act" || (shard.extent(4) == op.application.index.extent(4) &&
                                        shard.extent(5) == op.application.index.extent(5) &&
                                        shard.extent(6) == op.application.index.extent(6))) {
        shards.push_back(shard);
      }
    }
    shardsRun += compareWithCpu(op, shards, rng, emulateConv);
  }
  CHECK(shardsRun >= 30);
}

namespace {

// The CUDA backend's direct conv2d kernel (conv2dKernel, kernels_nn.cu: a
// thread per output element of the shard) replayed on the host, float64
// views: its sum over the shard's (C, KH, KW) box from the bias, input
// channel (o div og)*gmul + c, taps in the padding skipped.
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
          out[convOffsetOf(output, n, o, oh, ow)] = acc;
        }
}

} // namespace

TEST_CASE("grouped conv2d shards through the direct kernel: convParams' channel map, replayed",
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
          "operations": [{"name": "op", "kernel": "conv2d_grouped", "params": {"padding": [1, 0], "stride": [2, 2], "dilation": [1, 2], "groups": 2}, "inputs": {"input": "x", "weight": "w"}}]})"};
  std::mt19937 rng(17);
  std::size_t shardsRun = 0;
  for (const std::string& text : graphs) {
    const graph::ExpandedGraph g = testing::expandText(text);
    const graph::Operation& op = g.operations[0];
    INFO(op.kernel << " " << op.application.params.dump());
    shardsRun += compareWithCpu(op, wholeAndHalves(op.application.index), rng, emulateDirectConv);
  }
  CHECK(shardsRun >= 25);
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
