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
#include "backends/executor.hpp"
#include "core/cost/plan_file.hpp"
#include "core/cost/simulator.hpp"
#include "core/driver/execution.hpp"
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
  bool tf32 = false;     // cuda: float32 products may use TF32 (the baseline of --check too)
  int threads = 0;       // cap on worker threads; 0: one per device, at most the cores
  std::string tracePath; // --trace: a Chrome trace of the run beside its prediction; "" none
  bool json = false;     // --format json: a summary document on `out`
  bool quiet = false;
  bool verbose = false;
  // Under `mpirun -n K` (K > 1, cli/run_mpi.cpp): this process's rank. Each
  // rank runs its devices' tasks (backend::deviceRanks); rank 0 alone writes
  // files, checks and reports.
  backend::RankLink* link = nullptr;
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
  std::string inputsDir;  // one NAME.npy per graph input; "" draws from seed
  int repeat = 10;        // the fewest timed runs; the median is reported
  int maxRepeat = 0;      // the most, repeating until the median is stable; 0: max(repeat, 50)
  double maxSeconds = 10; // no further runs (past `repeat`) after this long timing one plan
  int warmup = 2;         // untimed runs before them
  bool progress = false;  // a progress line on `err` (the CLI sets it when stderr is a TTY)
};

// --trace's measured process: "measured (cpu backend, 2 workers)".
std::string measuredLabel(const std::string& backend, const backend::ExecutionStats& stats);

// Times the plan and the unsharded single-device baseline (the graph with every
// operation as one shard on device 0) on the same inputs, each until its median
// is stable (repeatAgain); reports their spread and, for the plan, measured
// against predicted time per operation, transfer group and reduction, worst
// first (BenchRow); returns 0. On cuda the inputs start in GPU memory, and a
// graph of one matmul or linear also gets the single cuBLASLt call on whole
// tensors as a baseline, timed with CUDA events. Usage errors (exit 2): --repeat
// below 1, --warmup below 0, --max-repeat below --repeat, --max-seconds below 0.
int benchCommand(const BenchConfig& config, std::ostream& out, std::ostream& err);

// ---- bench's stopping rule (docs/reference/cli.md#bench)
//
// The median of n timed runs is stable when both
//  - it moved by at most `tolerance` (relative to it) over the last ceil(n/4)
//    runs: |median(all n) - median(first n - ceil(n/4))| <= tolerance * median;
//  - its uncertainty is at most `tolerance`: 0.93 * (q3 - q1) / sqrt(n) <=
//    tolerance * median, where q1..q3 holds the middle half of the runs (the
//    sorted runs' elements floor((n-1)/4) and ceil(3(n-1)/4), so never narrower
//    than the quartiles). For normally distributed times the median's standard
//    error is 1.2533 sigma / sqrt(n) and sigma = IQR / 1.349, hence 0.93.
// The first catches a drift (a machine warming up or throttling), the second a
// spread (runs that swing between two speeds): a median of runs that swing 2x
// is not stable in any number of runs bench makes by default. One run is never
// stable (nothing to compare).
struct MedianStability {
  bool stable = false;
  double median = 0;
  double moved = 0;         // |median - median before the last runs| / median
  double uncertainty = 0;   // 0.93 * (q3 - q1) / sqrt(n) / median
  std::size_t lastRuns = 0; // ceil(n / 4)
};
inline constexpr double kMedianTolerance = 0.02;
MedianStability medianStability(const std::vector<double>& times,
                                double tolerance = kMedianTolerance);

struct RepeatLimits {
  int fewest = 10;     // --repeat: always run this many
  int most = 50;       // --max-repeat: never more
  double seconds = 10; // --max-seconds: past `fewest`, no run starts after this long
};
// The limits of a bench config (maxRepeat 0: max(repeat, 50)).
RepeatLimits repeatLimits(const BenchConfig& config);
// Whether bench times another run after `times` (taking `elapsed` seconds so
// far): while fewer than `fewest`; then until the median is stable, `most`
// runs are done or `seconds` have passed.
bool repeatAgain(const std::vector<double>& times, double elapsed, const RepeatLimits& limits);

// One row of bench's breakdown of a plan: the measured seconds (bench: the
// median over the timed runs of the row's summed task durations) against the
// predicted ones (the simulation's intervals, summed).
struct BenchRow {
  enum class Kind : std::uint8_t { Operation, Transfers, Reduction };
  Kind kind = Kind::Operation;
  std::string name;       // the operation; the tensor moved or reduced
  std::string kernel;     // Operation: its kernel; Reduction: its combine ("sum")
  std::string operation;  // Reduction: the operation whose partials it combines
  int from = 0, to = 0;   // Transfers: the places (plan::kHost for the host)
  bool partials = false;  // Transfers: moves of partial results (reduction steps)
  std::size_t count = 0;  // shards; transfers; reductions (output regions)
  std::size_t steps = 0;  // Reduction: combine steps
  std::int64_t bytes = 0; // Transfers: bytes moved
  double measured = 0;
  double predicted = 0;
  double difference() const { return measured - predicted; }
};
// Where a plan's time goes: one row per operation (its shards' durations
// summed), per transfer group (the transfers of one tensor over one link,
// partial moves apart) and per reduction group (the reductions of one output
// tensor of one operation, each from its first step's start to its last
// combine's end, moving its partials included), in plan order, with the
// predicted seconds from the simulation (measured 0).
class PlanBreakdown {
public:
  PlanBreakdown(const graph::ExpandedGraph& g, const plan::ShardPlan& p,
                const cost::Simulation& sim);
  const std::vector<BenchRow>& rows() const { return rows_; }
  // The measured seconds of one run, per row (stats from executing the plan).
  std::vector<double> measure(const backend::ExecutionStats& stats) const;

private:
  const plan::ShardPlan& p_;
  std::vector<BenchRow> rows_;
  std::vector<std::size_t> transferRow_;  // per transfer
  std::vector<std::size_t> reductionRow_; // per reduction
};

} // namespace tapestry::driver
