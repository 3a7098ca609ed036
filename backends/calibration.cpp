// Calibration: one-operation graphs run through the executor, timed, and
// turned into the profile tables of core/cost/profile.hpp.
#include "backends/calibration.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends/calibration_cases.hpp"
#include "backends/executor.hpp"
#include "backends/tensor_io.hpp"
#include "core/cost/simulator.hpp"
#include "core/diag/error.hpp"
#include "core/graph/expansion.hpp"
#include "core/plan/plan.hpp"

namespace tapestry::backend {

namespace {

// A host "link" the executor never copies over (Backend::readsHostInPlace):
// a nanosecond per transfer, whatever its size, and a bandwidth to match.
constexpr double kInPlaceSeconds = 1e-9;
constexpr double kInPlaceBandwidth = 1e18;

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Runs one-operation plans and times them against a budget.
class Bench {
public:
  Bench(Backend& backend, int devices) : backend_(backend), devices_(devices) {}

  // Every op of `g` cut into `copies` equal shards along its index dim
  // `dim`, shard i on device i (or every shard on device 0 with `oneDevice`).
  plan::ShardPlan planFor(const graph::ExpandedGraph& g, int copies, bool oneDevice,
                          int dim = 0) const {
    plan::PlanChoice choices;
    for (const graph::Operation& op : g.operations) {
      plan::OpChoice choice;
      choice.split.assign(op.application.index.rank(), 1);
      choice.split.at(static_cast<std::size_t>(dim)) = copies;
      for (int i = 0; i < copies; ++i) {
        choice.devices.push_back(oneDevice ? 0 : i);
      }
      choices.ops.push_back(std::move(choice));
    }
    plan::PlanOptions options;
    options.inputsOn = plan::InputsOn::Free; // inputs resident: time the kernels alone
    return plan::buildPlan(g, std::max(devices_, copies), choices, options);
  }

  // One run's figures: the wall time of its tasks, the mean time of the
  // measured op's shards on their workers (measuredOp), and when the last
  // worker began its first task (how long it took to get every worker going).
  struct RunTimes {
    double wall = 0;
    double shard = 0;
    double lastStart = 0;
  };

  // The medians of each figure over repeats that fill about `seconds` (at
  // least 3, at most 25, after one warm-up).
  // Inputs are drawn in [-spread, spread] (float32).
  RunTimes time(const graph::ExpandedGraph& g, const plan::ShardPlan& p, double seconds,
                float spread = 1, const ExecuteOptions& options = {}) {
    const TensorBuffers inputs = inputsFor(g, spread);
    PreparedRun prepared(g, p, backend_, inputs, options);
    prepared.run(); // warm-up
    std::vector<double> walls, shards, starts;
    const std::size_t measured = measuredOp(g);
    const Clock::time_point start = Clock::now();
    while (walls.size() < 3 || (walls.size() < 25 && secondsSince(start) < seconds)) {
      const ExecutionStats stats = prepared.run().stats;
      double sum = 0;
      std::size_t count = 0;
      std::vector<double> firstStart(static_cast<std::size_t>(std::max(stats.workers, 1)), -1);
      for (std::size_t op = 0; op < stats.shardTimes.size(); ++op) {
        for (const TaskTime& t : stats.shardTimes[op]) {
          if (op == measured) {
            sum += t.seconds();
            ++count;
          }
          double& first = firstStart.at(static_cast<std::size_t>(t.worker));
          first = first < 0 ? t.start : std::min(first, t.start);
        }
      }
      walls.push_back(stats.wallSeconds);
      shards.push_back(count > 0 ? sum / static_cast<double>(count) : 0.0);
      starts.push_back(*std::max_element(firstStart.begin(), firstStart.end()));
    }
    return RunTimes{median(walls), median(shards), median(starts)};
  }

  // Seconds of one copy of `bytes` (a fresh zeroed buffer on `to`, then the
  // copy, as a transfer does it), median over repeats.
  double copyTime(std::int64_t bytes, int from, int to, double seconds) {
    const ZRange region = ZRange::fromShape(ZPoint(std::vector<std::int64_t>{bytes / 4}));
    Buffer source = backend_.allocate(DType::Float32, region, from);
    std::vector<double> times;
    const Clock::time_point start = Clock::now();
    while (times.size() < 5 || (times.size() < 40 && secondsSince(start) < seconds)) {
      const Clock::time_point t0 = Clock::now();
      Buffer target = backend_.allocate(DType::Float32, region, to);
      backend_.copyRegion(source.view(), target.view(), region);
      backend_.synchronize();
      times.push_back(secondsSince(t0));
    }
    return median(times);
  }

  // The same with every device receiving a copy at once (from the host, or
  // from the next device): the mean of the copies' own times, median over
  // repeats. On a CPU the copies share memory bandwidth.
  double copyTimeAll(std::int64_t bytes, bool fromHost, double seconds) {
    const ZRange region = ZRange::fromShape(ZPoint(std::vector<std::int64_t>{bytes / 4}));
    const auto n = static_cast<std::size_t>(devices_);
    std::vector<Buffer> sources;
    for (int d = 0; d < devices_; ++d) {
      sources.push_back(
          backend_.allocate(DType::Float32, region, fromHost ? kHostDevice : (d + 1) % devices_));
    }
    std::vector<double> own(n);
    auto copyInto = [&](std::size_t d) {
      const Clock::time_point t0 = Clock::now();
      Buffer target = backend_.allocate(DType::Float32, region, static_cast<int>(d));
      backend_.copyRegion(sources[d].view(), target.view(), region);
      backend_.synchronize();
      own[d] = secondsSince(t0);
    };
    std::vector<double> times;
    const Clock::time_point start = Clock::now();
    while (times.size() < 5 || (times.size() < 40 && secondsSince(start) < seconds)) {
      std::vector<std::thread> threads;
      for (std::size_t d = 1; d < n; ++d) {
        threads.emplace_back(copyInto, d);
      }
      copyInto(0);
      for (std::thread& t : threads) {
        t.join();
      }
      double sum = 0;
      for (double t : own) {
        sum += t;
      }
      times.push_back(sum / static_cast<double>(n));
    }
    return median(times);
  }

  int devices() const { return devices_; }
  bool readsHostInPlace() const { return backend_.readsHostInPlace(); }

private:
  // Random inputs of `g` in [-spread, spread] (float32; other dtypes as drawn).
  static TensorBuffers inputsFor(const graph::ExpandedGraph& g, float spread) {
    TensorBuffers inputs = drawInputs(g, 1);
    if (spread != 1) {
      for (auto& [name, buffer] : inputs) {
        if (buffer.dtype() == DType::Float32) {
          for (float& x : buffer.elements<float>()) {
            x *= spread;
          }
        }
      }
    }
    return inputs;
  }

  Backend& backend_;
  int devices_;
};

// The executor's cost of one task, and of getting every worker going.
void measureOverheads(Bench& bench, const metakernel::MetakernelLibrary& library, double budget,
                      cost::Profile& profile) {
  constexpr int kShards = 32;
  const graph::ExpandedGraph g = oneOpGraph(
      library, "add", tensorText("a", {kShards * 16}) + ", " + tensorText("b", {kShards * 16}), "",
      R"("inputs": {"A": "a", "B": "b"})");
  // What a task costs beyond its work on the worker: the wall time of 32
  // tiny shards on one device less their own times, per shard.
  const Bench::RunTimes many = bench.time(g, bench.planFor(g, kShards, true), 0.02 * budget);
  profile.taskOverhead = std::max(0.0, (many.wall - kShards * many.shard) / kShards);
  const int devices = bench.devices();
  if (devices > 1) {
    const graph::ExpandedGraph spread = oneOpGraph(
        library, "add", tensorText("a", {devices * 16}) + ", " + tensorText("b", {devices * 16}),
        "", R"("inputs": {"A": "a", "B": "b"})");
    profile.startOverhead =
        bench.time(spread, bench.planFor(spread, devices, false), 0.02 * budget).lastStart;
  }
}

// A family's table and how to measure its points again.
struct FamilyTable {
  cost::ProfileTable table;
  std::vector<int> steps; // the case's step of each point
  double perPoint = 0;    // seconds of runs per column of a point
};

// One point of a family's case (`step`): the shard's own time on one device
// (`alone`, the step's one-device graph and plan, which the caller has made)
// and, with several devices, with one such shard on every device at once
// (`all`).
std::pair<double, double> timePoint(Bench& bench, const metakernel::MetakernelLibrary& library,
                                    const FamilyCase& c, int step,
                                    const graph::ExpandedGraph& alone,
                                    const plan::ShardPlan& alonePlan, double perPoint) {
  const double aloneSeconds = bench.time(alone, alonePlan, perPoint, c.spread).shard;
  const int devices = bench.devices();
  if (devices <= 1) {
    return {aloneSeconds, 0.0};
  }
  const graph::ExpandedGraph all = c.graphFor(library, step, devices);
  return {
      aloneSeconds,
      bench.time(all, bench.planFor(all, devices, false, c.splitDim), perPoint, c.spread).shard};
}

// One family's table: its case's sizes in order, `alone` (one shard on one
// device) and, with several devices, `all` (one such shard on every device
// at once), each a shard's own time on its worker (the executor's dispatch is
// the profile's task overhead, the workers' start its start overhead).
// Always two sizes; then only while the family's share of the budget lasts.
FamilyTable measureFamily(Bench& bench, const metakernel::MetakernelLibrary& library,
                          const FamilyCase& c, const cost::KernelFamily& family,
                          double familyBudget, const std::function<void()>& progress) {
  const Clock::time_point familyStart = Clock::now();
  FamilyTable out;
  out.perPoint = familyBudget / (2.0 * c.steps);
  out.table.measure = family.measure;
  cost::ProfileTable& table = out.table;
  for (int step = 0; step < c.steps; ++step) {
    if (step >= 2 && secondsSince(familyStart) > familyBudget) {
      break;
    }
    progress();
    const graph::ExpandedGraph alone = c.graphFor(library, step, 1);
    const plan::ShardPlan alonePlan = bench.planFor(alone, 1, true);
    const plan::PlanTasks aloneTasks = plan::summarize(alone, alonePlan);
    const plan::PlanTasks::ShardTask& shard =
        aloneTasks.shards.at(aloneTasks.ops.at(measuredOp(alone)).shardBegin);
    const double size =
        static_cast<double>(family.measure == cost::WorkMeasure::Flops ? shard.flops : shard.bytes);
    if (!table.alone.empty() && !(size > table.alone.back().size)) {
      continue;
    }
    const auto [aloneSeconds, allSeconds] =
        timePoint(bench, library, c, step, alone, alonePlan, out.perPoint);
    table.alone.push_back({size, aloneSeconds});
    if (bench.devices() > 1) {
      table.all.push_back({size, allSeconds});
    }
    out.steps.push_back(step);
  }
  return out;
}

// Every point of a family's table timed again, each column keeping the
// smaller time: other work on the machine only adds time, and on a 2-core VM
// it came in stretches of seconds. Three calibrations in a row (2026-12-02):
// in one, both cores' products ran at half speed for a run of points
// (matmul's `all` at 0.07 to 4 MFLOP 1.9-2x its `alone`, 1.0-1.2x in the
// others), which turned `tiny`'s 2-device plan from predicted 1.37x faster
// than one device to 0.88x (measured 1.75x). The second pass comes after
// every family's first, seconds later.
std::vector<double> measureFamilyAgain(Bench& bench, const metakernel::MetakernelLibrary& library,
                                       const FamilyCase& c, FamilyTable& t) {
  cost::ProfileTable again;
  again.measure = t.table.measure;
  for (std::size_t k = 0; k < t.steps.size(); ++k) {
    const graph::ExpandedGraph alone = c.graphFor(library, t.steps[k], 1);
    const auto [aloneSeconds, allSeconds] =
        timePoint(bench, library, c, t.steps[k], alone, bench.planFor(alone, 1, true), t.perPoint);
    again.alone.push_back({t.table.alone[k].size, aloneSeconds});
    if (k < t.table.all.size()) {
      again.all.push_back({t.table.all[k].size, allSeconds});
    }
  }
  return keepFaster(t.table, again);
}

// The best rate (size per second) among a table's points; 0 without one.
double bestRate(const std::vector<cost::ProfilePoint>& points) {
  double best = 0;
  for (const cost::ProfilePoint& point : points) {
    if (point.seconds > 0) {
      best = std::max(best, point.size / point.seconds);
    }
  }
  return best;
}

// Copies: between two devices and from the host, 4 KiB to 64 MiB, with a
// tenth of the budget; fits the target's links and host link to them.
void measureCopies(Bench& bench, int devices, double budget, cost::Target& base,
                   cost::Profile& profile) {
  const bool inPlace = bench.readsHostInPlace();
  const double each = 0.1 * budget / ((devices > 1 ? 28 : 14) / (inPlace ? 2 : 1));
  std::vector<std::pair<double, double>> between, fromHost;
  for (std::int64_t bytes = 4096; bytes <= (std::int64_t{64} << 20); bytes *= 4) {
    const auto b = static_cast<double>(bytes);
    between.emplace_back(b, bench.copyTime(bytes, 0, devices > 1 ? 1 : 0, each));
    // Where the executor reads graph inputs in place, a transfer from the
    // host copies nothing and costs only its task's overhead (taskOverhead).
    fromHost.emplace_back(b,
                          inPlace ? kInPlaceSeconds : bench.copyTime(bytes, kHostDevice, 0, each));
    if (devices > 1) {
      profile.linkCopiesAll.push_back({b, bench.copyTimeAll(bytes, false, each)});
      if (!inPlace) {
        profile.hostCopiesAll.push_back({b, bench.copyTimeAll(bytes, true, each)});
      }
    }
  }
  base.links = fitLink(between);
  base.host = inPlace ? cost::LinkSpec{kInPlaceBandwidth, 0} : fitLink(fromHost);
  for (const auto& [bytes, seconds] : between) {
    profile.linkCopies.push_back({bytes, seconds});
  }
  for (const auto& [bytes, seconds] : fromHost) {
    profile.hostCopies.push_back({bytes, seconds});
  }
  if (base.nodes) {
    base.nodes->interNode = base.links;
  }
}

// How much faster one device runs a matmul and a conv2d (the largest sizes
// of their families that take well under the budget) with every core of the
// machine as its threads than with one thread: the scaling of a kernel's own
// threads, which the `alone` tables already include. By family name.
std::map<std::string, double, std::less<>>
measureThreadScaling(Bench& bench, const metakernel::MetakernelLibrary& library,
                     const std::vector<FamilyCase>& cases, double budget) {
  std::map<std::string, double, std::less<>> scaling;
  const int cores = usableHardwareThreads();
  if (cores < 2) {
    return scaling;
  }
  for (const FamilyCase& c : cases) {
    if (c.family != "matmul" && c.family != "conv") {
      continue;
    }
    const graph::ExpandedGraph g = c.graphFor(library, c.steps - 2, 1);
    const plan::ShardPlan p = bench.planFor(g, 1, true);
    ExecuteOptions one;
    one.blasThreads = 1;
    ExecuteOptions all;
    all.blasThreads = cores;
    const double single = bench.time(g, p, 0.01 * budget, c.spread, one).shard;
    const double many = bench.time(g, p, 0.01 * budget, c.spread, all).shard;
    if (single > 0 && many > 0) {
      scaling[c.family] = single / many;
    }
  }
  return scaling;
}

// How far the calibrated model's predicted speedup of a small plan split over
// every device, against the same graph on one device, is from the measured
// speedup: |ln(measured / predicted)| on graphs of about 1 to 300 us on one
// device (three sizes each of matmul, add, tanh and softmax), as a relative
// spread: e^x - 1 of the median. A noisy machine measures a wider spread, which is what
// `optimize` should know; but one burst of load must not decide it: measured
// in one go at the end, three calibrations in a row gave 4%, 15% and 66% (a
// 2-device `add` measured 5x slower than one device in the third, 1.5x faster
// in the others). So every case is measured in three passes, at the start of
// the calibration, halfway through the kernel families and at the end, and
// keeps the median of its passes' speedups.
constexpr int kSpreadPasses = 3; // start, halfway through the families, end
// Cases per point of the spread by size (Profile::spreadByTime).
constexpr std::size_t kSpreadGroup = 3;
// The budget from which calibrate measures the spread on large graphs too
// (each is run at least three times a pass, whatever the budget): below it,
// one spread from the small graphs.
constexpr double kSpreadLargeBudget = 10;

struct SpreadCase {
  std::string family;
  graph::ExpandedGraph graph;
  plan::ShardPlan single;
  plan::ShardPlan split;
  float inputSpread = 1;
  std::vector<double> measured; // single / split wall time, one per pass
};

std::vector<SpreadCase> spreadCases(const Bench& bench,
                                    const metakernel::MetakernelLibrary& library,
                                    const std::vector<FamilyCase>& cases, bool large) {
  const int devices = bench.devices();
  std::vector<SpreadCase> out;
  for (const FamilyCase& c : cases) {
    const bool matmul = c.kernel == "matmul";
    // Convolutions as a model's plans split them: one image, its channels
    // over the devices (each device's convolution then reads every input
    // channel, half of them sent by the other device). ResNet-18's
    // calibrated 2-device plan of such splits was predicted 1.16x faster
    // than one device and measured 0.99x (2026-12-02): a conv family
    // without a spread of its own was weighed with the spread at the
    // graph's size, 14%.
    const bool conv = c.family == "conv";
    if (!matmul && !conv && c.kernel != "add" && c.kernel != "tanh" && c.kernel != "softmax") {
      continue;
    }
    // Small graphs (steps 3-5 of matmul, 1-3 of the others), and with
    // `large` two larger ones of each (about 0.1 to 10 ms on one device):
    // the spread by size.
    std::vector<int> steps = matmul ? std::vector<int>{3, 4, 5} : std::vector<int>{1, 2, 3};
    if (large) {
      steps.insert(steps.end(), matmul ? std::initializer_list<int>{c.steps - 2, c.steps - 1}
                                       : std::initializer_list<int>{4, 6});
    }
    for (int step : steps) {
      SpreadCase sc{c.family, c.graphFor(library, step, conv ? 1 : devices), {}, {}, c.spread, {}};
      sc.single = bench.planFor(sc.graph, 1, true);
      sc.split = bench.planFor(sc.graph, devices, false, conv ? 1 : 0);
      out.push_back(std::move(sc));
    }
  }
  return out;
}

// One pass: each case's two plans timed in blocks of their own runs, as
// `bench` runs a plan (runs of the two alternating leave each other's data in
// the other core's cache, which a plan's repeated runs do not); which block
// comes first alternates between passes.
void measureSpreadPass(Bench& bench, std::vector<SpreadCase>& cases, double seconds) {
  for (SpreadCase& sc : cases) {
    const bool singleFirst = sc.measured.size() % 2 == 0;
    const double first =
        bench.time(sc.graph, singleFirst ? sc.single : sc.split, seconds, sc.inputSpread).wall;
    const double second =
        bench.time(sc.graph, singleFirst ? sc.split : sc.single, seconds, sc.inputSpread).wall;
    const double single = singleFirst ? first : second;
    const double split = singleFirst ? second : first;
    sc.measured.push_back(split > 0 ? single / split : 0.0);
  }
}

std::vector<SpeedupSample> spreadSamples(const std::vector<SpreadCase>& cases,
                                         const cost::Target& model) {
  std::vector<SpeedupSample> samples;
  for (const SpreadCase& sc : cases) {
    const double single = cost::simulate(sc.graph, model, sc.single).objectives.timeS;
    samples.push_back({single / cost::simulate(sc.graph, model, sc.split).objectives.timeS,
                       sc.measured, single, sc.family});
  }
  return samples;
}

// A sample with a prediction and a measurement.
bool usable(const SpeedupSample& s) {
  const double measured = s.measured.empty() ? 0.0 : median(s.measured);
  return s.predicted > 0 && measured > 0 && std::isfinite(s.predicted) && std::isfinite(measured);
}

} // namespace

std::vector<double> keepFaster(cost::ProfileTable& table, const cost::ProfileTable& again) {
  std::vector<double> ratios;
  auto merge = [&ratios](std::vector<cost::ProfilePoint>& into,
                         const std::vector<cost::ProfilePoint>& from) {
    if (from.size() != into.size()) {
      throw InternalError("calibrate: a table measured again has " + std::to_string(from.size()) +
                          " points, not " + std::to_string(into.size()));
    }
    for (std::size_t k = 0; k < into.size(); ++k) {
      if (from[k].size != into[k].size) {
        throw InternalError("calibrate: a table measured again at other sizes");
      }
      const double faster = std::min(into[k].seconds, from[k].seconds);
      const double slower = std::max(into[k].seconds, from[k].seconds);
      if (faster > 0) {
        ratios.push_back(slower / faster);
      }
      into[k].seconds = faster;
    }
  };
  merge(table.alone, again.alone);
  merge(table.all, again.all);
  return ratios;
}

void passDifference(std::vector<double> ratios, cost::Profile& profile) {
  profile.passDifference = ratios.empty() ? 0.0 : median(ratios) - 1;
  profile.passDifferenceMax =
      ratios.empty() ? 0.0 : *std::max_element(ratios.begin(), ratios.end()) - 1;
}

double speedupSpread(const std::vector<SpeedupSample>& samples) {
  std::vector<double> errors;
  for (const SpeedupSample& s : samples) {
    if (usable(s)) {
      errors.push_back(std::fabs(std::log(median(s.measured) / s.predicted)));
    }
  }
  return errors.empty() ? 0.0 : std::exp(median(errors)) - 1;
}

std::map<std::string, double, std::less<>>
spreadByFamily(const std::vector<SpeedupSample>& samples) {
  std::map<std::string, std::vector<SpeedupSample>, std::less<>> byFamily;
  for (const SpeedupSample& s : samples) {
    if (!s.family.empty() && usable(s)) {
      byFamily[s.family].push_back(s);
    }
  }
  std::map<std::string, double, std::less<>> out;
  for (const auto& [family, group] : byFamily) {
    if (group.size() >= kSpreadGroup) {
      out.emplace(family, speedupSpread(group));
    }
  }
  return out;
}

std::vector<cost::SpreadPoint> spreadByTime(std::vector<SpeedupSample> samples) {
  std::erase_if(samples, [](const SpeedupSample& s) {
    return !(s.single > 0 && std::isfinite(s.single) && usable(s));
  });
  std::sort(samples.begin(), samples.end(),
            [](const SpeedupSample& a, const SpeedupSample& b) { return a.single < b.single; });
  const std::size_t groups = samples.size() / kSpreadGroup;
  std::vector<cost::SpreadPoint> points;
  auto pointFirst = samples.begin(); // the first sample of points.back()
  for (std::size_t g = 0; groups > 1 && g < groups; ++g) {
    const auto first = samples.begin() + static_cast<std::ptrdiff_t>(g * samples.size() / groups);
    const auto last =
        samples.begin() + static_cast<std::ptrdiff_t>((g + 1) * samples.size() / groups);
    double logTime = 0;
    for (auto it = first; it != last; ++it) {
      logTime += std::log(it->single);
    }
    const double time = std::exp(logTime / static_cast<double>(last - first));
    if (!points.empty() && !(time > points.back().time)) {
      // A group no slower than the one before (sorted, so the same times):
      // one point, whose spread is over both groups' samples.
      points.back().spread = speedupSpread(std::vector<SpeedupSample>(pointFirst, last));
      continue;
    }
    pointFirst = first;
    points.push_back({time, speedupSpread(std::vector<SpeedupSample>(first, last))});
  }
  return points.size() > 1 ? points : std::vector<cost::SpreadPoint>{};
}

cost::Target calibrate(Backend& backend, const metakernel::MetakernelLibrary& library,
                       cost::Target base, const std::string& machine, const std::string& date,
                       const CalibrationOptions& options) {
  const double budget = std::max(options.budgetSeconds, 0.05);
  const Clock::time_point start = Clock::now();
  auto report = [&](std::string_view what) {
    if (options.progress) {
      options.progress(std::min(1.0, secondsSince(start) / budget), what);
    }
  };
  const int devices = std::max(1, base.deviceCount());
  Bench bench(backend, devices);
  cost::Profile profile;
  profile.machine = machine;
  profile.backend = backend.name();
  profile.date = date;
  profile.devices = devices;

  report("task overhead");
  measureOverheads(bench, library, budget, profile);

  report("copies");
  measureCopies(bench, devices, budget, base, profile);

  const std::vector<FamilyCase> cases = familyCases(backend.productThreadsFromFlops());
  std::vector<SpreadCase> spread;
  const double spreadSeconds = 0.005 * budget / kSpreadPasses; // per plan, per pass
  if (devices > 1) {
    report("spread");
    spread = spreadCases(bench, library, cases, budget >= kSpreadLargeBudget);
    measureSpreadPass(bench, spread, spreadSeconds);
  }

  // Kernel families, each with an equal share of what is left; then, while
  // the budget lasts, each family's points again (measureFamilyAgain).
  const double familyBudget = (budget - secondsSince(start)) / static_cast<double>(cases.size());
  std::size_t familiesDone = 0;
  std::vector<std::optional<FamilyTable>> tables(cases.size());
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const FamilyCase& c = cases[k];
    if (!spread.empty() && familiesDone++ == cases.size() / 2) {
      report("spread");
      measureSpreadPass(bench, spread, spreadSeconds);
    }
    report(c.family);
    const cost::KernelFamily* family = cost::findKernelFamily(c.family);
    if (family == nullptr || !backend.hasKernel(c.kernel)) {
      continue;
    }
    tables[k] = measureFamily(bench, library, c, *family, familyBudget, [&] { report(c.family); });
  }
  double bestFlops = 0;
  double bestBandwidth = 0;
  std::vector<double> passRatios; // per point timed twice: the slower time over the faster
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const FamilyCase& c = cases[k];
    if (!tables[k]) {
      continue;
    }
    cost::ProfileTable& table = tables[k]->table;
    if (secondsSince(start) < budget) {
      report(c.family);
      const std::vector<double> ratios = measureFamilyAgain(bench, library, c, *tables[k]);
      passRatios.insert(passRatios.end(), ratios.begin(), ratios.end());
    }
    const double rate = bestRate(devices > 1 ? table.all : table.alone);
    if (c.family == "matmul") {
      bestFlops = rate;
    }
    if (c.family == "elementwise") {
      bestBandwidth = rate;
    }
    if (!table.alone.empty()) {
      profile.kernels.emplace(c.apart ? c.kernel : c.family, std::move(table));
    }
  }

  // The roofline figures from the best rates measured with every device busy,
  // other dtypes scaled like float32.
  if (bestFlops > 0) {
    const double scale = bestFlops / base.flopsFor("float32");
    for (auto& [dtype, rate] : base.devices.flops) {
      rate *= scale;
    }
  }
  if (bestBandwidth > 0) {
    base.devices.memoryBandwidth = bestBandwidth;
  }
  base.devices.launchOverhead = profile.taskOverhead;
  passDifference(std::move(passRatios), profile);
  base.profile = std::move(profile);
  report("threads");
  base.profile->threadScaling = measureThreadScaling(bench, library, cases, budget);
  if (!spread.empty()) {
    report("spread");
    measureSpreadPass(bench, spread, spreadSeconds);
    const std::vector<SpeedupSample> samples = spreadSamples(spread, base);
    base.profile->spread = speedupSpread(samples);
    base.profile->spreadByTime = spreadByTime(samples);
    base.profile->spreadByFamily = spreadByFamily(samples);
  }
  report("done");
  return base;
}

// latency + bytes / bandwidth: the smallest copy's time, and the slope between
// 256 KiB and 4 MiB (the sizes of most transfers; larger copies pay page
// faults for fresh memory, which the measured table keeps).
cost::LinkSpec fitLink(const std::vector<std::pair<double, double>>& points) {
  cost::LinkSpec link;
  link.latency = points.front().second;
  auto at = [&](double bytes) {
    for (const auto& p : points) {
      if (p.first >= bytes) {
        return p;
      }
    }
    return points.back();
  };
  const auto [b0, t0] = at(256.0 * 1024);
  const auto [b1, t1] = at(4.0 * 1024 * 1024);
  const double slope = (t1 - t0) / (b1 - b0);
  link.bandwidth = slope > 0 ? 1 / slope : b1 / t1;
  return link;
}

std::vector<std::pair<double, double>> measureRankLink(RankLink& link, double seconds) {
  link.barrier();
  std::vector<std::pair<double, double>> points;
  const int me = link.rank();
  if (me <= 1 && link.ranks() > 1) {
    const std::atomic<bool> stop{false};
    constexpr int kPing = 1; // rank 0 to 1
    constexpr int kPong = 2; // rank 1 to 0 (messages between a pair keep their order)
    constexpr int kSizes = 8;
    for (std::int64_t bytes = 4096; bytes <= (std::int64_t{64} << 20); bytes *= 4) {
      // The same count on both ranks: the share of the budget over a guess of
      // one round trip (20 us + 1 GB/s each way), 3 to 200 of them.
      const double guess = 2 * (20e-6 + static_cast<double>(bytes) / 1e9);
      const int repeats =
          static_cast<int>(std::clamp(std::floor(seconds / kSizes / guess), 3.0, 200.0));
      const std::vector<std::int64_t> shape{bytes / 4};
      const Buffer out = Buffer::host(DType::Float32, shape);
      const Buffer in = Buffer::host(DType::Float32, shape);
      const std::span<std::byte> into(in.data(), static_cast<std::size_t>(bytes));
      std::vector<double> times;
      for (int r = 0; r <= repeats; ++r) { // the first one warms up
        if (me == 0) {
          const double t0 = Backend::now();
          link.send(1, kPing, out);
          link.receive(1, kPong, into, stop);
          if (r > 0) {
            times.push_back(Backend::now() - t0);
          }
        } else {
          link.receive(0, kPing, into, stop);
          link.send(0, kPong, out);
        }
      }
      link.flush();
      if (me == 0) {
        std::sort(times.begin(), times.end());
        points.emplace_back(static_cast<double>(bytes), times[times.size() / 2] / 2);
      }
    }
  }
  link.barrier();
  return points;
}

} // namespace tapestry::backend
