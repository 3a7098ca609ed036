// `tapestry bench`: the breakdown of a plan's time, and the command
// (core/driver/run_command.hpp declares them with run; the stopping rule is in
// bench_stopping.cpp).
#include "core/driver/run_command.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
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

// ---------------------------------------------------------------- bench: breakdown

PlanBreakdown::PlanBreakdown(const graph::ExpandedGraph& g, const plan::ShardPlan& p,
                             const cost::Simulation& sim)
    : p_(p) {
  checkInvariant(sim.shards.size() == p.ops.size() && sim.transfers.size() == p.transfers.size() &&
                     sim.reductions.size() == p.reductions.size(),
                 "bench: the simulation is the plan's");
  for (std::size_t op = 0; op < p.ops.size(); ++op) {
    checkInvariant(sim.shards[op].size() == p.ops[op].shards.size(),
                   "bench: the simulation is the plan's");
    BenchRow row;
    row.kind = BenchRow::Kind::Operation;
    row.name = g.operations[op].name;
    row.kernel = g.operations[op].kernel;
    row.count = p.ops[op].shards.size();
    for (const cost::Interval& i : sim.shards[op]) {
      row.predicted += i.end - i.start;
    }
    rows_.push_back(row);
  }
  // Groups in order of first appearance.
  std::map<std::tuple<std::size_t, int, int, bool>, std::size_t> transferGroups;
  for (std::size_t i = 0; i < p.transfers.size(); ++i) {
    const plan::Transfer& t = p.transfers[i];
    const auto key = std::make_tuple(t.tensor, t.from, t.to, t.reduction.has_value());
    auto [at, added] = transferGroups.emplace(key, rows_.size());
    if (added) {
      BenchRow row;
      row.kind = BenchRow::Kind::Transfers;
      row.name = g.tensors[t.tensor].name;
      row.from = t.from;
      row.to = t.to;
      row.partials = t.reduction.has_value();
      rows_.push_back(row);
    }
    BenchRow& row = rows_[at->second];
    ++row.count;
    row.bytes += t.bytes;
    row.predicted += sim.transfers[i].end - sim.transfers[i].start;
    transferRow_.push_back(at->second);
  }
  std::map<std::pair<std::size_t, std::size_t>, std::size_t> reductionGroups;
  for (std::size_t r = 0; r < p.reductions.size(); ++r) {
    const plan::Reduction& red = p.reductions[r];
    auto [at, added] = reductionGroups.emplace(std::make_pair(red.op, red.tensor), rows_.size());
    if (added) {
      BenchRow row;
      row.kind = BenchRow::Kind::Reduction;
      row.name = g.tensors[red.tensor].name;
      row.kernel = red.combine;
      row.operation = g.operations[red.op].name;
      rows_.push_back(row);
    }
    BenchRow& row = rows_[at->second];
    ++row.count;
    row.steps += red.steps.size();
    row.predicted += sim.reductions[r].end - sim.reductions[r].start;
    reductionRow_.push_back(at->second);
  }
}

std::vector<double> PlanBreakdown::measure(const ExecutionStats& stats) const {
  std::vector<double> seconds(rows_.size(), 0.0);
  checkInvariant(stats.shardTimes.size() == p_.ops.size() &&
                     stats.transferTimes.size() == transferRow_.size() &&
                     stats.reductionTimes.size() == reductionRow_.size(),
                 "bench: the run is of the plan");
  for (std::size_t op = 0; op < stats.shardTimes.size(); ++op) {
    for (const TaskTime& t : stats.shardTimes[op]) {
      seconds[op] += t.seconds();
    }
  }
  for (std::size_t i = 0; i < transferRow_.size(); ++i) {
    seconds[transferRow_[i]] += stats.transferTimes[i].seconds();
  }
  for (std::size_t r = 0; r < reductionRow_.size(); ++r) {
    seconds[reductionRow_[r]] += stats.reductionTimes[r].seconds();
  }
  return seconds;
}

// ---------------------------------------------------------------- bench

namespace {

constexpr std::size_t kKinds = 3; // BenchRow::Kind's values

std::size_t kindIndex(BenchRow::Kind kind) {
  return static_cast<std::size_t>(kind);
}

struct Timing {
  std::vector<double> times; // wall seconds of each timed run
  double measured = 0;       // their median
  double min = 0;
  double max = 0;
  double elapsed = 0;    // seconds spent on the timed runs
  bool mostRuns = false; // stopped at --max-repeat
  MedianStability stability;
  double predicted = 0;
  ExecutionStats stats;                // of the last run
  std::vector<BenchRow> rows;          // the plan's breakdown, measured filled in
  std::array<BenchRow, kKinds> totals; // per kind, the rows summed (run by run)
  // With a breakdown: the median run (the timed run whose wall time is the
  // median; of two middle runs the faster), what --trace writes, and per plan
  // device its busy seconds in that run (render::deviceBusy) and the predicted
  // ones. One run's figures, so that the devices' busy times, the wall time and
  // the trace's slices all describe the same run.
  std::size_t medianRun = 0;
  std::vector<double> busyMeasured;
  std::vector<double> busyPredicted;
  render::TaskIntervals medianRunTimes; // kept only with --trace
};

// Picks the median run among the timed runs and keeps its busy times (and,
// with --trace, its task times).
void keepMedianRun(Timing& t, std::vector<std::vector<double>>& busyRuns,
                   std::vector<render::TaskIntervals>& runTimes) {
  if (busyRuns.empty()) {
    return;
  }
  std::vector<std::size_t> order(t.times.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return t.times[a] < t.times[b]; });
  t.medianRun = order[(order.size() - 1) / 2];
  t.busyMeasured = std::move(busyRuns[t.medianRun]);
  if (t.medianRun < runTimes.size()) {
    t.medianRunTimes = std::move(runTimes[t.medianRun]);
  }
}

void summarize(Timing& t, const RepeatLimits& limits) {
  t.measured = median(t.times);
  t.min = *std::min_element(t.times.begin(), t.times.end());
  t.max = *std::max_element(t.times.begin(), t.times.end());
  t.stability = medianStability(t.times);
  t.mostRuns = static_cast<int>(t.times.size()) >= limits.most;
}

// Under mpirun every rank repeats as rank 0 decides (its clock is the one reported).
bool repeatOnEveryRank(bool again, RankLink* link) {
  if (link == nullptr) {
    return again;
  }
  return link->allgather({again ? 1 : 0})[0][0] != 0;
}

// Runs the plan `--warmup` times, then until repeatAgain says stop. With a
// breakdown, each row's measured time is the median over the timed runs of its
// summed task durations, and each total the median of the run's rows summed.
Timing timePlan(const graph::ExpandedGraph& g, const plan::ShardPlan& p,
                const cost::Simulation& schedule, Backend& backend, const TensorBuffers& inputs,
                const BenchConfig& config, const std::string& label, const PlanBreakdown* breakdown,
                const cost::Target& target, const RankTransport& transport, std::ostream& err) {
  ExecuteOptions options;
  options.threads = config.threads;
  if (config.link != nullptr) {
    options.link = config.link;
    options.deviceRank = deviceRanks(p, target, config.link->ranks());
    transport.apply(options);
  }
  const RepeatLimits limits = repeatLimits(config);
  Timing timing;
  timing.predicted = schedule.objectives.timeS;
  // Made ready once (kernel calls prepared, constants packed at the first
  // run), as a runtime keeps a loaded model; each repetition runs the tasks.
  PreparedRun prepared(g, p, backend, inputs, options, &schedule);
  for (int i = 0; i < config.warmup; ++i) {
    if (config.progress) {
      err << "\rbench: " << label << " warm-up " << (i + 1) << "/" << config.warmup << "\033[K"
          << std::flush;
    }
    prepared.run();
  }
  const std::size_t nRows = breakdown != nullptr ? breakdown->rows().size() : 0;
  std::vector<std::vector<double>> rowTimes(nRows + kKinds);
  std::vector<std::vector<double>> busyRuns;   // per timed run, per device
  std::vector<render::TaskIntervals> runTimes; // per timed run, with --trace
  const double begin = Backend::now();
  do {
    if (config.progress) {
      err << "\rbench: " << label << " run " << (timing.times.size() + 1) << " (" << limits.fewest
          << " to " << limits.most << ", until the median is stable)\033[K" << std::flush;
    }
    Execution run = prepared.run();
    timing.times.push_back(run.stats.wallSeconds);
    if (breakdown != nullptr) {
      const std::vector<double> seconds = breakdown->measure(run.stats);
      std::array<double, kKinds> sums{};
      for (std::size_t r = 0; r < nRows; ++r) {
        rowTimes[r].push_back(seconds[r]);
        sums[kindIndex(breakdown->rows()[r].kind)] += seconds[r];
      }
      for (std::size_t k = 0; k < kKinds; ++k) {
        rowTimes[nRows + k].push_back(sums[k]);
      }
      render::TaskIntervals times = measuredIntervals(run.stats);
      busyRuns.push_back(render::deviceBusy(p, times));
      if (!config.tracePath.empty()) {
        runTimes.push_back(std::move(times));
      }
    }
    timing.stats = std::move(run.stats);
    timing.elapsed = Backend::now() - begin;
  } while (repeatOnEveryRank(repeatAgain(timing.times, timing.elapsed, limits), config.link));
  summarize(timing, limits);
  if (breakdown != nullptr) {
    keepMedianRun(timing, busyRuns, runTimes);
    timing.busyPredicted = render::deviceBusy(p, render::intervalsOf(schedule));
    timing.rows = breakdown->rows();
    for (std::size_t k = 0; k < kKinds; ++k) {
      timing.totals[k].kind = static_cast<BenchRow::Kind>(k);
      timing.totals[k].measured = median(rowTimes[nRows + k]);
    }
    for (std::size_t r = 0; r < nRows; ++r) {
      BenchRow& row = timing.rows[r];
      row.measured = median(rowTimes[r]);
      BenchRow& total = timing.totals[kindIndex(row.kind)];
      total.count += row.count;
      total.steps += row.steps;
      total.bytes += row.bytes;
      total.predicted += row.predicted;
    }
    // Worst first: by how far off the prediction is, in seconds.
    std::stable_sort(timing.rows.begin(), timing.rows.end(),
                     [](const BenchRow& a, const BenchRow& b) {
                       return std::fabs(a.difference()) > std::fabs(b.difference());
                     });
  }
  return timing;
}

Json ratioJson(double measured, double predicted) {
  return predicted > 0 ? Json(measured / predicted) : Json(nullptr);
}

Json timingJson(const Timing& t, std::int64_t flops, std::size_t devices) {
  Json j = Json::object();
  j["devices"] = devices;
  j["workers"] = t.stats.workers;
  j["blas_threads"] = t.stats.blasThreads;
  j["measured_s"] = t.measured;
  j["predicted_s"] = t.predicted;
  j["measured_over_predicted"] = ratioJson(t.measured, t.predicted);
  j["flops_per_s"] = t.measured > 0 ? Json(static_cast<double>(flops) / t.measured) : Json(nullptr);
  Json peaks = Json::array();
  for (const DeviceMemory& d : t.stats.devices) {
    peaks.push_back(d.peakBytes);
  }
  j["peak_bytes_per_device"] = peaks;
  j["times_s"] = t.times;
  j["min_s"] = t.min;
  j["median_s"] = t.measured;
  j["max_s"] = t.max;
  j["stable"] = t.stability.stable;
  j["median_moved"] = t.stability.moved;
  j["median_uncertainty"] = t.stability.uncertainty;
  return j;
}

Json placeJson(int place) {
  return place == plan::kHost ? Json("host") : Json(place);
}

Json rowJson(const BenchRow& row) {
  Json j = Json::object();
  switch (row.kind) {
  case BenchRow::Kind::Operation:
    j["name"] = row.name;
    j["kernel"] = row.kernel;
    j["shards"] = row.count;
    break;
  case BenchRow::Kind::Transfers:
    j["tensor"] = row.name;
    j["from"] = placeJson(row.from);
    j["to"] = placeJson(row.to);
    j["partials"] = row.partials;
    j["transfers"] = row.count;
    j["bytes"] = row.bytes;
    break;
  case BenchRow::Kind::Reduction:
    j["tensor"] = row.name;
    j["operation"] = row.operation;
    j["combine"] = row.kernel;
    j["regions"] = row.count;
    j["steps"] = row.steps;
    break;
  }
  j["measured_s"] = row.measured;
  j["predicted_s"] = row.predicted;
  j["ratio"] = ratioJson(row.measured, row.predicted);
  return j;
}

// The plan's rows of one kind, worst first, and the totals.
void breakdownJson(const Timing& plan, Json& doc) {
  const char* keys[kKinds] = {"operations", "transfers", "reductions"};
  Json totals = Json::object();
  for (std::size_t k = 0; k < kKinds; ++k) {
    Json list = Json::array();
    for (const BenchRow& row : plan.rows) {
      if (kindIndex(row.kind) == k) {
        list.push_back(rowJson(row));
      }
    }
    doc[keys[k]] = list;
    const BenchRow& total = plan.totals[k];
    Json t = Json::object();
    t["count"] = total.count;
    t["measured_s"] = total.measured;
    t["predicted_s"] = total.predicted;
    t["ratio"] = ratioJson(total.measured, total.predicted);
    totals[keys[k]] = t;
  }
  doc["totals"] = totals;
  Json devices = Json::array();
  for (std::size_t d = 0; d < plan.busyMeasured.size(); ++d) {
    Json j = Json::object();
    j["device"] = d;
    j["measured_busy_s"] = plan.busyMeasured[d];
    j["predicted_busy_s"] = plan.busyPredicted[d];
    j["ratio"] = ratioJson(plan.busyMeasured[d], plan.busyPredicted[d]);
    devices.push_back(std::move(j));
  }
  doc["devices"] = devices;
}

std::string ratioText(double a, double b) {
  if (b <= 0) {
    return "-";
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", a / b);
  return buffer;
}

std::string percent(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", 100 * fraction);
  return buffer;
}

std::string rowLabel(const BenchRow& row) {
  switch (row.kind) {
  case BenchRow::Kind::Operation:
    return "op " + row.name + " (" + row.kernel + ", " + plural(row.count, "shard", "shards") + ")";
  case BenchRow::Kind::Transfers:
    return std::string(row.partials ? "partials " : "transfer ") + row.name + " " +
           plan::placeName(row.from) + "->" + plan::placeName(row.to) + " (" +
           plural(row.count, "region", "regions") + ", " + cost::formatSize(row.bytes) + ")";
  case BenchRow::Kind::Reduction:
    return "reduction " + row.name + " of " + row.operation + " (" + row.kernel + ", " +
           plural(row.count, "region", "regions") + ")";
  }
  return "";
}

std::string totalLabel(const BenchRow& total) {
  switch (total.kind) {
  case BenchRow::Kind::Operation:
    return "total operations (" + plural(total.count, "shard", "shards") + ")";
  case BenchRow::Kind::Transfers:
    return "total transfers (" + plural(total.count, "region", "regions") + ", " +
           cost::formatSize(total.bytes) + ")";
  case BenchRow::Kind::Reduction:
    return "total reductions (" + plural(total.count, "region", "regions") + ")";
  }
  return "";
}

std::string signedTime(double seconds) {
  return (seconds > 0 ? "+" : "") + cost::formatTime(seconds);
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
// timed with CUDA events (`--repeat` runs, not adaptive); nullopt for other
// graphs or backends.
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
  summarize(t, RepeatLimits{config.repeat, config.repeat, 0});
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

// What the text report needs.
struct BenchReport {
  const BenchConfig& config;
  const std::string& file;
  const graph::ExpandedGraph& g;
  const plan::LoadedPlan& loaded;
  const plan::ShardPlan& single;
  std::string backend;
  const Timing& plan;
  const Timing& singleDevice;
  const std::optional<Timing>& call;
};

// The note for a median that is not stable: why bench stopped, and by how much.
std::string instabilityNote(const std::string& label, const Timing& t, const RepeatLimits& limits) {
  const std::size_t n = t.times.size();
  if (n < 2) {
    return "note: " + label +
           ": one timed run cannot tell whether its time is stable (--max-repeat)";
  }
  return "note: " + label + ": the median is not stable after " + std::to_string(n) + " runs" +
         (t.mostRuns ? " (--max-repeat " + std::to_string(limits.most) + ")"
                     : " in " + cost::formatTime(t.elapsed) + " (--max-seconds " +
                           cost::formatTime(limits.seconds) + ")") +
         ": it moved " + percent(t.stability.moved) + " over the last " +
         std::to_string(t.stability.lastRuns) + " and is uncertain to " +
         percent(t.stability.uncertainty) + " (stable is both under " + percent(kMedianTolerance) +
         "); the runs took " + cost::formatTime(t.min) + " to " + cost::formatTime(t.max);
}

// Bytes of weights the plan's shards read through packed ports from graph
// inputs not marked constant (plan::Shard::repacked): the CPU backend's
// products pack them anew on every run.
std::int64_t repackedBytes(const plan::ShardPlan& p) {
  std::int64_t bytes = 0;
  for (const plan::OpPlan& op : p.ops) {
    for (const plan::Shard& shard : op.shards) {
      bytes += shard.repacked;
    }
  }
  return bytes;
}

std::string repackNote(std::int64_t bytes) {
  return "note: " + cost::formatSize(bytes) +
         " of weights come from graph inputs not marked constant, so the CPU products pack "
         "them anew on every run; mark them \"constant\": true (import marks an ONNX model's "
         "initializers) and they are packed once";
}

void printBenchText(const BenchReport& r, std::ostream& out) {
  const RepeatLimits limits = repeatLimits(r.config);
  const std::int64_t flops = r.g.totalFlops();
  out << "bench " << r.file << " (graph " << r.g.name << ", " << r.backend << ", target "
      << r.loaded.target.name << "): median of " << limits.fewest;
  if (limits.most > limits.fewest) {
    out << " to " << limits.most << " runs, until stable,";
  }
  out << " after " << r.config.warmup << " warm-up" << (r.config.warmup == 1 ? "" : "s") << "\n";
  if (r.config.link != nullptr) {
    const int ranks = r.config.link->ranks();
    out << describeRanks(rankDevices(r.loaded.plan,
                                     deviceRanks(r.loaded.plan, r.loaded.target, ranks), ranks))
        << "; between ranks: " << transportName(r.plan.stats.transport) << "\n";
  }
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
  row("plan", r.plan, devicesUsed(r.loaded.plan));
  row("single device", r.singleDevice, devicesUsed(r.single));
  if (r.call) {
    row("cuBLASLt call", *r.call, 1);
  }
  out << "speedup of the plan over the single device: "
      << ratioText(r.singleDevice.measured, r.plan.measured) << "x (predicted "
      << ratioText(r.singleDevice.predicted, r.plan.predicted) << "x)\n";
  if (r.call) {
    out << "plan throughput over the single cuBLASLt call: "
        << ratioText(r.call->measured, r.plan.measured) << "x\n";
  }

  // The spread of the timed runs, and whether their medians are stable.
  out << padded("spread", 15) << padded("min", w) << padded("median", w) << padded("max", w)
      << "runs\n";
  auto spread = [&](const std::string& name, const Timing& t) {
    out << padded(name, 15) << padded(cost::formatTime(t.min), w)
        << padded(cost::formatTime(t.measured), w) << padded(cost::formatTime(t.max), w)
        << t.times.size() << (t.stability.stable ? ", stable" : ", not stable") << "\n";
  };
  spread("plan", r.plan);
  spread("single device", r.singleDevice);
  if (r.call) {
    spread("cuBLASLt call", *r.call);
  }
  const std::pair<const char*, const Timing*> timings[] = {{"plan", &r.plan},
                                                           {"single device", &r.singleDevice}};
  for (const auto& [name, t] : timings) {
    if (!t->stability.stable) {
      out << instabilityNote(name, *t, limits) << "\n";
    }
  }
  if (r.call && !r.call->stability.stable) {
    out << instabilityNote("cuBLASLt call", *r.call, RepeatLimits{limits.fewest, limits.fewest, 0})
        << "\n";
  }
  if (const std::int64_t repacked = repackedBytes(r.loaded.plan);
      r.backend == "cpu" && repacked > 0) {
    out << repackNote(repacked) << "\n";
  }

  // Where the plan's time goes, worst first.
  const std::size_t shown =
      r.config.verbose ? r.plan.rows.size() : std::min<std::size_t>(r.plan.rows.size(), 10);
  std::size_t width = 0;
  for (std::size_t i = 0; i < shown; ++i) {
    width = std::max(width, rowLabel(r.plan.rows[i]).size());
  }
  for (const BenchRow& total : r.plan.totals) {
    width = std::max(width, totalLabel(total).size());
  }
  width += 2;
  out << "where the plan's time goes, worst first (each row the median over its timed runs):\n";
  out << padded("", width) << padded("measured", w) << padded("predicted", w)
      << padded("measured/pred", w) << "difference\n";
  auto line = [&](const std::string& label, const BenchRow& entry) {
    out << padded(label, width) << padded(cost::formatTime(entry.measured), w)
        << padded(cost::formatTime(entry.predicted), w)
        << padded(ratioText(entry.measured, entry.predicted), w) << signedTime(entry.difference())
        << "\n";
  };
  for (std::size_t i = 0; i < shown; ++i) {
    line(rowLabel(r.plan.rows[i]), r.plan.rows[i]);
  }
  if (shown < r.plan.rows.size()) {
    out << "... " << plural(r.plan.rows.size() - shown, "more row", "more rows")
        << " (-v shows every row)\n";
  }
  for (const BenchRow& total : r.plan.totals) {
    line(totalLabel(total), total);
  }
  if (!r.config.tracePath.empty()) {
    out << "trace -> " << r.config.tracePath << " (the prediction beside the median run, "
        << (r.plan.medianRun + 1) << " of " << r.plan.times.size() << ")\n";
  }
}

// The usage errors of bench's numeric flags.
void checkBenchFlags(const BenchConfig& config) {
  if (config.repeat < 1 || config.warmup < 0) {
    throw UsageError("bench needs --repeat >= 1 and --warmup >= 0");
  }
  if (config.maxRepeat != 0 && config.maxRepeat < config.repeat) {
    throw UsageError("--max-repeat: " + std::to_string(config.maxRepeat) +
                     " is less than --repeat " + std::to_string(config.repeat) +
                     " (the fewest timed runs)");
  }
  if (!(config.maxSeconds >= 0)) {
    std::ostringstream text;
    text << "--max-seconds: " << config.maxSeconds << " is not a time (expected seconds >= 0)";
    throw UsageError(text.str());
  }
}

// bench --format json: the report of both timings (and of the one-call
// baseline on CUDA).
Json benchJson(const BenchReport& r, const Timing* callTiming, std::int64_t flops) {
  const BenchConfig& config = r.config;
  const plan::LoadedPlan& loaded = r.loaded;
  const RepeatLimits limits = repeatLimits(config);
  Json doc = Json::object();
  doc["status"] = "ok";
  doc["plan_file"] = r.file;
  doc["graph"] = r.g.name;
  doc["backend"] = r.backend;
  doc["target"] = loaded.target.name;
  doc["repeat"] = config.repeat;
  doc["max_repeat"] = limits.most;
  doc["max_seconds"] = limits.seconds;
  doc["warmup"] = config.warmup;
  doc["flops"] = flops;
  if (config.link != nullptr) {
    doc["ranks"] = config.link->ranks();
    doc["rank_devices"] =
        rankDevices(loaded.plan, deviceRanks(loaded.plan, loaded.target, config.link->ranks()),
                    config.link->ranks());
    doc["cross_rank_transport"] = transportName(r.plan.stats.transport);
  }
  const Timing& planTiming = r.plan;
  doc["plan"] = timingJson(planTiming, flops, devicesUsed(loaded.plan));
  doc["single_device"] = timingJson(r.singleDevice, flops, devicesUsed(r.single));
  doc["speedup"] =
      planTiming.measured > 0 ? Json(r.singleDevice.measured / planTiming.measured) : Json(nullptr);
  if (callTiming != nullptr) {
    doc["single_call"] = timingJson(*callTiming, flops, 1);
    doc["plan_over_single_call"] =
        planTiming.measured > 0 ? Json(callTiming->measured / planTiming.measured) : Json(nullptr);
  }
  if (r.backend == "cpu") {
    doc["repacked_bytes"] = repackedBytes(loaded.plan);
  }
  breakdownJson(planTiming, doc);
  if (!config.tracePath.empty()) {
    Json trace = Json::object();
    trace["output"] = config.tracePath;
    trace["run"] = planTiming.medianRun;
    doc["trace"] = trace;
  }
  addWarnings(doc, loaded.warnings);
  return doc;
}

} // namespace

int benchCommand(const BenchConfig& config, std::ostream& out, std::ostream& err) {
  checkBenchFlags(config);
  // Under mpirun only rank 0 writes the trace, so only its path is checked.
  const bool writes = config.link == nullptr || config.link->rank() == 0;
  const Runnable input(config.planPath, config.kernelPaths, config.backend,
                       writes ? config.tracePath : std::string());
  const plan::LoadedPlan& loaded = input.loaded;
  const graph::ExpandedGraph& g = loaded.graph;
  if (writes) {
    printWarnings(loaded.warnings, err);
  }

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
  const TensorBuffers inputs =
      config.inputsDir.empty() ? drawInputs(g, config.seed) : loadInputs(g, config.inputsDir);

  const std::unique_ptr<Backend> benchBackend = makeBackend(
      config.backend, std::max({1, loaded.plan.deviceCount, single.deviceCount}), config.tf32);
  Backend& backend = *benchBackend;
  const TensorBuffers timedInputs =
      config.backend == "cpu" ? inputs : inputsOnDevice(backend, inputs, 0);
  const PlanBreakdown breakdown(g, loaded.plan, loaded.simulation);
  const RankTransport transport = connectRanks(
      backend, config.link,
      config.link != nullptr ? deviceRanks(loaded.plan, loaded.target, config.link->ranks())
                             : std::vector<int>{});
  const Timing planTiming = timePlan(g, loaded.plan, loaded.simulation, backend, timedInputs,
                                     config, "plan", &breakdown, loaded.target, transport, err);
  // Under mpirun the baseline's device 0 is on rank 0; the others take part
  // in its runs' collectives only.
  const Timing singleTiming = timePlan(g, single, singleSim, backend, timedInputs, config,
                                       "single device", nullptr, loaded.target, transport, err);
  if (config.link != nullptr && config.link->rank() != 0) {
    return 0; // rank 0 reports
  }
  std::optional<Timing> callTiming;
#if TAPESTRY_HAVE_CUDA
  if (config.link == nullptr) {
    callTiming = timeSingleCall(backend, g, timedInputs, config, singleSim.objectives.timeS);
  }
#endif
  if (config.progress) {
    err << "\r\033[K" << std::flush;
  }

  if (!config.tracePath.empty()) {
    const std::string label = measuredLabel(backend.name(), planTiming.stats) +
                              ", the median run: " + std::to_string(planTiming.medianRun + 1) +
                              " of " + std::to_string(planTiming.times.size());
    writeFileAtomically(config.tracePath, traceText(loaded, &planTiming.medianRunTimes, label),
                        out);
  }

  const std::int64_t flops = g.totalFlops();
  const std::string file = displayName(config.planPath);
  const BenchReport report{config,     file,         g,         loaded, single, backend.name(),
                           planTiming, singleTiming, callTiming};
  if (config.json) {
    out << benchJson(report, callTiming ? &*callTiming : nullptr, flops).dump(2) << "\n";
    return 0;
  }
  if (!config.quiet) {
    printBenchText(report, out);
  }
  return 0;
}

} // namespace tapestry::driver
