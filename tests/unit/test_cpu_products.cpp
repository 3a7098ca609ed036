// Which engine the CPU backend's matrix products run on (backends/cpu/
// gemm_engine.hpp): oneDNN for float32, with a constant W kept in oneDNN's own
// layout, OpenBLAS for float64, float32 blocks for float16, loops for
// integers. The numbers of every engine are checked in test_cpu_kernels.cpp
// (naive reference, shards, bodies, constant W, re-runs); this file pins down
// the choice, which docs/cpu-products.md describes. A file of its own: the
// kernel tests' cpu() helper and the cpu namespace would clash.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/cpu_isa.hpp"
#include "backends/cpu/gemm_engine.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/loader.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"

using namespace tapestry;
using Catch::Matchers::StartsWith;

namespace {

// The engine of an unsharded matmul [m, k] x W [n, k] (transpose_w) of
// `dtype`, W's view constant or not.
std::string engineOf(const std::string& dtype, bool constant, std::int64_t m = 16,
                     std::int64_t k = 64, std::int64_t n = 192) {
  static const metakernel::MetakernelLibrary lib = metakernel::MetakernelLibrary::standard();
  const std::string text =
      R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": ")" + dtype +
      R"(", "shape": [)" + std::to_string(m) + ", " + std::to_string(k) +
      R"(]}, "w": {"dtype": ")" + dtype + R"(", "shape": [)" + std::to_string(n) + ", " +
      std::to_string(k) +
      R"(]}}, "operations": [{"name": "op", "kernel": "matmul", "params": {"transpose_w": true}, "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "y"}}]})";
  const json::Document doc = json::Document::parse(SourceFile("g.json", text));
  const graph::ExpandedGraph g = graph::expand(graph::decodeGraph(json::Value(doc)), lib);
  const graph::Operation& op = g.operations[0];
  const backend::DType dt = backend::parseDType(dtype);
  const backend::Buffer x = backend::Buffer::host(dt, {m, k});
  const backend::Buffer w = backend::Buffer::host(dt, {n, k});
  const backend::Buffer y = backend::Buffer::host(dt, {m, n});
  std::vector<backend::PortViews> ins = {{x.view()}, {w.view()}};
  ins[1][0].constant = constant;
  std::vector<backend::PortViews> outs = {{y.view()}};
  return backend::cpu::productEngineName(
      backend::KernelCall{op, op.application.index, ins, outs, 0});
}

} // namespace

TEST_CASE("products: which engine runs what", "[cpu][kernel][products]") {
  backend::CpuBackend::setBlasThreads(1);
  // float32 on oneDNN (any x86-64 CPU has one of its jit kernels for a plain
  // layout), W reordered into oneDNN's layout when constant.
  CHECK_THAT(engineOf("float32", false), StartsWith("onednn "));
  CHECK_THAT(engineOf("float32", true), StartsWith("onednn packed "));
  CHECK(engineOf("float64", false) == "openblas dgemm");
  // float16 through float32 blocks (packed or not as oneDNN's kernel for this
  // CPU prefers: without AVX-512 it reads the dense blocks as they are).
  CHECK_THAT(engineOf("float16", true), StartsWith("float32 blocks, onednn "));
  CHECK(engineOf("int32", false) == "integer loops");
  // A W whose rows are 2 KiB apart (W [512, k] stored [n, k] packed as [k,
  // n]; W [n, 512] read as stored by 32 rows or more): without AVX-512, where
  // oneDNN's layouts for it are plain, its rows padded apart, once when
  // constant, on every run when not (docs/cpu-products.md).
  if (!backend::cpuHasIsa(backend::CpuIsa::Avx512)) {
    CHECK_THAT(engineOf("float32", true, 16, 64, 512), StartsWith("onednn packed padded "));
    CHECK_THAT(engineOf("float32", false, 64, 512, 96), StartsWith("onednn repacked padded "));
    CHECK_THAT(engineOf("float32", false, 16, 512, 96), StartsWith("onednn gemm"));
  }
  // bfloat16: oneDNN where the CPU has AVX512 (native bfloat16 or emulated),
  // float32 blocks otherwise.
  const std::string bf16 = engineOf("bfloat16", false);
  INFO(bf16);
  CHECK((bf16.rfind("onednn ", 0) == 0 || bf16.rfind("float32 blocks, ", 0) == 0));
}

TEST_CASE("products: a large one splits into parts when a call may use two threads",
          "[cpu][kernel][products]") {
  // [1024, 256] x [256, 128] (2^26 flops, the least that splits): along m,
  // every part reading the whole W in place; at one thread, one engine.
  backend::CpuBackend::setBlasThreads(2);
  CHECK_THAT(engineOf("float32", true, 1024, 256, 128), StartsWith("2 parts along m of onednn "));
  // Smaller products stay on one thread (waking a helper costs more than it saves).
  CHECK_THAT(engineOf("float32", true, 16, 512, 256), StartsWith("onednn packed "));
  // At most 8 rows against 1 MiB or more of constant W: panel products on the
  // team where the CPU has AVX-512; one row against such a W stored [n, k] (a
  // classifier) elsewhere, or W not constant: dot products of x with W's
  // rows, on the team; below 1 MiB, oneDNN.
  const bool avx512 = backend::activeIsa() == backend::CpuIsa::Avx512;
  CHECK(engineOf("float32", true, 1, 2048, 1000) ==
        (avx512 ? "panel products on the team" : "dot products on the team"));
  CHECK((engineOf("float32", true, 8, 1024, 512) == "panel products on the team") == avx512);
  CHECK_THAT(engineOf("float32", true, 9, 1024, 512), !StartsWith("panel"));
  CHECK(engineOf("float32", false, 1, 512, 512) == "dot products on the team");
  CHECK_THAT(engineOf("float32", true, 1, 256, 512), StartsWith("onednn packed "));
  // Few rows against 8 MiB of W or more: one engine on the kernel threads'
  // team, not parts that would each read all of W; 512 rows split again.
  CHECK_THAT(engineOf("float32", true, 256, 2048, 1024),
             StartsWith("onednn ") && !Catch::Matchers::Contains("parts"));
  CHECK_THAT(engineOf("float32", true, 512, 2048, 1024), StartsWith("2 parts along m of "));
  // The same products with W in place: the same at two threads (OpenBLAS's
  // threads would fight the team's); at one, on OpenBLAS where it runs
  // AVX-512 kernels.
  CHECK_THAT(engineOf("float32", false, 256, 2048, 1024),
             StartsWith("onednn ") && !Catch::Matchers::Contains("parts"));
  CHECK_THAT(engineOf("float32", false, 512, 2048, 1024), StartsWith("2 parts along m of "));
  backend::CpuBackend::setBlasThreads(1);
  if (backend::cpu::blasHasAvx512Kernels()) {
    CHECK(engineOf("float32", false, 512, 2048, 1024) == "openblas sgemm");
  } else {
    CHECK_THAT(engineOf("float32", false, 512, 2048, 1024), StartsWith("onednn repacked "));
  }
  CHECK_THAT(engineOf("float32", true, 1024, 256, 128), StartsWith("onednn packed "));
}

TEST_CASE("products: split parts write exactly their share, at two threads and at one",
          "[cpu][kernel][products]") {
  // makeSplitGemm on small products (any size splits when asked): along the
  // batch, m and n (a single row, W constant: each part packs its columns),
  // with a bias and a strided result, against plain loops.
  using backend::cpu::WeightUse;
  struct Case {
    const char* along;
    std::int64_t batch, M, N, K;
    WeightUse weights;
  };
  for (const Case& c :
       {Case{"batch", 3, 5, 9, 7, WeightUse::InPlace}, Case{"m", 1, 9, 6, 5, WeightUse::Packed},
        Case{"n", 1, 1, 40, 8, WeightUse::Packed}}) {
    INFO("along " << c.along);
    backend::GemmGeometry g;
    g.batch = c.batch;
    g.M = c.M;
    g.N = c.N;
    g.K = c.K;
    g.rsA = c.K;
    g.csA = 1;
    g.bsA = c.M * c.K;
    g.rsB = 1; // B stored transposed, [N, K]
    g.csB = c.K;
    g.bsB = c.N * c.K;
    g.rsC = c.N + 3; // rows padded
    g.csC = 1;
    g.bsC = c.M * g.rsC;
    g.bias = true;
    g.biasStride = 1;
    std::vector<float> a(static_cast<std::size_t>(c.batch * g.bsA));
    std::vector<float> b(static_cast<std::size_t>(c.batch * g.bsB));
    std::vector<float> bias(static_cast<std::size_t>(c.N));
    for (std::size_t i = 0; i < a.size(); ++i) {
      a[i] = static_cast<float>(static_cast<int>(i * 7 % 11) - 5);
    }
    for (std::size_t i = 0; i < b.size(); ++i) {
      b[i] = static_cast<float>(static_cast<int>(i * 5 % 9) - 4);
    }
    for (std::size_t i = 0; i < bias.size(); ++i) {
      bias[i] = static_cast<float>(i);
    }
    const std::unique_ptr<backend::cpu::GemmEngine> e =
        backend::cpu::makeSplitGemm(backend::DType::Float32, g, c.weights, 2);
    REQUIRE(e != nullptr);
    CHECK_THAT(e->name(), StartsWith(std::string("2 parts along ") + c.along + " of onednn "));
    for (const int threads : {2, 1}) {
      INFO(threads << " threads");
      backend::CpuBackend::setBlasThreads(threads);
      std::vector<float> out(static_cast<std::size_t>(c.batch * g.bsC), -99.0f);
      e->run(reinterpret_cast<const std::byte*>(a.data()),
             reinterpret_cast<const std::byte*>(b.data()), reinterpret_cast<std::byte*>(out.data()),
             reinterpret_cast<const std::byte*>(bias.data()));
      for (std::int64_t p = 0; p < c.batch; ++p) {
        for (std::int64_t i = 0; i < c.M; ++i) {
          for (std::int64_t j = 0; j < g.rsC; ++j) {
            const float got = out[static_cast<std::size_t>(p * g.bsC + i * g.rsC + j)];
            if (j >= c.N) {
              CHECK(got == -99.0f); // the padding is not written
              continue;
            }
            float want = bias[static_cast<std::size_t>(j)];
            for (std::int64_t k = 0; k < c.K; ++k) {
              want += a[static_cast<std::size_t>(p * g.bsA + i * c.K + k)] *
                      b[static_cast<std::size_t>(p * g.bsB + j * c.K + k)];
            }
            CHECK(got == want); // small integers: exact
          }
        }
      }
    }
  }
  backend::CpuBackend::setBlasThreads(1);
}

TEST_CASE("products: a W read in place by many rows is reordered on every call",
          "[cpu][kernel][products]") {
  // Below the FLOPs that may go to OpenBLAS: [512, 256] x [256, 128] (2^25
  // flops) has kRepackRows rows, so oneDNN reorders W into its own layout
  // before every product; 256 rows read it as it lies; a constant W is
  // packed once. The numbers are checked in test_cpu_kernels.cpp.
  backend::CpuBackend::setBlasThreads(1);
  REQUIRE(backend::cpu::kRepackRows == 512);
  CHECK_THAT(engineOf("float32", false, 512, 256, 128), StartsWith("onednn repacked "));
  CHECK_THAT(engineOf("float32", false, 256, 256, 128),
             StartsWith("onednn ") && !Catch::Matchers::Contains("packed"));
  CHECK_THAT(engineOf("float32", true, 512, 256, 128), StartsWith("onednn packed "));
}

TEST_CASE("products: linear_act without a residual applies its activation in oneDNN's product",
          "[cpu][kernel][products]") {
  // oneDNN's eltwise post-ops (gelu_erf, then relu or clip): no pass over the
  // result of its own. With a residual, the product, then one pass. The
  // numbers: test_cpu_kernels.cpp's linear_act cases.
  backend::CpuBackend::setBlasThreads(1);
  static const metakernel::MetakernelLibrary lib = metakernel::MetakernelLibrary::standard();
  const auto nameOf = [&](const std::string& params, bool residual) {
    const std::string text =
        std::string(
            R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float32", "shape": [16, 64]}, "w": {"dtype": "float32", "shape": [64, 32]}, "b": {"dtype": "float32", "shape": [32]}, "r": {"dtype": "float32", "shape": [16, 32]}}, "operations": [{"name": "op", "kernel": "linear_act", "params": )") +
        params + R"(, "inputs": {"X": "x", "W": "w", "bias": "b")" +
        (residual ? R"(, "residual": "r")" : "") + R"(}, "outputs": {"result": "y"}}]})";
    const json::Document doc = json::Document::parse(SourceFile("g.json", text));
    const graph::ExpandedGraph g = graph::expand(graph::decodeGraph(json::Value(doc)), lib);
    const graph::Operation& op = g.operations[0];
    const backend::Buffer x = backend::Buffer::host(backend::DType::Float32, {16, 64});
    const backend::Buffer w = backend::Buffer::host(backend::DType::Float32, {64, 32});
    const backend::Buffer b = backend::Buffer::host(backend::DType::Float32, {32});
    const backend::Buffer r = backend::Buffer::host(backend::DType::Float32, {16, 32});
    const backend::Buffer y = backend::Buffer::host(backend::DType::Float32, {16, 32});
    std::vector<backend::PortViews> ins = {{x.view()}, {w.view()}, {b.view()}};
    if (residual) {
      ins.push_back({r.view()});
    }
    std::vector<backend::PortViews> outs = {{y.view()}};
    return backend::cpu::productEngineName(
        backend::KernelCall{op, op.application.index, ins, outs, 0});
  };
  using Catch::Matchers::Contains;
  using Catch::Matchers::EndsWith;
  CHECK_THAT(nameOf(R"({"gelu": true})", false), StartsWith("onednn ") && EndsWith(" + gelu_erf"));
  CHECK_THAT(nameOf(R"({"gelu_tanh": true})", false), EndsWith(" + gelu_tanh"));
  CHECK_THAT(nameOf(R"({"silu": true})", false), EndsWith(" + silu"));
  CHECK_THAT(nameOf(R"({"min": 0})", false), EndsWith(" + relu"));
  CHECK_THAT(nameOf(R"({"gelu": true, "min": -1, "max": 1})", false), EndsWith(" + gelu_erf clip"));
  CHECK_THAT(nameOf("{}", false), !Contains("+") && !Contains("epilogue"));
  CHECK_THAT(nameOf(R"({"gelu": true})", true),
             !Contains("gelu_erf") && EndsWith(", then an epilogue pass"));
}
