// The CPU executor against OpenBLAS on one large product (issue 7's acceptance):
// a 2048 x 2048 x 2048 float32 matmul planned as 2 shards along m on 2 devices,
// run by the executor with 2 worker threads (OpenBLAS 1 thread each), against
// one cblas_sgemm call with OpenBLAS at 2 threads on the same inputs, in one
// process, alternating, median of several runs. Prints both GFLOP/s and their
// ratio (target >= 0.95, issue 32; 0.9 in issue 20, 0.8 before), and the run's
// peak memory: the executor's accounting per device and the process's
// resident set against the plan's predicted per-device peaks plus the inputs
// and outputs.
//
//   bench_matmul_cpu [--size N] [--repeat R] [--threads T]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <cblas.h>
#include <sys/resource.h>

#include "backends/check.hpp"
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

// A field of /proc/self/status in bytes ("VmRSS", "VmHWM"); 0 when unknown.
std::int64_t procStatusBytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      std::istringstream rest(line.substr(field.size() + 1));
      std::int64_t kb = 0;
      rest >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

// Resets the resident-set high-water mark (Linux >= 4.0); false when refused.
bool resetPeakRss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

double mib(std::int64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

} // namespace

// A benchmark's main is its whole procedure (flags, measurements, the report
// table), read top to bottom; it is longer than 120 lines on purpose.
int main(int argc, char** argv) {
  std::int64_t n = 2048;
  int repeat = 7;
  int threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--size") {
      n = std::atoll(argv[i + 1]);
    } else if (flag == "--repeat") {
      repeat = std::atoi(argv[i + 1]);
    } else if (flag == "--threads") {
      threads = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: bench_matmul_cpu [--size N] [--repeat R] [--threads T]\n");
      return 2;
    }
  }
  const std::int64_t rssStart = procStatusBytes("VmRSS");
  try {
    const std::string size = std::to_string(n);
    const std::string text =
        R"({"tapestry": "graph/v1", "name": "matmul", "tensors": {"x": {"dtype": "float32", "shape": [)" +
        size + ", " + size + R"(]}, "w": {"dtype": "float32", "shape": [)" + size + ", " + size +
        R"(]}}, "operations": [{"name": "mm", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "y"}}]})";
    const metakernel::MetakernelLibrary library = metakernel::MetakernelLibrary::standard();
    const json::Document doc = json::Document::parse(SourceFile("matmul.json", text));
    const graph::ExpandedGraph g = graph::expand(graph::decodeGraph(json::Value(doc)), library);

    // m in `threads` parts, one per device of a `threads`-device CPU target.
    const cost::Target target = [&] {
      cost::Target t = cost::loadTarget("cpu-2");
      t.devices.count = threads;
      return t;
    }();
    std::vector<int> devices;
    for (int d = 0; d < threads; ++d) {
      devices.push_back(d);
    }
    const plan::PlanChoice choice{{{{threads, 1, 1}, devices}}};
    const plan::ShardPlan p = plan::buildPlan(g, threads, choice);
    const cost::Simulation sim = cost::simulate(g, target, p);

    const TensorBuffers inputs = drawInputs(g, 1);
    const Buffer& x = inputs.at("x");
    const Buffer& w = inputs.at("w");
    Buffer c; // the baseline's output, allocated after the memory run
    const double flops =
        2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);

    CpuBackend backend(threads);
    ExecuteOptions options;
    options.threads = threads;
    options.blasThreads = 1;
    auto sgemm = [&] {
      CpuBackend::setBlasThreads(threads);
      const double start = Backend::now();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n),
                  static_cast<int>(n), static_cast<int>(n), 1.0f, x.elements<float>().data(),
                  static_cast<int>(n), w.elements<float>().data(), static_cast<int>(n), 0.0f,
                  c.elements<float>().data(), static_cast<int>(n));
      return Backend::now() - start;
    };

    // The memory run first, from a reset high-water mark.
    const std::int64_t rssBefore = procStatusBytes("VmRSS");
    const bool hwmReset = resetPeakRss();
    Execution first = execute(g, p, backend, inputs, options, &sim);
    const std::int64_t hwm = procStatusBytes("VmHWM");
    c = Buffer::host(DType::Float32, std::vector<std::int64_t>{n, n});
    sgemm(); // warm-up of the baseline; `first` was the executor's
    const double error = maxRelativeError(first.outputs.at("y"), c);
    const ExecutionStats memoryRun = first.stats;
    const std::int64_t outputBytes = memoryRun.outputBytes;
    first = Execution{}; // free its outputs before timing

    std::vector<double> planTimes;
    std::vector<double> planCallTimes;
    std::vector<double> blasTimes;
    for (int r = 0; r < repeat; ++r) {
      const double start = Backend::now();
      const Execution run = execute(g, p, backend, inputs, options, &sim);
      planCallTimes.push_back(Backend::now() - start);
      planTimes.push_back(run.stats.wallSeconds);
      blasTimes.push_back(sgemm());
    }
    const double planTime = median(planTimes);
    const double callTime = median(planCallTimes);
    const double blasTime = median(blasTimes);
    const double planRate = flops / planTime;
    const double blasRate = flops / blasTime;
    const double ratio = planRate / blasRate;

    std::printf("matmul %lld x %lld x %lld float32, plan: m split %d ways on %d devices, %d "
                "worker threads x 1 OpenBLAS thread; baseline: one cblas_sgemm with %d OpenBLAS "
                "threads; median of %d\n",
                static_cast<long long>(n), static_cast<long long>(n), static_cast<long long>(n),
                threads, threads, threads, threads, repeat);
    std::printf("  executor  %8.2f ms  %7.1f GFLOP/s  (whole execute() call incl. gathering the "
                "output: %.2f ms, %.1f GFLOP/s)\n",
                planTime * 1e3, planRate / 1e9, callTime * 1e3, flops / callTime / 1e9);
    std::printf("  sgemm     %8.2f ms  %7.1f GFLOP/s\n", blasTime * 1e3, blasRate / 1e9);
    std::printf("  predicted %8.2f ms (target %s)\n", sim.objectives.timeS * 1e3,
                target.name.c_str());
    std::printf("  ratio executor/sgemm throughput: %.3f (target >= 0.95: %s)\n", ratio,
                ratio >= 0.95 ? "met" : "NOT met");
    std::printf("  max relative error against sgemm: %.2g\n", error);

    const std::int64_t inputBytes = x.byteSize() + w.byteSize();
    std::int64_t predictedSum = 0;
    std::printf("memory (the first run):\n");
    for (int d = 0; d < threads; ++d) {
      const std::int64_t measured = memoryRun.devices[static_cast<std::size_t>(d)].peakBytes;
      const std::int64_t predicted = sim.peakPerDevice[static_cast<std::size_t>(d)];
      predictedSum += predicted;
      std::printf("  device %d: peak %.1f MiB measured (executor accounting), %.1f MiB predicted: "
                  "%s\n",
                  d, mib(measured), mib(predicted), measured <= predicted ? "within" : "OVER");
    }
    const std::int64_t bound = predictedSum + inputBytes + outputBytes;
    std::printf("  predicted peaks %.1f MiB + inputs %.1f MiB + outputs %.1f MiB = %.1f MiB\n",
                mib(predictedSum), mib(inputBytes), mib(outputBytes), mib(bound));
    if (hwmReset && hwm > 0) {
      std::printf("  resident set: %.1f MiB at start (program, libraries), %.1f MiB with the "
                  "inputs, peak %.1f MiB during the run = start + %.1f MiB: %s start + %.1f MiB\n",
                  mib(rssStart), mib(rssBefore), mib(hwm), mib(hwm - rssStart),
                  hwm - rssStart <= bound ? "within" : "OVER", mib(bound));
    } else {
      rusage usage{};
      getrusage(RUSAGE_SELF, &usage);
      const auto maxRss = static_cast<std::int64_t>(usage.ru_maxrss) * 1024;
      std::printf("  resident set: %.1f MiB at start, %.1f MiB at most over the whole process "
                  "(ru_maxrss; the high-water mark could not be reset, so this includes the "
                  "baseline's own buffers)\n",
                  mib(rssStart), mib(maxRss));
    }
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "%s", e.what());
    return 1;
  }
}
