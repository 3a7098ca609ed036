// `tapestry run` and `tapestry bench` (SPEC §2, §9): the whole commands, so
// cli/cmd_run.cpp and cli/cmd_bench.cpp only parse flags and tests call the
// same code. Both take a plan (plan/v1) or a graph (graph/v1 or expanded/v1),
// which runs as the single-device plan on the `local` target.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/check.hpp"
#include "core/cost/plan_file.hpp"
#include "core/graph/graph.hpp"
#include "core/metakernel/library.hpp"
#include "core/plan/plan.hpp"

namespace tapestry::driver {

// What `run` and `bench` share: the plan, its kernels and backend, the inputs'
// seed and the output mode.
struct ExecutionOptions {
  std::string planPath;                 // "-" reads standard input
  std::vector<std::string> kernelPaths; // -k files and directories, in order
  std::string backend = "cpu";          // cpu | cuda
  std::uint64_t seed = 0;               // inputs are drawn from it (run: without --inputs)
  bool tf32 = false; // cuda: float32 products may use TF32 (the baseline of --check too)
  int threads = 0;   // cap on worker threads; 0: one per device, at most the cores
  bool json = false; // --format json: a summary document on `out`
  bool quiet = false;
  bool verbose = false;
};

struct RunConfig : ExecutionOptions {
  std::string inputsDir;  // one NAME.npy per graph input; "" draws from seed
  std::string outputsDir; // NAME.npy per graph output; "" writes nothing
  bool check = false;     // also run the unsharded graph and compare (exit 3 on mismatch)
};

// Returns 0, or 3 when --check finds a mismatch (the outputs are still
// written). Input errors are Error (exit 1); an unusable backend is
// BackendUnavailable (exit 4), reported before the plan is read.
int runCommand(const RunConfig& config, std::ostream& out, std::ostream& err);

struct BenchConfig : ExecutionOptions {
  int repeat = 10;       // timed runs; the median is reported
  int warmup = 2;        // untimed runs before them
  bool progress = false; // a progress line on `err` (the CLI sets it when stderr is a TTY)
};

// Times the plan and the unsharded single-device baseline (the graph with every
// operation as one shard on device 0) on the same inputs; returns 0. On cuda
// the inputs start in GPU memory, and a graph of one matmul or linear also
// gets the single cuBLASLt call on whole tensors as a baseline, timed with
// CUDA events.
int benchCommand(const BenchConfig& config, std::ostream& out, std::ostream& err);

// Reads PATH as a plan (plan/v1), or as a graph (graph/v1, expanded/v1) made
// into the single-device plan on the `local` target; by its "tapestry" tag.
plan::LoadedPlan loadRunnable(const std::string& path,
                              const metakernel::MetakernelLibrary& library);

// Throws BackendUnavailable (exit 4) unless `name` can run here: "cpu" always;
// "cuda" needs the CUDA backend built and a usable GPU.
void requireBackend(const std::string& name);

} // namespace tapestry::driver
