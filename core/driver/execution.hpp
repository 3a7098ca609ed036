// What the commands that execute plans (run, bench, calibrate) share: reading
// a plan or graph to run, choosing and creating a backend, and small report
// helpers. Internal to core/driver.
#pragma once

#include <cstddef>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/executor.hpp"
#include "core/cost/plan_file.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"
#include "core/plan/plan.hpp"
#include "core/render/timeline.hpp"

namespace tapestry::driver {

// Reads PATH as a plan (plan/v1), or as a graph (graph/v1, expanded/v1) made
// into the single-device plan on the `local` target (this machine's saved
// calibration when there is one); by its "tapestry" tag.
plan::LoadedPlan loadRunnable(const std::string& path,
                              const metakernel::MetakernelLibrary& library);
// The same from a parsed document (`path` names it in messages).
plan::LoadedPlan runnableFrom(const json::Value& root, const metakernel::MetakernelLibrary& library,
                              const std::string& path);

// The loader's warnings (plan::LoadedPlan::warnings) on `err`, each as a
// diagnostic ("FILE:LINE:COL: warning: ..." with its notes); with -q too.
void printWarnings(const std::vector<Diagnostic>& warnings, std::ostream& err);
// A --format json report's "warnings", only when there are any: each as
// json::diagnosticJson gives it.
void addWarnings(Json& doc, const std::vector<Diagnostic>& warnings);

// What run and bench do before any work, in order: check the --trace path
// (when given), require the backend, load the kernels, read the plan.
class Runnable {
public:
  Runnable(const std::string& planPath, const std::vector<std::string>& kernelPaths,
           const std::string& backend, const std::string& tracePath);
  Runnable(const Runnable&) = delete;
  Runnable& operator=(const Runnable&) = delete;

  const metakernel::MetakernelLibrary library;
  const plan::LoadedPlan loaded;
};

// Throws BackendUnavailable (exit 4) unless `name` can run here: "cpu" always;
// "cuda" needs the CUDA backend built and a usable GPU. UsageError for others.
void requireBackend(const std::string& name);

// The backend that runs plans of `planDevices` devices: the CPU backend, or
// the CUDA backend with one stream per plan device (BackendUnavailable without
// a GPU). --tf32 without cuda is a UsageError.
std::unique_ptr<backend::Backend> makeBackend(const std::string& name, int planDevices,
                                              bool tf32 = false);

// How the cross-rank transfers of a distributed run move (docs/distributed.md),
// decided once per command and alike on every rank: for the CUDA backend,
// NCCL when this binary has it and libnccl loads on every rank (and
// TAPESTRY_NCCL is not 0), else device buffers through MPI when the MPI
// library is CUDA-aware on every rank, else host staging; the CPU backend's
// buffers are host memory and go through MPI as they are. With the CUDA
// backend this is a collective after a barrier (RankLink::barrier), so a rank
// that failed before is reported as at any first barrier.
struct RankTransport {
  std::unique_ptr<backend::DeviceLink> device; // NCCL
  bool deviceMemory = false;                   // a CUDA-aware MPI on every rank
  // Sets ExecuteOptions::deviceLink and linkTakesDevice.
  void apply(backend::ExecuteOptions& options) const;
};
// `deviceRank`: the plan's devices by rank (deviceRanks); the NCCL link runs
// on the GPU of the first device this rank holds. Nothing without `link`.
RankTransport connectRanks(backend::Backend& backend, backend::RankLink* link,
                           const std::vector<int>& deviceRank);

// Devices a plan runs shards on.
std::size_t devicesUsed(const plan::ShardPlan& p);
// "1 device", "2 devices".
std::string plural(std::size_t n, const char* one, const char* many);
double median(std::vector<double> values);
// Under mpirun: "on 2 ranks: rank 0 devices 0 1, rank 1 devices 2 3" (a rank
// past the plan's devices: "rank 2 no device").
std::string describeRanks(const std::vector<std::vector<int>>& rankDevices);

// ---- traces (--trace, tapestry trace; core/render/trace.hpp)

// A run's task times as intervals parallel to its plan.
render::TaskIntervals measuredIntervals(const backend::ExecutionStats& stats);
// "predicted (cost model, target h100x8)": the prediction's process in a trace.
std::string predictedLabel(const plan::LoadedPlan& loaded);
// The trace of `loaded`'s prediction and, with `measured`, of a run beside it
// (labelled `measuredLabel`).
std::string traceText(const plan::LoadedPlan& loaded,
                      const render::TaskIntervals* measured = nullptr,
                      const std::string& measuredLabel = {});
// --trace FILE: a file name (standard output carries the report; UsageError for
// "-"), writable (Error, exit 1, before any work).
void checkTracePath(const std::string& path);

} // namespace tapestry::driver
