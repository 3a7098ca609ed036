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
  CHECK_THAT(engineOf("float16", true), StartsWith("float32 blocks, onednn packed "));
  CHECK(engineOf("int32", false) == "integer loops");
  // bfloat16: oneDNN where the CPU has AVX512 (native bfloat16 or emulated),
  // float32 blocks otherwise.
  const std::string bf16 = engineOf("bfloat16", false);
  INFO(bf16);
  CHECK((bf16.rfind("onednn ", 0) == 0 || bf16.rfind("float32 blocks, ", 0) == 0));
}

TEST_CASE("products: a large one splits into parts when a call may use two threads",
          "[cpu][kernel][products]") {
  // [1, 2048] x [2048, 1000] (resnet50's classifier, 8 MB of weights): along n,
  // each part packing its own columns; at one thread, one engine.
  backend::CpuBackend::setBlasThreads(2);
  CHECK_THAT(engineOf("float32", true, 1, 2048, 1000),
             StartsWith("2 parts along n of onednn packed "));
  // Small products stay on one thread (a team costs more than it saves).
  CHECK_THAT(engineOf("float32", true), StartsWith("onednn packed "));
  backend::CpuBackend::setBlasThreads(1);
  CHECK_THAT(engineOf("float32", true, 1, 2048, 1000), StartsWith("onednn packed "));
}
