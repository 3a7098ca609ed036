// The executor's fixed cost per operation (issue 32's acceptance: at most
// 0.5 us): a chain of N relu operations on a float32 vector of E elements (by
// default 100 on 512), planned on one device and run by a prepared executor
// (PreparedRun, as `bench` runs its repetitions), against the same N relu
// run by the same prepared kernel called directly, back and forth between two
// buffers (the kernel's own time, with no executor). Alternating, median of R
// runs each. Prints the time per operation of both and their difference, the
// executor's overhead.
//
//   bench_op_overhead [--ops N] [--elements E] [--repeat R]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/executor.hpp"
#include "backends/tensor_io.hpp"
#include "bench/bench_util.hpp"
#include "core/cost/simulator.hpp"
#include "core/cost/target.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/loader.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"
#include "core/plan/plan.hpp"

using namespace tapestry;
using bench::median;
using namespace tapestry::backend;

namespace {

// x -> r0 -> r1 -> ... -> r{n-1}, each a relu.
std::string chainGraph(int ops, std::int64_t elements) {
  std::string text = R"({"tapestry": "graph/v1", "name": "relu_chain", "tensors": {"x": )"
                     R"({"dtype": "float32", "shape": [)" +
                     std::to_string(elements) + R"(]}}, "operations": [)";
  for (int i = 0; i < ops; ++i) {
    const std::string in = i == 0 ? "x" : "t" + std::to_string(i - 1);
    text += std::string(i == 0 ? "" : ", ") + R"({"name": "r)" + std::to_string(i) +
            R"(", "kernel": "relu", "inputs": {"input": ")" + in +
            R"("}, "outputs": {"result": "t)" + std::to_string(i) + R"("}})";
  }
  return text + "]}";
}

} // namespace

int main(int argc, char** argv) {
  int ops = 100;
  std::int64_t elements = 512;
  int repeat = 2001;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--ops") {
      ops = std::max(1, std::atoi(argv[i + 1]));
    } else if (flag == "--elements") {
      elements = std::max<std::int64_t>(1, std::atoll(argv[i + 1]));
    } else if (flag == "--repeat") {
      repeat = std::max(1, std::atoi(argv[i + 1]));
    } else {
      std::fprintf(stderr, "usage: bench_op_overhead [--ops N] [--elements E] [--repeat R]\n");
      return 2;
    }
  }
  try {
    const metakernel::MetakernelLibrary library = metakernel::MetakernelLibrary::standard();
    const json::Document doc =
        json::Document::parse(SourceFile("relu_chain.json", chainGraph(ops, elements)));
    const graph::ExpandedGraph g = graph::expand(graph::decodeGraph(json::Value(doc)), library);
    const cost::Target target = cost::loadTarget("cpu-2");
    const plan::ShardPlan p = plan::buildPlan(g, 1, plan::singleDeviceChoice(g));
    const cost::Simulation sim = cost::simulate(g, target, p);
    const TensorBuffers inputs = drawInputs(g, 1);

    CpuBackend backend(1);
    PreparedRun prepared(g, p, backend, inputs, ExecuteOptions{}, &sim);
    // The same work without the executor: the first operation's kernel,
    // prepared once, run from one buffer into the other and back.
    const graph::Operation& relu = g.operations[0];
    const ZRange& index = relu.application.index;
    Buffer a = Buffer::host(DType::Float32, index);
    Buffer b = Buffer::host(DType::Float32, index);
    copyHostRegion(inputs.at("x").view(), a.view(), index);
    std::vector<PortViews> in{{a.view()}};
    std::vector<PortViews> out{{b.view()}};
    const std::unique_ptr<PreparedKernel> kernel =
        backend.prepareKernel(KernelCall{relu, index, in, out, 0});
    std::byte* const data[2] = {a.data(), b.data()};
    auto loops = [&] {
      const double start = Backend::now();
      for (int i = 0; i < ops; ++i) {
        in[0][0].data = data[i % 2];
        out[0][0].data = data[1 - i % 2];
        kernel->run(KernelCall{relu, index, in, out, 0});
      }
      return Backend::now() - start;
    };
    for (int i = 0; i < 20; ++i) { // warm-up: first-touch pages, caches
      prepared.run();
      loops();
    }
    std::vector<double> runTimes;
    std::vector<double> loopTimes;
    for (int r = 0; r < repeat; ++r) {
      runTimes.push_back(prepared.run().stats.wallSeconds);
      loopTimes.push_back(loops());
    }
    const double perOp = median(runTimes) / ops * 1e6;
    const double kernelPerOp = median(loopTimes) / ops * 1e6;
    std::printf("%d chained relu on %lld float32 elements, one device, a prepared executor; "
                "median of %d runs, alternating with the kernel alone\n",
                ops, static_cast<long long>(elements), repeat);
    std::printf("  executor      %7.3f us per operation\n", perOp);
    std::printf("  kernel alone  %7.3f us per operation (the prepared kernel called directly)\n",
                kernelPerOp);
    std::printf("  overhead      %7.3f us per operation\n", perOp - kernelPerOp);
    std::printf("  target: at most 0.5 us per operation on one device: %s\n",
                perOp <= 0.5 ? "met" : "NOT met");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_op_overhead: %s\n", e.what());
    return 70;
  }
}
