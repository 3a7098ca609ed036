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

#include "backends/executor.hpp"
#include "backends/tensor_io.hpp"
#include "core/cost/simulator.hpp"
#include "core/diag/error.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/loader.hpp"
#include "core/json/json.hpp"
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

// A calibration graph from its graph/v1 text, expanded through the library.
graph::ExpandedGraph expandText(const metakernel::MetakernelLibrary& library,
                                const std::string& kernel, const std::string& text) {
  auto document = std::make_shared<const json::Document>(
      json::Document::parse(SourceFile("<calibrate " + kernel + ">", text)));
  graph::Graph g = graph::decodeGraph(json::Value(*document));
  g.document = document;
  return graph::expand(g, library);
}

// A one-operation graph over float32 tensors, expanded through the library.
// `inputs` and the op's ports are JSON member lists.
graph::ExpandedGraph oneOpGraph(const metakernel::MetakernelLibrary& library,
                                const std::string& kernel, const std::string& tensors,
                                const std::string& params, const std::string& ports) {
  const std::string text =
      R"({"tapestry": "graph/v1", "name": "calibrate_)" + kernel + R"(", "tensors": {)" + tensors +
      R"(}, "operations": [{"name": "op", "kernel": ")" + kernel + R"(", "params": {)" + params +
      "}, " + ports + R"(, "outputs": {"result": "y"}}], "outputs": ["y"]})";
  return expandText(library, kernel, text);
}

std::string shapeText(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    out += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  }
  return out + "]";
}

std::string tensorText(const std::string& name, const std::vector<std::int64_t>& shape) {
  return "\"" + name + "\": {\"dtype\": \"float32\", \"shape\": " + shapeText(shape) + "}";
}

// relu -> conv2d (padding 1, constant weights) -> relu, the conv named "op".
graph::ExpandedGraph convGraph(const metakernel::MetakernelLibrary& library,
                               const std::vector<std::int64_t>& input,
                               const std::vector<std::int64_t>& weight) {
  const std::string text = R"({"tapestry": "graph/v1", "name": "calibrate_conv2d", "tensors": {)" +
                           tensorText("x", input) + R"(, "w": {"dtype": "float32", "shape": )" +
                           shapeText(weight) +
                           R"(, "constant": true}}, "operations": [
        {"name": "in", "kernel": "relu", "inputs": {"input": "x"}, "outputs": {"result": "h"}},
        {"name": "op", "kernel": "conv2d", "params": {"padding": [1, 1]},
         "inputs": {"input": "h", "weight": "w"}, "outputs": {"result": "c"}},
        {"name": "out", "kernel": "relu", "inputs": {"input": "c"}, "outputs": {"result": "y"}}],
      "outputs": ["y"]})";
  return expandText(library, "conv2d", text);
}

// The operation a case measures: the one named "op" (the first when none is).
std::size_t measuredOp(const graph::ExpandedGraph& g) {
  for (std::size_t i = 0; i < g.operations.size(); ++i) {
    if (g.operations[i].name == "op") {
      return i;
    }
  }
  return 0;
}

// One measurement case of a family: its graph for `copies` equal shards along
// the leading dim (copies = 1: the alone case; N: one shard per device).
struct FamilyCase {
  std::string family;
  std::string kernel;
  // The graph for `copies` shards of size step `step` (0, 1, 2, ...).
  std::function<graph::ExpandedGraph(const metakernel::MetakernelLibrary&, int step, int copies)>
      graphFor;
  int steps = 0;
  // Measured apart from its family (the table is the kernel's own): a member
  // whose speed differs from the family's representative.
  bool apart = false;
  // Inputs in [-spread, spread]. libm's erf and tanh take other paths by
  // magnitude: on [-5, 5] erff ran 3.4x slower than on [-1, 1] (mispredicted
  // branches), and a plan's pre-activations spread that wide.
  float spread = 1;
};

// `threadsFrom`: Backend::productThreadsFromFlops().
std::vector<FamilyCase> familyCases(double threadsFrom) {
  using Lib = metakernel::MetakernelLibrary;
  std::vector<FamilyCase> cases;
  // Matrix products: m = n = k = 8 .. 1024 (2 KFLOP to 2 GFLOP per shard),
  // [rows, s] x [s, s]. Where the backend gives a product every core from a
  // fixed size, two more with s = 256 on either side of that step: the CPU
  // backend's 2^26 FLOPs lies between the squares 256 (1 thread) and 512
  // (2), and interpolating across it priced mlp_256's [512, 256] x [256, 256]
  // products (2 threads) at 1.4x what they took. The squares 64, 128 and 256
  // stay steps 3 to 5 (calibrate's spread measures those).
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes; // rows, s
  for (std::int64_t s = 8; s <= 256; s *= 2) {
    shapes.emplace_back(s, s);
  }
  constexpr std::int64_t kStepSide = 256;
  const auto stepRows =
      static_cast<std::int64_t>(std::ceil(threadsFrom / (2.0 * kStepSide * kStepSide)));
  if (stepRows > kStepSide + 1 && stepRows < 4 * kStepSide) {
    shapes.emplace_back(stepRows - 1, kStepSide);
    shapes.emplace_back(stepRows, kStepSide);
  }
  shapes.emplace_back(512, 512);
  shapes.emplace_back(1024, 1024);
  const int matmulSteps = static_cast<int>(shapes.size());
  cases.push_back({"matmul", "matmul",
                   [shapes](const Lib& lib, int step, int copies) {
                     const auto [r, s] = shapes.at(static_cast<std::size_t>(step));
                     return oneOpGraph(lib, "matmul",
                                       tensorText("x", {copies * r, s}) + ", " +
                                           tensorText("w", {s, s}),
                                       "", R"("inputs": {"X": "x", "W": "w"})");
                   },
                   matmulSteps});
  // 3 x 3 convolutions, channels and image growing together, as they run in
  // an imported model: constant weights (packed once), between two relus so
  // that the activations it reads and writes are laid out as a model's are
  // (channels last on the CPU backend; a graph's inputs and outputs never
  // are). Only the convolution's shards are timed.
  cases.push_back({"conv", "conv2d",
                   [](const Lib& lib, int step, int copies) {
                     static const std::int64_t channels[] = {4, 8, 16, 32, 32, 64, 64};
                     static const std::int64_t sides[] = {8, 8, 16, 16, 32, 32, 64};
                     const std::int64_t c = channels[step];
                     const std::int64_t h = sides[step];
                     return convGraph(lib, {copies, c, h, h}, {c, c, 3, 3});
                   },
                   7});
  // Rows of 1024 float32s (4 KiB) for the memory-bound families: 1 .. 16384 rows.
  auto rows = [](int step) { return std::int64_t{1} << (2 * step); };
  cases.push_back({"elementwise", "add",
                   [rows](const Lib& lib, int step, int copies) {
                     const std::vector<std::int64_t> shape = {copies * rows(step), 1024};
                     return oneOpGraph(lib, "add",
                                       tensorText("a", shape) + ", " + tensorText("b", shape), "",
                                       R"("inputs": {"A": "a", "B": "b"})");
                   },
                   8});
  cases.push_back({"activation", "tanh",
                   [rows](const Lib& lib, int step, int copies) {
                     return oneOpGraph(lib, "tanh", tensorText("x", {copies * rows(step), 1024}),
                                       "", R"("inputs": {"input": "x"})");
                   },
                   8, false, 4});
  cases.push_back({"reduction", "sum",
                   [rows](const Lib& lib, int step, int copies) {
                     return oneOpGraph(lib, "sum", tensorText("x", {copies * rows(step), 1024}),
                                       R"("axis": -1)", R"("inputs": {"input": "x"})");
                   },
                   8});
  cases.push_back({"normalization", "softmax",
                   [rows](const Lib& lib, int step, int copies) {
                     return oneOpGraph(lib, "softmax", tensorText("x", {copies * rows(step), 1024}),
                                       R"("axis": -1)", R"("inputs": {"input": "x"})");
                   },
                   8});
  cases.push_back({"copy", "reshape",
                   [rows](const Lib& lib, int step, int copies) {
                     const std::int64_t r = copies * rows(step);
                     return oneOpGraph(lib, "reshape", tensorText("x", {r, 1024}),
                                       R"("shape": [)" + std::to_string(2 * r) + ", 512]",
                                       R"("inputs": {"input": "x"})");
                   },
                   8});
  // Members that run at their own speed: sigmoid and exp (one exp per
  // element) and gelu (erf) against tanh; layernorm (two passes in double,
  // no exp) against softmax.
  for (const char* kernel : {"sigmoid", "exp", "gelu"}) {
    cases.push_back({"activation", kernel,
                     [rows, kernel](const Lib& lib, int step, int copies) {
                       return oneOpGraph(lib, kernel, tensorText("x", {copies * rows(step), 1024}),
                                         "", R"("inputs": {"input": "x"})");
                     },
                     8, true, 4});
  }
  cases.push_back({"normalization", "layernorm",
                   [rows](const Lib& lib, int step, int copies) {
                     return oneOpGraph(lib, "layernorm",
                                       tensorText("x", {copies * rows(step), 1024}) + ", " +
                                           tensorText("g", {1024}) + ", " + tensorText("b", {1024}),
                                       "",
                                       R"("inputs": {"input": "x", "gamma": "g", "beta": "b"})");
                   },
                   8, true});
  cases.push_back({"transpose", "transpose",
                   [rows](const Lib& lib, int step, int copies) {
                     // The attention heads' permutation (runs of 64 contiguous
                     // elements), the transpose plans make most; a whole
                     // matrix transposed runs slower.
                     return oneOpGraph(lib, "transpose",
                                       tensorText("x", {copies * rows(step), 4, 4, 64}),
                                       R"("perm": [0, 2, 1, 3])", R"("inputs": {"input": "x"})");
                   },
                   8});
  return cases;
}

// Runs one-operation plans and times them against a budget.
class Bench {
public:
  Bench(Backend& backend, int devices) : backend_(backend), devices_(devices) {}

  // Every op of `g` cut into `copies` equal shards along its first index
  // dim, shard i on device i (or every shard on device 0 with `oneDevice`).
  plan::ShardPlan planFor(const graph::ExpandedGraph& g, int copies, bool oneDevice) const {
    plan::PlanChoice choices;
    for (const graph::Operation& op : g.operations) {
      plan::OpChoice choice;
      choice.split.assign(op.application.index.rank(), 1);
      choice.split[0] = copies;
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

// One family's table: its case's sizes in order, `alone` (one shard on one
// device) and, with several devices, `all` (one such shard on every device
// at once), each a shard's own time on its worker (the executor's dispatch is
// the profile's task overhead, the workers' start its start overhead).
// Always two sizes; then only while the family's share of the budget lasts.
cost::ProfileTable measureFamily(Bench& bench, const metakernel::MetakernelLibrary& library,
                                 const FamilyCase& c, const cost::KernelFamily& family,
                                 double familyBudget, const std::function<void()>& progress) {
  const Clock::time_point familyStart = Clock::now();
  const double perPoint = familyBudget / (2.0 * c.steps);
  const int devices = bench.devices();
  cost::ProfileTable table;
  table.measure = family.measure;
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
    table.alone.push_back({size, bench.time(alone, alonePlan, perPoint, c.spread).shard});
    if (devices > 1) {
      const graph::ExpandedGraph all = c.graphFor(library, step, devices);
      table.all.push_back(
          {size, bench.time(all, bench.planFor(all, devices, false), perPoint, c.spread).shard});
    }
  }
  return table;
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
    if (c.kernel != "matmul" && c.kernel != "conv2d") {
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

struct SpreadCase {
  graph::ExpandedGraph graph;
  plan::ShardPlan single;
  plan::ShardPlan split;
  float inputSpread = 1;
  std::vector<double> measured; // single / split wall time, one per pass
};

std::vector<SpreadCase> spreadCases(const Bench& bench,
                                    const metakernel::MetakernelLibrary& library,
                                    const std::vector<FamilyCase>& cases) {
  const int devices = bench.devices();
  std::vector<SpreadCase> out;
  for (const FamilyCase& c : cases) {
    const bool matmul = c.kernel == "matmul";
    if (!matmul && c.kernel != "add" && c.kernel != "tanh" && c.kernel != "softmax") {
      continue;
    }
    for (int step = matmul ? 3 : 1; step < (matmul ? 6 : 4); ++step) {
      SpreadCase sc{c.graphFor(library, step, devices), {}, {}, c.spread, {}};
      sc.single = bench.planFor(sc.graph, 1, true);
      sc.split = bench.planFor(sc.graph, devices, false);
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

double spreadOf(const std::vector<SpreadCase>& cases, const cost::Target& model) {
  std::vector<SpeedupSample> samples;
  for (const SpreadCase& sc : cases) {
    samples.push_back({cost::simulate(sc.graph, model, sc.single).objectives.timeS /
                           cost::simulate(sc.graph, model, sc.split).objectives.timeS,
                       sc.measured});
  }
  return speedupSpread(samples);
}

} // namespace

double speedupSpread(const std::vector<SpeedupSample>& samples) {
  std::vector<double> errors;
  for (const SpeedupSample& s : samples) {
    const double measured = s.measured.empty() ? 0.0 : median(s.measured);
    if (s.predicted > 0 && measured > 0 && std::isfinite(s.predicted) && std::isfinite(measured)) {
      errors.push_back(std::fabs(std::log(measured / s.predicted)));
    }
  }
  return errors.empty() ? 0.0 : std::exp(median(errors)) - 1;
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
    spread = spreadCases(bench, library, cases);
    measureSpreadPass(bench, spread, spreadSeconds);
  }

  // Kernel families, each with an equal share of what is left.
  const double familyBudget = (budget - secondsSince(start)) / static_cast<double>(cases.size());
  std::size_t familiesDone = 0;
  double bestFlops = 0;
  double bestBandwidth = 0;
  for (const FamilyCase& c : cases) {
    if (!spread.empty() && familiesDone++ == cases.size() / 2) {
      report("spread");
      measureSpreadPass(bench, spread, spreadSeconds);
    }
    report(c.family);
    const cost::KernelFamily* family = cost::findKernelFamily(c.family);
    if (family == nullptr || !backend.hasKernel(c.kernel)) {
      continue;
    }
    cost::ProfileTable table =
        measureFamily(bench, library, c, *family, familyBudget, [&] { report(c.family); });
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
  base.profile = std::move(profile);
  report("threads");
  base.profile->threadScaling = measureThreadScaling(bench, library, cases, budget);
  if (!spread.empty()) {
    report("spread");
    measureSpreadPass(bench, spread, spreadSeconds);
    base.profile->spread = spreadOf(spread, base);
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
