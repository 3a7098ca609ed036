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
#include "tests/unit/cuda_replay.hpp"
#include "tests/unit/fixtures.hpp"

using namespace tapestry;
using namespace tapestry::cuda;
using namespace tapestry::testing::cuda_replay;

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
