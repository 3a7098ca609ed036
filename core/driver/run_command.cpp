#include "core/driver/run_command.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <tuple>
#include <utility>

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
#include "core/diag/atomic_file.hpp"
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

} // namespace

// ---------------------------------------------------------------- run

namespace {

// What a run's report needs.
struct RunReport {
  const RunConfig& config;
  const plan::LoadedPlan& loaded;
  const Execution& run;
  const std::vector<OutputCheck>& checks;
  std::string backend;         // its name
  std::int64_t inputBytes;     // of the graph inputs
  bool ok;                     // every check passed (true without --check)
  std::vector<int> deviceRank; // under mpirun: each plan device's rank; else empty
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
    if (c.approximation) {
      item["approximation"] = std::isnan(*c.approximation) ? Json(nullptr) : Json(*c.approximation);
    }
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
  if (r.config.link != nullptr) {
    doc["ranks"] = r.config.link->ranks();
    doc["rank_devices"] = rankDevices(r.loaded.plan, r.deviceRank, r.config.link->ranks());
    doc["cross_rank_transport"] = transportName(stats.transport);
  }
  doc["workers"] = stats.workers;
  doc["blas_threads"] = stats.blasThreads;
  doc["shards"] = stats.shards;
  doc["transfers"] = stats.transfers;
  doc["reduction_steps"] = stats.reductionSteps;
  doc["channels_last_regions"] = stats.channelsLastRegions;
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
    if (r.loaded.origin && !r.checks.empty() && r.checks.front().approximation) {
      doc["check"]["approximate_rules"] = r.loaded.origin->approximateRules();
    }
  }
  if (!r.config.tracePath.empty()) {
    doc["trace"] = r.config.tracePath;
  }
  addWarnings(doc, r.loaded.warnings);

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
  if (r.config.link != nullptr) {
    err << describeRanks(rankDevices(r.loaded.plan, r.deviceRank, r.config.link->ranks()))
        << "; between ranks: " << transportName(stats.transport) << "\n";
  }
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
  if (r.loaded.origin && !r.checks.empty() && r.checks.front().approximation) {
    std::string rules;
    for (const std::string& rule : r.loaded.origin->approximateRules()) {
      rules += (rules.empty() ? "" : ", ") + rule;
    }
    err << "approximate rewrites (" << rules
        << "): outputs checked against the rewritten graph; approximation: its float64 result "
           "against the original graph's\n";
  }
  if (!r.config.outputsDir.empty()) {
    err << "wrote " << plural(g.outputs.size(), "output", "outputs") << " to "
        << r.config.outputsDir << "\n";
  }
  if (!r.config.tracePath.empty()) {
    err << "trace (measured beside predicted) -> " << r.config.tracePath << "\n";
  }
}

// The checks of a run's outputs (docs/check.md): against the unsharded
// original graph. After approximate rewrites the plan computes another graph
// on purpose, so its outputs are checked against that graph's unsharded
// result, and each output's approximation (the rewritten graph's float64
// result against the original's) must be at most kApproximateTolerance.
std::vector<OutputCheck> checkOutputs(const plan::LoadedPlan& loaded, Backend& backend,
                                      const TensorBuffers& inputs, const TensorBuffers& outputs) {
  const graph::ExpandedGraph& g = loaded.graph;
  if (!loaded.origin) {
    return compareOutputs(g, outputs, unshardedReference(backend, g, inputs));
  }
  const graph::ExpandedGraph& source = loaded.origin->graph;
  if (loaded.origin->approximateRules().empty()) {
    return compareOutputs(g, outputs, unshardedReference(backend, source, inputs));
  }
  const CheckReference own = unshardedReference(backend, g, inputs);
  std::vector<OutputCheck> checks = compareOutputs(g, outputs, own);
  const TensorBuffers original = float64Reference(backend, source, inputs);
  for (OutputCheck& c : checks) {
    const auto at = original.find(c.tensor);
    if (at == original.end()) {
      throw InternalError("run --check: the original graph has no output " + c.tensor);
    }
    const double approximation = maxRelativeError(own.reference.at(c.tensor), at->second);
    c.approximation = approximation;
    c.ok = c.ok && approximation <= kApproximateTolerance; // NaN fails
  }
  return checks;
}

} // namespace

std::string measuredLabel(const std::string& backend, const ExecutionStats& stats) {
  return "measured (" + backend + " backend, " +
         plural(static_cast<std::size_t>(stats.workers), "worker", "workers") + ")";
}

int runCommand(const RunConfig& config, std::ostream& out, std::ostream& err) {
  // Under mpirun only rank 0 writes the trace, so only its path is checked.
  const bool writes = config.link == nullptr || config.link->rank() == 0;
  const Runnable input(config.planPath, config.kernelPaths, config.backend,
                       writes ? config.tracePath : std::string());
  const plan::LoadedPlan& loaded = input.loaded;
  const graph::ExpandedGraph& g = loaded.graph;
  if (writes) {
    printWarnings(loaded.warnings, err);
  }
  // Refuse before anything is allocated when the run cannot fit in memory.
  refuseIfTooBig(displayName(config.planPath),
                 hostMemoryNeed(loaded, config.backend == "cpu", config.check), availableMemory());
  // A rewritten plan is checked against the graph it was made from: inputs
  // for that graph (a superset of the plan's), and its float64 result.
  const graph::ExpandedGraph& source = loaded.origin ? loaded.origin->graph : g;
  const TensorBuffers inputs = config.inputsDir.empty() ? drawInputs(source, config.seed)
                                                        : loadInputs(source, config.inputsDir);

  const std::unique_ptr<Backend> planBackend =
      makeBackend(config.backend, std::max(1, loaded.plan.deviceCount), config.tf32);
  Backend& backend = *planBackend;
  ExecuteOptions options;
  options.threads = config.threads;
  if (config.link != nullptr) {
    options.link = config.link;
    options.deviceRank = deviceRanks(loaded.plan, loaded.target, config.link->ranks());
  }
  const RankTransport transport = connectRanks(backend, config.link, options.deviceRank);
  transport.apply(options);
  const Execution run = execute(loaded, backend, inputs, options);
  if (config.link != nullptr && config.link->rank() != 0) {
    return 0; // rank 0 holds the outputs, writes, checks and reports
  }
  if (!config.outputsDir.empty()) {
    writeTensors(run.outputs, outputNames(g), config.outputsDir);
  }
  if (!config.tracePath.empty()) {
    const render::TaskIntervals measured = measuredIntervals(run.stats);
    writeFileAtomically(config.tracePath,
                        traceText(loaded, &measured, measuredLabel(backend.name(), run.stats)),
                        out);
  }

  std::vector<OutputCheck> checks;
  if (config.check) {
    // The baseline is one shard per operation on device 0 of the plan's
    // backend, with every core inside the CPU's matrix products; the float64
    // reference runs on the CPU (docs/check.md).
    CpuBackend::setBlasThreads(usableHardwareThreads());
    checks = checkOutputs(loaded, backend, inputs, run.outputs);
  }
  const bool ok =
      std::all_of(checks.begin(), checks.end(), [](const OutputCheck& c) { return c.ok; });

  const RunReport report{
      config, loaded, run, checks, backend.name(), totalBytes(inputs), ok, options.deviceRank};
  if (config.json) {
    printRunJson(report, out);
  } else if (!config.quiet) {
    printRunText(report, err);
  }
  const std::string file = displayName(config.planPath);
  for (const OutputCheck& c : checks) {
    if (c.ok) {
      continue;
    }
    // After approximate rewrites the sharded run may be right and the
    // approximation too far: say which.
    const bool runOk = !std::isnan(c.error) && c.error <= c.bound;
    const std::string what =
        runOk ? " is too far from the original graph's result after approximate rewrites: "
              : " differs from the unsharded graph: ";
    err << Error(SourceLocation{file, 0, 0, ""},
                 "run --check: output " + c.tensor + what + describeCheck(c), ExitCode::CheckFailed)
               .what();
  }
  return ok ? 0 : static_cast<int>(ExitCode::CheckFailed);
}

} // namespace tapestry::driver
