#include "core/driver/run_command.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <ostream>

#include <sys/resource.h>

#include "backends/check.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/executor.hpp"
#include "backends/machine_probe.hpp"
#include "backends/memory_guard.hpp"
#include "backends/reference.hpp"
#include "backends/tensor_io.hpp"
#include "core/cost/simulator.hpp"
#include "core/cost/target.hpp"
#include "core/cost/units.hpp"
#include "core/diag/error.hpp"
#include "core/diag/source.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/loader.hpp"
#include "core/json/json.hpp"

#if TAPESTRY_HAVE_CUDA
#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/cuda_probe.hpp"
#endif

namespace tapestry::driver {

using namespace tapestry::backend;

// ---------------------------------------------------------------- loading

plan::LoadedPlan loadRunnable(const std::string& path,
                              const metakernel::MetakernelLibrary& library) {
  const json::Document document =
      json::Document::parse(SourceFile::read(path, "a plan or graph file"));
  const json::Value root(document);
  root.expectObject();
  const json::Value tag = root.member("tapestry");
  const std::string& format = tag.asString();
  if (format == "plan/v1") {
    plan::LoadedPlan loaded = plan::decodePlan(root, library);
    loaded.graph.file = displayName(path);
    return loaded;
  }
  if (format != "graph/v1" && format != "expanded/v1") {
    tag.fail("unknown format " + json::brief(tag.json()) +
             " (expected \"plan/v1\", \"graph/v1\" or \"expanded/v1\")");
  }
  plan::LoadedPlan loaded;
  loaded.graph = graph::expand(graph::decodeGraph(root), library);
  loaded.graph.file = displayName(path);
  installGpuProbe(); // as the CLI does, for callers that are not the CLI
  loaded.target = cost::localTarget(cost::probeMachine());
  loaded.choice = plan::singleDeviceChoice(loaded.graph);
  loaded.plan = plan::buildPlan(loaded.graph, loaded.target.deviceCount(), loaded.choice);
  loaded.simulation = cost::simulate(loaded.graph, loaded.target, loaded.plan);
  return loaded;
}

void requireBackend(const std::string& name) {
  if (name == "cpu") {
    return;
  }
  if (name != "cuda") {
    throw UsageError("unknown backend \"" + name + "\" (expected cpu or cuda)");
  }
#if TAPESTRY_HAVE_CUDA
  const cuda::Probe probe = cuda::probe();
  if (!probe.available) {
    throw BackendUnavailable(probe.reason);
  }
#else
  throw BackendUnavailable("tapestry was built without the CUDA backend");
#endif
}

// ---------------------------------------------------------------- helpers

namespace {

std::vector<std::string> outputNames(const graph::ExpandedGraph& g) {
  std::vector<std::string> names;
  for (std::size_t t : g.outputs) {
    names.push_back(g.tensors[t].name);
  }
  return names;
}

std::int64_t totalBytes(const TensorBuffers& tensors) {
  std::int64_t bytes = 0;
  for (const auto& [name, buffer] : tensors) {
    bytes += buffer.byteSize();
  }
  return bytes;
}

std::int64_t maxRssBytes() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) {
    return 0;
  }
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024; // kilobytes on Linux
}

std::size_t devicesUsed(const plan::ShardPlan& p) {
  std::vector<char> used(static_cast<std::size_t>(std::max(p.deviceCount, 1)), 0);
  for (const plan::OpPlan& op : p.ops) {
    for (const plan::Shard& s : op.shards) {
      used[static_cast<std::size_t>(s.device)] = 1;
    }
  }
  return static_cast<std::size_t>(std::count(used.begin(), used.end(), 1));
}

std::string plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The backend that runs plans: the CPU backend, or the CUDA backend with one
// stream per plan device (BackendUnavailable without a GPU).
std::unique_ptr<Backend> makeBackend(const std::string& name, int planDevices, bool tf32) {
  if (tf32 && name != "cuda") {
    throw UsageError("--tf32 needs --backend cuda");
  }
#if TAPESTRY_HAVE_CUDA
  if (name == "cuda") {
    CudaOptions options;
    options.planDevices = planDevices;
    options.tf32 = tf32;
    return std::make_unique<CudaBackend>(options);
  }
#endif
  requireBackend(name);
  return std::make_unique<CpuBackend>(planDevices);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

} // namespace

// ---------------------------------------------------------------- run

namespace {

// What a run's report needs.
struct RunReport {
  const RunConfig& config;
  const plan::LoadedPlan& loaded;
  const Execution& run;
  const std::vector<OutputCheck>& checks;
  std::string backend;     // its name
  std::int64_t inputBytes; // of the graph inputs
  bool ok;                 // every check passed (true without --check)
};

Json checkToJson(const std::vector<OutputCheck>& checks, bool ok) {
  Json list = Json::array();
  for (const OutputCheck& c : checks) {
    Json item = Json::object();
    item["tensor"] = c.tensor;
    item["dtype"] = dtypeName(c.dtype);
    item["precision"] = dtypeName(c.precision);
    item["max_error"] = std::isnan(c.error) ? Json(nullptr) : Json(c.error);
    item["unsharded_error"] = std::isnan(c.baselineError) ? Json(nullptr) : Json(c.baselineError);
    item["bound"] = c.bound;
    item["ok"] = c.ok;
    list.push_back(item);
  }
  Json check = Json::object();
  check["ok"] = ok;
  check["outputs"] = list;
  return check;
}

// The --format json summary on `out`.
void printRunJson(const RunReport& r, std::ostream& out) {
  const graph::ExpandedGraph& g = r.loaded.graph;
  const ExecutionStats& stats = r.run.stats;
  Json doc = Json::object();
  doc["status"] = r.ok ? "ok" : "failed";
  doc["plan"] = displayName(r.config.planPath);
  doc["graph"] = g.name;
  doc["backend"] = r.backend;
  doc["devices"] = r.loaded.plan.deviceCount;
  doc["devices_used"] = devicesUsed(r.loaded.plan);
  doc["workers"] = stats.workers;
  doc["blas_threads"] = stats.blasThreads;
  doc["shards"] = stats.shards;
  doc["transfers"] = stats.transfers;
  doc["reduction_steps"] = stats.reductionSteps;
  doc["wall_time_s"] = stats.wallSeconds;
  doc["predicted_time_s"] = r.loaded.simulation.objectives.timeS;
  Json memory = Json::object();
  Json measuredPeaks = Json::array();
  for (const DeviceMemory& d : stats.devices) {
    measuredPeaks.push_back(d.peakBytes);
  }
  memory["peak_bytes_per_device"] = measuredPeaks;
  memory["predicted_peak_bytes_per_device"] = r.loaded.simulation.peakPerDevice;
  memory["input_bytes"] = r.inputBytes;
  memory["output_bytes"] = stats.outputBytes;
  memory["transfer_bytes"] = stats.transferBytes;
  memory["assembled_bytes"] = stats.assembledBytes;
  memory["max_rss_bytes"] = maxRssBytes();
  doc["memory"] = memory;
  Json outputs = Json::array();
  for (const std::string& name : outputNames(g)) {
    const Buffer& buffer = r.run.outputs.at(name);
    Json o = Json::object();
    o["tensor"] = name;
    o["dtype"] = dtypeName(buffer.dtype());
    o["shape"] = buffer.region().shape().vector();
    if (!r.config.outputsDir.empty()) {
      o["file"] = r.config.outputsDir + "/" + name + ".npy";
    }
    outputs.push_back(o);
  }
  doc["outputs"] = outputs;
  if (r.config.check) {
    doc["check"] = checkToJson(r.checks, r.ok);
  }
  out << doc.dump(2) << "\n";
}

// The text report on `err`: what ran, memory against the prediction, checks.
void printRunText(const RunReport& r, std::ostream& err) {
  const graph::ExpandedGraph& g = r.loaded.graph;
  const ExecutionStats& stats = r.run.stats;
  const std::vector<std::int64_t>& predicted = r.loaded.simulation.peakPerDevice;
  err << "ran " << displayName(r.config.planPath) << " (graph " << g.name
      << "): " << plural(stats.shards, "shard", "shards") << ", "
      << plural(stats.transfers, "transfer", "transfers") << ", "
      << plural(stats.reductionSteps, "reduction step", "reduction steps") << " on "
      << plural(devicesUsed(r.loaded.plan), "device", "devices") << " ("
      << plural(static_cast<std::size_t>(stats.workers), "worker thread", "worker threads") << ", "
      << r.backend << "): " << cost::formatTime(stats.wallSeconds) << " (predicted "
      << cost::formatTime(r.loaded.simulation.objectives.timeS) << ")\n";
  std::int64_t peak = 0;
  std::int64_t predictedPeak = 0;
  for (std::size_t d = 0; d < stats.devices.size(); ++d) {
    peak = std::max(peak, stats.devices[d].peakBytes);
    if (d < predicted.size()) {
      predictedPeak = std::max(predictedPeak, predicted[d]);
    }
    if (r.config.verbose && stats.devices[d].allocatedBytes > 0) {
      err << "  device " << d << ": peak " << cost::formatSize(stats.devices[d].peakBytes)
          << " (predicted " << cost::formatSize(d < predicted.size() ? predicted[d] : 0) << ")\n";
    }
  }
  err << "memory: peak per device " << cost::formatSize(peak) << " (predicted "
      << cost::formatSize(predictedPeak) << "), inputs " << cost::formatSize(r.inputBytes)
      << ", outputs " << cost::formatSize(stats.outputBytes) << "\n";
  for (const OutputCheck& c : r.checks) {
    err << "check " << c.tensor << " (" << dtypeName(c.dtype) << "): " << describeCheck(c) << " "
        << (c.ok ? "ok" : "MISMATCH") << "\n";
  }
  if (!r.config.outputsDir.empty()) {
    err << "wrote " << plural(g.outputs.size(), "output", "outputs") << " to "
        << r.config.outputsDir << "\n";
  }
}

} // namespace

int runCommand(const RunConfig& config, std::ostream& out, std::ostream& err) {
  requireBackend(config.backend);
  const metakernel::MetakernelLibrary library =
      metakernel::MetakernelLibrary::load(config.kernelPaths);
  const plan::LoadedPlan loaded = loadRunnable(config.planPath, library);
  const graph::ExpandedGraph& g = loaded.graph;
  // Refuse before anything is allocated when the run cannot fit in memory.
  refuseIfTooBig(displayName(config.planPath),
                 hostMemoryNeed(loaded, config.backend == "cpu", config.check), availableMemory());
  const TensorBuffers inputs =
      config.inputsDir.empty() ? drawInputs(g, config.seed) : loadInputs(g, config.inputsDir);

  const std::unique_ptr<Backend> planBackend =
      makeBackend(config.backend, std::max(1, loaded.plan.deviceCount), config.tf32);
  Backend& backend = *planBackend;
  ExecuteOptions options;
  options.threads = config.threads;
  const Execution run = execute(loaded, backend, inputs, options);
  if (!config.outputsDir.empty()) {
    writeTensors(run.outputs, outputNames(g), config.outputsDir);
  }

  std::vector<OutputCheck> checks;
  if (config.check) {
    // The baseline is one shard per operation on device 0 of the plan's
    // backend, with every core inside the CPU's matrix products; the float64
    // reference runs on the CPU (docs/check.md).
    CpuBackend::setBlasThreads(usableHardwareThreads());
    checks = compareOutputs(g, run.outputs, unshardedReference(backend, g, inputs));
  }
  const bool ok =
      std::all_of(checks.begin(), checks.end(), [](const OutputCheck& c) { return c.ok; });

  const RunReport report{config, loaded, run, checks, backend.name(), totalBytes(inputs), ok};
  if (config.json) {
    printRunJson(report, out);
  } else if (!config.quiet) {
    printRunText(report, err);
  }
  const std::string file = displayName(config.planPath);
  for (const OutputCheck& c : checks) {
    if (!c.ok) {
      err << Error(SourceLocation{file, 0, 0, ""},
                   "run --check: output " + c.tensor +
                       " differs from the unsharded graph: " + describeCheck(c),
                   ExitCode::CheckFailed)
                 .what();
    }
  }
  return ok ? 0 : static_cast<int>(ExitCode::CheckFailed);
}

// ---------------------------------------------------------------- bench

namespace {

struct Timing {
  std::vector<double> times;
  double measured = 0;
  double predicted = 0;
  ExecutionStats stats;
};

Timing timePlan(const graph::ExpandedGraph& g, const plan::ShardPlan& p,
                const cost::Simulation& schedule, Backend& backend, const TensorBuffers& inputs,
                const BenchConfig& config, const std::string& label, int& done, int total,
                std::ostream& err) {
  ExecuteOptions options;
  options.threads = config.threads;
  Timing timing;
  timing.predicted = schedule.objectives.timeS;
  for (int i = 0; i < config.warmup + config.repeat; ++i) {
    if (config.progress) {
      err << "\rbench: " << label << " run " << (i + 1) << "/" << (config.warmup + config.repeat)
          << " (" << ++done << "/" << total << " in all)\033[K" << std::flush;
    }
    Execution run = execute(g, p, backend, inputs, options, &schedule);
    if (i >= config.warmup) {
      timing.times.push_back(run.stats.wallSeconds);
    }
    timing.stats = std::move(run.stats);
  }
  timing.measured = median(timing.times);
  return timing;
}

Json timingJson(const Timing& t, std::int64_t flops, std::size_t devices) {
  Json j = Json::object();
  j["devices"] = devices;
  j["workers"] = t.stats.workers;
  j["blas_threads"] = t.stats.blasThreads;
  j["measured_s"] = t.measured;
  j["predicted_s"] = t.predicted;
  j["measured_over_predicted"] = t.predicted > 0 ? Json(t.measured / t.predicted) : Json(nullptr);
  j["flops_per_s"] = t.measured > 0 ? Json(static_cast<double>(flops) / t.measured) : Json(nullptr);
  Json peaks = Json::array();
  for (const DeviceMemory& d : t.stats.devices) {
    peaks.push_back(d.peakBytes);
  }
  j["peak_bytes_per_device"] = peaks;
  j["times_s"] = t.times;
  return j;
}

std::string ratioText(double a, double b) {
  if (b <= 0) {
    return "-";
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", a / b);
  return buffer;
}

// The inputs copied into the memory of plan device `device` (for GPUs, so
// that bench times the plan, not the upload from the host).
TensorBuffers inputsOnDevice(Backend& backend, const TensorBuffers& inputs, int device) {
  TensorBuffers out;
  for (const auto& [name, buffer] : inputs) {
    Buffer copy = backend.allocate(buffer.dtype(), buffer.region(), device);
    backend.copyRegion(buffer.view(), copy.view(), buffer.region());
    out.emplace(name, std::move(copy));
  }
  backend.synchronize();
  return out;
}

#if TAPESTRY_HAVE_CUDA
// The unsharded baseline of a one-operation matmul/linear graph on a GPU: the
// single kernel call (one cuBLASLt product) on whole tensors on plan device 0,
// timed with CUDA events; nullopt for other graphs or backends.
std::optional<Timing> timeSingleCall(Backend& backend, const graph::ExpandedGraph& g,
                                     const TensorBuffers& inputs, const BenchConfig& config,
                                     double predicted) {
  auto* gpu = dynamic_cast<CudaBackend*>(&backend);
  if (gpu == nullptr || g.operations.size() != 1 ||
      (g.operations[0].kernel != "matmul" && g.operations[0].kernel != "linear")) {
    return std::nullopt;
  }
  const graph::Operation& op = g.operations[0];
  TensorBuffers tensors = inputs; // handles: the inputs' memory, and keeps the outputs alive
  const OperationViews views = wholeTensorViews(*gpu, g, op, tensors, 0);
  Timing t;
  t.times = gpu->timeKernel(op, op.application.index, views.inputs, views.outputs, 0, config.warmup,
                            config.repeat);
  t.measured = median(t.times);
  t.predicted = predicted;
  t.stats.workers = 1;
  return t;
}
#endif

std::string padded(std::string text, std::size_t width) {
  if (text.size() < width) {
    text.append(width - text.size(), ' ');
  }
  return text;
}

} // namespace

int benchCommand(const BenchConfig& config, std::ostream& out, std::ostream& err) {
  if (config.repeat < 1 || config.warmup < 0) {
    throw UsageError("bench needs --repeat >= 1 and --warmup >= 0");
  }
  requireBackend(config.backend);
  const metakernel::MetakernelLibrary library =
      metakernel::MetakernelLibrary::load(config.kernelPaths);
  const plan::LoadedPlan loaded = loadRunnable(config.planPath, library);
  const graph::ExpandedGraph& g = loaded.graph;

  // The baseline: every operation whole on device 0 of the same target.
  const plan::ShardPlan single = plan::buildPlan(g, loaded.target.deviceCount(),
                                                 plan::singleDeviceChoice(g), loaded.plan.options);
  const cost::Simulation singleSim = cost::simulate(g, loaded.target, single);

  // Refuse before anything is allocated when the plan or its baseline (run one
  // after the other) cannot fit in memory.
  HostMemoryNeed need = hostMemoryNeed(loaded, config.backend == "cpu", false);
  if (config.backend == "cpu") {
    std::int64_t singlePeak = 0;
    for (std::int64_t peak : singleSim.peakPerDevice) {
      singlePeak = std::max(singlePeak, peak);
    }
    need.devices = std::max(need.devices, singlePeak);
  }
  refuseIfTooBig(displayName(config.planPath), need, availableMemory());
  const TensorBuffers inputs = drawInputs(g, config.seed);

  const std::unique_ptr<Backend> benchBackend = makeBackend(
      config.backend, std::max({1, loaded.plan.deviceCount, single.deviceCount}), config.tf32);
  Backend& backend = *benchBackend;
  const TensorBuffers timedInputs =
      config.backend == "cpu" ? inputs : inputsOnDevice(backend, inputs, 0);
  const int total = 2 * (config.warmup + config.repeat);
  int done = 0;
  const Timing planTiming = timePlan(g, loaded.plan, loaded.simulation, backend, timedInputs,
                                     config, "plan", done, total, err);
  const Timing singleTiming = timePlan(g, single, singleSim, backend, timedInputs, config,
                                       "single device", done, total, err);
  std::optional<Timing> callTiming;
#if TAPESTRY_HAVE_CUDA
  callTiming = timeSingleCall(backend, g, timedInputs, config, singleSim.objectives.timeS);
#endif
  if (config.progress) {
    err << "\r\033[K" << std::flush;
  }

  const std::int64_t flops = g.totalFlops();
  const std::string file = displayName(config.planPath);
  if (config.json) {
    Json doc = Json::object();
    doc["status"] = "ok";
    doc["plan_file"] = file;
    doc["graph"] = g.name;
    doc["backend"] = backend.name();
    doc["target"] = loaded.target.name;
    doc["repeat"] = config.repeat;
    doc["warmup"] = config.warmup;
    doc["flops"] = flops;
    doc["plan"] = timingJson(planTiming, flops, devicesUsed(loaded.plan));
    doc["single_device"] = timingJson(singleTiming, flops, devicesUsed(single));
    doc["speedup"] =
        planTiming.measured > 0 ? Json(singleTiming.measured / planTiming.measured) : Json(nullptr);
    if (callTiming) {
      doc["single_call"] = timingJson(*callTiming, flops, 1);
      doc["plan_over_single_call"] = planTiming.measured > 0
                                         ? Json(callTiming->measured / planTiming.measured)
                                         : Json(nullptr);
    }
    out << doc.dump(2) << "\n";
    return 0;
  }
  if (config.quiet) {
    return 0;
  }
  out << "bench " << file << " (graph " << g.name << ", " << backend.name() << ", target "
      << loaded.target.name << "): median of " << config.repeat << " after " << config.warmup
      << " warm-up" << (config.warmup == 1 ? "" : "s") << "\n";
  const std::size_t w = 16;
  out << padded("", 15) << padded("measured", w) << padded("predicted", w)
      << padded("measured/pred", w) << padded("achieved", w) << "workers\n";
  auto row = [&](const std::string& name, const Timing& t, std::size_t devices) {
    out << padded(name, 15) << padded(cost::formatTime(t.measured), w)
        << padded(cost::formatTime(t.predicted), w) << padded(ratioText(t.measured, t.predicted), w)
        << padded(t.measured > 0
                      ? cost::formatRate(static_cast<double>(flops) / t.measured) + "FLOP/s"
                      : std::string("-"),
                  w)
        << t.stats.workers << " (" << plural(devices, "device", "devices") << ")\n";
  };
  row("plan", planTiming, devicesUsed(loaded.plan));
  row("single device", singleTiming, devicesUsed(single));
  if (callTiming) {
    row("cuBLASLt call", *callTiming, 1);
  }
  out << "speedup of the plan over the single device: "
      << ratioText(singleTiming.measured, planTiming.measured) << "x (predicted "
      << ratioText(singleTiming.predicted, planTiming.predicted) << "x)\n";
  if (callTiming) {
    out << "plan throughput over the single cuBLASLt call: "
        << ratioText(callTiming->measured, planTiming.measured) << "x\n";
  }
  return 0;
}

} // namespace tapestry::driver
