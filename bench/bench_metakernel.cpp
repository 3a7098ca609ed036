// Metakernel application throughput: applies templates to many operations and
// prints operations per second. Application only evaluates the ASTs parsed at load
// (the "metakernel: application never parses" test checks application.cpp has no
// reference to a parser); here the loads are timed separately for comparison.
//
//   bench_metakernel [OPERATIONS]   (default 100000)
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

#include "core/metakernel/application.hpp"
#include "core/metakernel/library.hpp"

using namespace tapestry;
using namespace tapestry::metakernel;

namespace {

// Fallbacks (SPEC §4.1) when the standard library lacks a kernel.
const char* kTemplates = R"yaml(bench_matmul:
  constraints:
    dtype: {enum: [float32, float64, float16, bfloat16, int32, int64]}
  inputs:
    X: {shape: "[$batch..., $m, $k]", dtype: "$dtype", ipf: "[@[:-2]..., @[-1]] :> [1...]"}
    W: {shape: "[$batch..., $k, $n]", dtype: "$dtype", ipf: "[@[:-3]..., @[-1], @[-2]] :> [1...]"}
  index: "[$batch..., $m, $n, $k]"
  outputs:
    result: {shape: "[$batch..., $m, $n]", dtype: "$dtype", ipf: "[@[:-1]...] :> [1...]", combine: sum}
  cost: {flops: "2"}
bench_relu:
  inputs:
    input: {shape: "[$shape...]", dtype: "$dtype"}
  index: "[$shape...]"
  outputs:
    result: {dtype: "$dtype"}
  cost: {flops: "1"}
)yaml";

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

template <class MakeOp>
void run(const std::string& label, const Metakernel& k, std::int64_t n, MakeOp makeOp) {
  std::int64_t checksum = 0;
  auto start = std::chrono::steady_clock::now();
  for (std::int64_t i = 0; i < n; ++i) {
    Application a = apply(k, makeOp(i));
    checksum += a.flops;
  }
  double s = seconds(std::chrono::steady_clock::now() - start);
  std::cout << label << ": " << n << " operations in " << s
            << " s = " << static_cast<std::int64_t>(static_cast<double>(n) / s)
            << " operations/s (checksum " << checksum << ")\n";
}

} // namespace

int main(int argc, char** argv) {
  std::int64_t n = argc > 1 ? std::atoll(argv[1]) : 100000;
  try {
    auto loadStart = std::chrono::steady_clock::now();
    MetakernelLibrary lib = MetakernelLibrary::standard();
    double stdlibSeconds = seconds(std::chrono::steady_clock::now() - loadStart);
    lib.addFile(SourceFile("bench.yaml", kTemplates));
    std::cout << "standard library: " << lib.size() - 2 << " kernels parsed in " << stdlibSeconds
              << " s (once per process)\n";

    const Metakernel& matmul = lib.find("matmul") ? lib.get("matmul") : lib.get("bench_matmul");
    const Metakernel& relu = lib.find("relu") ? lib.get("relu") : lib.get("bench_relu");

    run(matmul.name + " [b, m, k] x [b, k, n]", matmul, n, [](std::int64_t i) {
      Operation op;
      std::int64_t b = 1 + i % 7, m = 64 + i % 13, k = 128 + i % 5, nn = 32 + i % 11;
      op.inputs["X"] = {TensorType{{b, m, k}, "float32"}};
      op.inputs["W"] = {TensorType{{b, k, nn}, "float32"}};
      return op;
    });
    run(relu.name + " [a, b, c]", relu, n, [](std::int64_t i) {
      Operation op;
      op.inputs["input"] = {TensorType{{1 + i % 9, 256, 1024 + i % 3}, "float32"}};
      return op;
    });
    std::cout << "parser calls during application: 0 (application.cpp references no parser; "
                 "checked by the ctest \"metakernel: application never parses\")\n";
  } catch (const Error& e) {
    std::cerr << e.what();
    return static_cast<int>(e.exitCode());
  }
  return 0;
}
