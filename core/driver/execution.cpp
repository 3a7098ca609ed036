// What run, bench and calibrate share: reading a runnable file, choosing a
// backend, and small report helpers (core/driver/execution.hpp).
#include "core/driver/execution.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/machine_probe.hpp"
#include "core/cost/simulator.hpp"
#include "core/cost/target.hpp"
#include "core/diag/atomic_file.hpp"
#include "core/diag/error.hpp"
#include "core/diag/source.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/loader.hpp"
#include "core/json/json.hpp"
#include "core/render/trace.hpp"

#if TAPESTRY_HAVE_CUDA
#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/cuda_probe.hpp"
#endif
#if TAPESTRY_HAVE_NCCL
#include "backends/cuda/nccl_link.hpp"
#endif

namespace tapestry::driver {

using namespace tapestry::backend;

// ---------------------------------------------------------------- loading

plan::LoadedPlan loadRunnable(const std::string& path,
                              const metakernel::MetakernelLibrary& library) {
  const json::Document document =
      json::Document::parse(SourceFile::read(path, "a plan or graph file"));
  return runnableFrom(json::Value(document), library, path);
}

plan::LoadedPlan runnableFrom(const json::Value& root, const metakernel::MetakernelLibrary& library,
                              const std::string& path) {
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
  loaded.target = cost::loadLocalTarget().target; // a saved calibration included
  loaded.choice = plan::singleDeviceChoice(loaded.graph);
  loaded.plan = plan::buildPlan(loaded.graph, loaded.target.deviceCount(), loaded.choice);
  loaded.simulation = cost::simulate(loaded.graph, loaded.target, loaded.plan);
  return loaded;
}

void printWarnings(const std::vector<Diagnostic>& warnings, std::ostream& err) {
  for (const Diagnostic& warning : warnings) {
    err << warning.format();
  }
}

void addWarnings(Json& doc, const std::vector<Diagnostic>& warnings) {
  if (!warnings.empty()) {
    doc["warnings"] = json::arrayOf(warnings, json::diagnosticJson);
  }
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

void RankTransport::apply(ExecuteOptions& options) const {
  options.deviceLink = device.get();
  options.linkTakesDevice = deviceMemory;
}

RankTransport connectRanks(Backend& backend, RankLink* link, const std::vector<int>& deviceRank) {
  RankTransport transport;
  if (link == nullptr || backend.name() != "cuda") {
    return transport;
  }
  link->barrier();
  bool nccl = false;
#if TAPESTRY_HAVE_NCCL
  const char* setting = std::getenv("TAPESTRY_NCCL");
  nccl = (setting == nullptr || std::string(setting) != "0") && ncclUnavailable().empty();
#endif
  bool everyNccl = true;
  bool everyCudaAware = true;
  for (const std::vector<std::int64_t>& v :
       link->allgather({nccl ? 1 : 0, link->carriesDeviceMemory() ? 1 : 0})) {
    everyNccl = everyNccl && v.at(0) != 0;
    everyCudaAware = everyCudaAware && v.at(1) != 0;
  }
#if TAPESTRY_HAVE_NCCL
  if (everyNccl) {
    int home = 0;
    const auto it = std::find(deviceRank.begin(), deviceRank.end(), link->rank());
    if (it != deviceRank.end()) {
      home = static_cast<int>(it - deviceRank.begin());
    }
    transport.device = std::make_unique<NcclLink>(*link, dynamic_cast<CudaBackend&>(backend), home);
    return transport;
  }
#else
  (void)deviceRank;
  (void)everyNccl;
#endif
  transport.deviceMemory = everyCudaAware;
  return transport;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::string describeRanks(const std::vector<std::vector<int>>& rankDevices) {
  std::string text = "on " + plural(rankDevices.size(), "rank", "ranks") + ":";
  for (std::size_t r = 0; r < rankDevices.size(); ++r) {
    text += (r == 0 ? " rank " : ", rank ") + std::to_string(r);
    if (rankDevices[r].empty()) {
      text += " no device";
      continue;
    }
    text += rankDevices[r].size() == 1 ? " device" : " devices";
    for (int d : rankDevices[r]) {
      text += " " + std::to_string(d);
    }
  }
  return text;
}

// ---------------------------------------------------------------- traces

render::TaskIntervals measuredIntervals(const ExecutionStats& stats) {
  render::TaskIntervals times;
  auto interval = [](const TaskTime& t) { return cost::Interval{t.start, t.end}; };
  for (const std::vector<TaskTime>& op : stats.shardTimes) {
    times.shards.emplace_back();
    for (const TaskTime& t : op) {
      times.shards.back().push_back(interval(t));
    }
  }
  for (const TaskTime& t : stats.transferTimes) {
    times.transfers.push_back(interval(t));
  }
  for (const TaskTime& t : stats.reductionTimes) {
    times.reductions.push_back(interval(t));
  }
  return times;
}

std::string predictedLabel(const plan::LoadedPlan& loaded) {
  return "predicted (cost model, target " + loaded.target.name + ")";
}

std::string traceText(const plan::LoadedPlan& loaded, const render::TaskIntervals* measured,
                      const std::string& measuredLabel) {
  std::vector<render::Timeline> timelines;
  timelines.push_back(render::buildTimeline(loaded, render::intervalsOf(loaded.simulation),
                                            predictedLabel(loaded)));
  if (measured != nullptr) {
    timelines.push_back(render::buildTimeline(loaded, *measured, measuredLabel));
  }
  return render::traceJson(loaded, timelines);
}

namespace {

metakernel::MetakernelLibrary checkedLibrary(const std::vector<std::string>& kernelPaths,
                                             const std::string& backend,
                                             const std::string& tracePath) {
  if (!tracePath.empty()) {
    checkTracePath(tracePath);
  }
  requireBackend(backend);
  return metakernel::MetakernelLibrary::load(kernelPaths);
}

} // namespace

Runnable::Runnable(const std::string& planPath, const std::vector<std::string>& kernelPaths,
                   const std::string& backend, const std::string& tracePath)
    : library(checkedLibrary(kernelPaths, backend, tracePath)),
      loaded(loadRunnable(planPath, library)) {}

void checkTracePath(const std::string& path) {
  if (path == "-") {
    throw UsageError("--trace: expected a file name (standard output carries the report)");
  }
  checkWritable(path);
}

} // namespace tapestry::driver
