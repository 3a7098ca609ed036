// The CUDA backend's host-side planning, which needs no GPU: plan devices onto
// GPUs and streams, kernel walks (merging, broadcasting, limits), contiguous
// regions, cuBLASLt operand layouts (checked by replaying the column-major
// product on the host against a plain row-major one), pointer alignment, and
// the kernel registry against the CPU backend's.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <sstream>
#include <vector>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/cuda/cuda_ops.hpp"
#include "backends/cuda/cuda_plan.hpp"
#include "backends/cuda/cuda_probe.hpp"
#include "core/diag/error.hpp"
#include "core/driver/run_command.hpp"

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
  CHECK(cudaKernels().names().size() == 43);
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
