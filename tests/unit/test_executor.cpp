// Tests for the plan executor (backends/executor) and the run/bench commands
// (core/driver/run_command): small graphs with expected outputs written out by
// hand or computed here with plain loops, every testdata graph under many plans
// (single device, data parallel, split reduction dims, random splits and
// placements over 2 to 4 devices, fewer threads than devices, resident inputs)
// against the unsharded reference, memory against the prediction, errors from
// workers, per-task times, the --check comparison, the commands in-process, and
// bench's stopping rule and breakdown.
//
// Longer than 800 lines on purpose: tests/unit keeps one file per module, and
// this module's cases read best side by side (each is short and independent).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <unistd.h>

#include "backends/calibration.hpp"
#include "backends/check.hpp"
#include "backends/cpu/body_kernel.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/worker_pool.hpp"
#ifdef TAPESTRY_HAVE_CUDA
#include "backends/cuda/cuda_probe.hpp"
#endif
#include "backends/executor.hpp"
#include "backends/memory_guard.hpp"
#include "backends/npy.hpp"
#include "backends/reference.hpp"
#include "backends/tensor_io.hpp"
#include "core/cost/plan_file.hpp"
#include "core/cost/simulator.hpp"
#include "core/cost/target.hpp"
#include "core/driver/run_command.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/loader.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"
#include "core/plan/plan.hpp"
#include "tests/unit/fixtures.hpp"

using namespace tapestry;
using namespace tapestry::testing;
using namespace tapestry::backend;
using namespace tapestry::driver;
using Catch::Matchers::Contains;
using plan::OpChoice;
using plan::PlanChoice;

namespace {

graph::ExpandedGraph testGraph(const std::string& name) {
  return graph::loadAndExpand(std::string(TAPESTRY_TESTDATA_DIR) + "/graphs/" + name, lib());
}

Buffer floats(const std::vector<std::int64_t>& shape, const std::vector<float>& values) {
  Buffer b = Buffer::host(DType::Float32, shape);
  REQUIRE(static_cast<std::size_t>(b.elementCount()) == values.size());
  std::copy(values.begin(), values.end(), b.elements<float>().begin());
  return b;
}

std::vector<float> values(const Buffer& b) {
  std::span<float> e = b.elements<float>();
  return {e.begin(), e.end()};
}

std::string describe(const PlanChoice& c) {
  std::string out;
  for (const OpChoice& op : c.ops) {
    out += "[split";
    for (std::int64_t s : op.split) {
      out += " " + std::to_string(s);
    }
    out += " on";
    for (int d : op.devices) {
      out += " " + std::to_string(d);
    }
    out += "] ";
  }
  return out;
}

struct Outcome {
  Execution run;
  std::vector<OutputCheck> checks;
  cost::Simulation simulation;
};

// Runs `choice` with the executor and the graph unsharded, and requires every
// output to match within SPEC §9's tolerance and every device's measured peak
// to stay within the predicted one plus the assembled scratch.
Outcome runAndCheck(const graph::ExpandedGraph& g, int devices, const PlanChoice& choice,
                    int threads = 0, plan::InputsOn inputsOn = plan::InputsOn::Host,
                    std::uint64_t seed = 7, const std::vector<int>& relayGroups = {}) {
  INFO("plan " << describe(choice) << "on " << devices << " devices, " << threads << " threads");
  const plan::ShardPlan p =
      plan::buildPlan(g, devices, choice, plan::PlanOptions{inputsOn, relayGroups});
  const cost::Target t = roomyCpuTarget(devices);
  Outcome out;
  out.simulation = cost::simulate(g, t, p);
  const TensorBuffers inputs = drawInputs(g, seed);
  CpuBackend backend(devices);
  ExecuteOptions options;
  options.threads = threads;
  options.blasThreads = 1;
  out.run = execute(g, p, backend, inputs, options, &out.simulation);
  CpuBackend::setBlasThreads(1);
  out.checks = compareOutputs(g, out.run.outputs, unshardedReference(backend, g, inputs));
  for (const OutputCheck& c : out.checks) {
    INFO("output " << c.tensor << ": " << describeCheck(c));
    CHECK(c.ok);
  }
  REQUIRE(out.run.stats.devices.size() == static_cast<std::size_t>(devices));
  for (int d = 0; d < devices; ++d) {
    INFO("device " << d);
    CHECK(out.run.stats.devices[static_cast<std::size_t>(d)].peakBytes <=
          out.simulation.peakPerDevice[static_cast<std::size_t>(d)] + out.run.stats.assembledBytes);
  }
  return out;
}

std::filesystem::path tempDir(const std::string& name) {
  static std::atomic<int> counter{0};
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tapestry_executor_" + std::to_string(::getpid()) +
                                                "_" + name + "_" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Writes the plan/v1 file of `choice` (on roomyCpuTarget(devices)) into `dir`.
std::string writePlanFile(const graph::ExpandedGraph& g, int devices, const PlanChoice& choice,
                          const std::filesystem::path& dir, const std::string& name) {
  const cost::Target t = roomyCpuTarget(devices);
  const plan::ShardPlan p = plan::buildPlan(g, devices, choice);
  const std::string path = (dir / name).string();
  std::ofstream(path) << plan::writePlan(g, t, p, cost::simulate(g, t, p));
  return path;
}

std::string writeText(const std::filesystem::path& dir, const std::string& name,
                      const std::string& text) {
  const std::string path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

const char* kMatmulAddRelu = R"({"tapestry": "graph/v1", "name": "mm",
  "tensors": {"x": {"dtype": "float32", "shape": [2, 3]}, "w": {"dtype": "float32", "shape": [3, 2]},
              "c": {"dtype": "float32", "shape": [2]}},
  "operations": [
    {"name": "mm", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "h"}},
    {"name": "bias", "kernel": "add", "inputs": {"A": "h", "B": "c"}, "outputs": {"result": "hb"}},
    {"name": "act", "kernel": "relu", "inputs": {"input": "hb"}, "outputs": {"result": "y"}}],
  "outputs": ["y"]})";

} // namespace

// ---------------------------------------------------------------- by hand

TEST_CASE("a k-split matmul, bias and relu give the numbers worked out by hand", "[executor]") {
  const graph::ExpandedGraph g = expandText(kMatmulAddRelu);
  // x·w = [[1+3, 2+3], [4+6, 5+6]] = [[4, 5], [10, 11]]; + c = [-5, 0]; relu.
  const TensorBuffers inputs{{"x", floats({2, 3}, {1, 2, 3, 4, 5, 6})},
                             {"w", floats({3, 2}, {1, 0, 0, 1, 1, 1})},
                             {"c", floats({2}, {-5, 0})}};
  const std::vector<float> expected{0, 5, 5, 11};
  CpuBackend backend(3);
  struct Case {
    PlanChoice choice;
    int threads;
  };
  const std::vector<Case> cases{
      {plan::singleDeviceChoice(g), 0},
      // m in 2, k in 3: two reduction trees of three partials over 3 devices.
      {PlanChoice{{{{2, 1, 3}, {0, 1, 2, 1, 2, 0}}, {{1, 2}, {2, 0}}, {{2, 1}, {1, 2}}}}, 0},
      {PlanChoice{{{{1, 2, 3}, {2, 2, 1, 0, 1, 0}}, {{1, 1}, {1}}, {{2, 1}, {0, 2}}}}, 1},
      {PlanChoice{{{{1, 1, 3}, {0, 1, 2}}, {{2, 1}, {1, 2}}, {{2, 2}, {2, 1, 0, 1}}}}, 2},
  };
  for (const Case& c : cases) {
    INFO(describe(c.choice));
    const plan::ShardPlan p = plan::buildPlan(g, 3, c.choice);
    ExecuteOptions options;
    options.threads = c.threads;
    const Execution run = execute(g, p, backend, inputs, options);
    CHECK(values(run.outputs.at("y")) == expected);
    CHECK(run.stats.transfers == p.transfers.size());
  }
  const plan::ShardPlan p = plan::buildPlan(g, 3, cases[1].choice);
  REQUIRE(p.reductions.size() == 2);
  const Execution run = execute(g, p, backend, inputs);
  CHECK(run.stats.reductionSteps == 4);
  CHECK(run.stats.shards == 6 + 2 + 2);
  CHECK(run.stats.workers ==
        std::min(3, usableHardwareThreads())); // one per device, at most the cores
  std::int64_t bytes = 0;
  for (const plan::Transfer& t : p.transfers) {
    bytes += t.bytes;
  }
  CHECK(run.stats.transferBytes == bytes); // every transfer is a real copy
  for (const DeviceMemory& d : run.stats.devices) {
    CHECK(d.allocatedBytes > 0);
  }
}

TEST_CASE("split reductions combine partials with the output's monoid", "[executor]") {
  const graph::ExpandedGraph g = expandText(R"({"tapestry": "graph/v1", "name": "r",
    "tensors": {"x": {"dtype": "float32", "shape": [2, 4]}},
    "operations": [
      {"name": "mx", "kernel": "max", "params": {"axis": 1}, "inputs": {"input": "x"}, "outputs": {"result": "m"}},
      {"name": "sm", "kernel": "sum", "params": {"axis": 1}, "inputs": {"input": "x"}, "outputs": {"result": "s"}},
      {"name": "mn", "kernel": "mean", "params": {"axis": 1}, "inputs": {"input": "x"}, "outputs": {"result": "a"}}],
    "outputs": ["m", "s", "a"]})");
  const TensorBuffers inputs{{"x", floats({2, 4}, {1, 5, 3, 2, -1, -7, 4, 0})}};
  // Each reduction's axis in 4 (a tree of depth 2) or 2 parts, rows split too.
  const PlanChoice choice{{{{1, 4}, {0, 1, 2, 3}}, {{2, 2}, {3, 2, 1, 0}}, {{1, 4}, {1, 1, 2, 3}}}};
  CpuBackend backend(4);
  for (int threads : {0, 1, 2}) {
    const Execution run =
        execute(g, plan::buildPlan(g, 4, choice), backend, inputs, ExecuteOptions{threads, 1});
    CHECK(values(run.outputs.at("m")) == std::vector<float>{5, 4});
    CHECK(values(run.outputs.at("s")) == std::vector<float>{11, -4});
    CHECK(values(run.outputs.at("a")) == std::vector<float>{2.75f, -1});
  }
}

TEST_CASE("concat and split over several devices give the elements in place", "[executor]") {
  const graph::ExpandedGraph g = expandText(R"({"tapestry": "graph/v1", "name": "cs",
    "tensors": {"a": {"dtype": "float32", "shape": [2, 2]}, "b": {"dtype": "float32", "shape": [2, 1]}},
    "operations": [
      {"name": "cat", "kernel": "concat", "params": {"axis": 1}, "inputs": {"tensors": ["a", "b"]}, "outputs": {"result": "ab"}},
      {"name": "cut", "kernel": "split", "params": {"axis": 1, "sections": [1, 2]},
       "inputs": {"input": "ab"}, "outputs": {"results": ["p", "q"]}}],
    "outputs": ["ab", "p", "q"]})");
  const TensorBuffers inputs{{"a", floats({2, 2}, {1, 2, 3, 4})}, {"b", floats({2, 1}, {5, 6})}};
  CpuBackend backend(3);
  for (const PlanChoice& choice : {plan::singleDeviceChoice(g),
                                   PlanChoice{{{{1, 3}, {0, 1, 2}}, {{2, 3}, {2, 1, 0, 0, 1, 2}}}},
                                   PlanChoice{{{{2, 2}, {1, 2, 0, 1}}, {{1, 2}, {0, 2}}}}}) {
    INFO(describe(choice));
    const Execution run = execute(g, plan::buildPlan(g, 3, choice), backend, inputs);
    CHECK(values(run.outputs.at("ab")) == std::vector<float>{1, 2, 5, 3, 4, 6});
    CHECK(values(run.outputs.at("p")) == std::vector<float>{1, 3});
    CHECK(values(run.outputs.at("q")) == std::vector<float>{2, 5, 4, 6});
  }
}

TEST_CASE("conv2d with padding, split over rows and channels, equals plain loops", "[executor]") {
  const graph::ExpandedGraph g = expandText(R"({"tapestry": "graph/v1", "name": "conv",
    "tensors": {"x": {"dtype": "float32", "shape": [1, 2, 5, 4]}, "k": {"dtype": "float32", "shape": [3, 2, 3, 3]}},
    "operations": [
      {"name": "conv", "kernel": "conv2d", "params": {"padding": [1, 1]},
       "inputs": {"input": "x", "weight": "k"}, "outputs": {"result": "y"}},
      {"name": "act", "kernel": "relu", "inputs": {"input": "y"}, "outputs": {"result": "z"}}],
    "outputs": ["z"]})");
  std::vector<float> x(40);
  std::vector<float> k(54);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>(static_cast<int>(i * 7 % 11) - 5);
  }
  for (std::size_t i = 0; i < k.size(); ++i) {
    k[i] = static_cast<float>(static_cast<int>(i * 5 % 7) - 3);
  }
  // out[o][h][w] = relu(sum_c,i,j x[c][h+i-1][w+j-1] * k[o][c][i][j]), zeros outside.
  std::vector<float> expected;
  for (int o = 0; o < 3; ++o) {
    for (int h = 0; h < 5; ++h) {
      for (int w = 0; w < 4; ++w) {
        float acc = 0;
        for (int c = 0; c < 2; ++c) {
          for (int i = 0; i < 3; ++i) {
            for (int j = 0; j < 3; ++j) {
              const int r = h + i - 1;
              const int s = w + j - 1;
              if (r >= 0 && r < 5 && s >= 0 && s < 4) {
                acc += x[static_cast<std::size_t>((c * 5 + r) * 4 + s)] *
                       k[static_cast<std::size_t>(((o * 2 + c) * 3 + i) * 3 + j)];
              }
            }
          }
        }
        expected.push_back(std::max(acc, 0.0f));
      }
    }
  }
  const TensorBuffers inputs{{"x", floats({1, 2, 5, 4}, x)}, {"k", floats({3, 2, 3, 3}, k)}};
  CpuBackend backend(3);
  // Index [N, O, OH, OW, C, KH, KW]: rows in 2, channels (a reduction dim) in 2;
  // then KH in 3; relu over the batch... of one, so over rows.
  for (const PlanChoice& choice :
       {plan::singleDeviceChoice(g),
        PlanChoice{{{{1, 1, 2, 1, 2, 1, 1}, {0, 1, 2, 0}}, {{1, 1, 3, 1}, {2, 1, 0}}}},
        PlanChoice{
            {{{1, 3, 1, 1, 1, 3, 1}, {0, 1, 2, 2, 1, 0, 1, 1, 1}}, {{1, 1, 1, 2}, {1, 0}}}}}) {
    INFO(describe(choice));
    const Execution run = execute(g, plan::buildPlan(g, 3, choice), backend, inputs);
    CHECK(values(run.outputs.at("z")) == expected);
  }
}

// A small CNN: every kernel the CPU backend runs channels last around two
// convolutions (a regular one and a depthwise one), a residual add, a pool,
// and a tail (reshape, linear) that stays row-major.
const char* kSmallCnn = R"({"tapestry": "graph/v1", "name": "cnn",
  "tensors": {"x": {"dtype": "float32", "shape": [2, 3, 12, 10]},
              "w1": {"dtype": "float32", "shape": [16, 3, 3, 3], "constant": true},
              "b1": {"dtype": "float32", "shape": [16], "constant": true},
              "w2": {"dtype": "float32", "shape": [16, 1, 3, 3], "constant": true},
              "w3": {"dtype": "float32", "shape": [16, 16, 1, 1]},
              "fc": {"dtype": "float32", "shape": [16, 5]}},
  "operations": [
    {"name": "conv1", "kernel": "conv2d", "params": {"padding": [1, 1]},
     "inputs": {"input": "x", "weight": "w1", "bias": "b1"}, "outputs": {"result": "c1"}},
    {"name": "relu1", "kernel": "relu", "inputs": {"input": "c1"}, "outputs": {"result": "r1"}},
    {"name": "pool", "kernel": "maxpool2d", "params": {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1]},
     "inputs": {"input": "r1"}, "outputs": {"result": "p"}},
    {"name": "dw", "kernel": "conv2d", "params": {"padding": [1, 1], "groups": 16},
     "inputs": {"input": "p", "weight": "w2"}, "outputs": {"result": "c2"}},
    {"name": "clip", "kernel": "clip", "params": {"min": 0, "max": 6},
     "inputs": {"input": "c2"}, "outputs": {"result": "r2"}},
    {"name": "pw", "kernel": "conv2d", "params": {"stride": [2, 2]},
     "inputs": {"input": "r2", "weight": "w3"}, "outputs": {"result": "c3"}},
    {"name": "avg", "kernel": "avgpool2d", "params": {"kernel": [1, 1], "stride": [2, 2]},
     "inputs": {"input": "p"}, "outputs": {"result": "q"}},
    {"name": "res", "kernel": "add", "inputs": {"A": "c3", "B": "q"}, "outputs": {"result": "s"}},
    {"name": "gap", "kernel": "global_avgpool", "inputs": {"input": "s"}, "outputs": {"result": "g"}},
    {"name": "flat", "kernel": "reshape", "params": {"shape": [2, 16]},
     "inputs": {"input": "g"}, "outputs": {"result": "f"}},
    {"name": "head", "kernel": "matmul", "inputs": {"X": "f", "W": "fc"}, "outputs": {"result": "y"}}],
  "outputs": ["y", "c2"]})";

TEST_CASE("activations around convolutions run channels last, sharded too, with the same outputs",
          "[executor][layout]") {
  const graph::ExpandedGraph g = expandText(kSmallCnn);
  // c1 r1 p c3 q s: not the graph output c2, nor r2 (clip would convert c2
  // into it by a strided walk: the pointwise conv copies r2 instead), nor
  // the tail (g feeds reshape, f and y are not 4-d).
  const Outcome one = runAndCheck(g, 1, plan::singleDeviceChoice(g));
  CHECK(one.run.stats.channelsLastRegions == 6);
  const Outcome two = runAndCheck(g, 2, dataParallel(g, 2, 2));
  CHECK(two.run.stats.channelsLastRegions == 12);
  const Outcome split = runAndCheck(g, 3, reductionSplit(g, 3));
  CHECK(split.run.stats.channelsLastRegions > 0);
  CHECK(split.run.stats.reductionSteps > 0);
  std::mt19937 rng(11);
  for (int i = 0; i < 6; ++i) {
    const int devices = 2 + i % 3;
    const Outcome random = runAndCheck(g, devices, randomChoice(g, devices, rng), i % 2);
    CHECK(random.run.stats.channelsLastRegions > 0);
  }

  // The same plan row-major: no region changes layout, and the outputs agree
  // with the channels-last run's to float32 rounding (oneDNN's nhwc and
  // blocked convolutions sum in other orders).
  const TensorBuffers inputs = drawInputs(g, 7);
  CpuBackend backend(1);
  ExecuteOptions rowMajor;
  rowMajor.blasThreads = 1;
  rowMajor.channelsLast = false;
  const plan::ShardPlan p = plan::buildPlan(g, 1, plan::singleDeviceChoice(g));
  const Execution plain = execute(g, p, backend, inputs, rowMajor);
  CHECK(plain.stats.channelsLastRegions == 0);
  for (const char* name : {"y", "c2"}) {
    const std::vector<float> a = values(plain.outputs.at(name));
    const std::vector<float> b = values(one.run.outputs.at(name));
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      INFO(name << "[" << i << "]");
      CHECK(b[i] == Approx(a[i]).epsilon(1e-4).margin(1e-5));
    }
  }
}

// A dense block as DenseNet's: a concatenation of convolutions' outputs,
// normalized, then a split (ShuffleNet's) and a pool.
const char* kDenseBlock = R"({"tapestry": "graph/v1", "name": "dense",
  "tensors": {"x": {"dtype": "float32", "shape": [2, 4, 8, 8]},
              "w1": {"dtype": "float32", "shape": [16, 4, 3, 3], "constant": true},
              "w2": {"dtype": "float32", "shape": [8, 16, 3, 3], "constant": true},
              "w3": {"dtype": "float32", "shape": [8, 24, 1, 1], "constant": true},
              "s": {"dtype": "float32", "shape": [24]}, "b": {"dtype": "float32", "shape": [24]},
              "m": {"dtype": "float32", "shape": [24]}, "lv": {"dtype": "float32", "shape": [24]}},
  "operations": [
    {"name": "conv1", "kernel": "conv2d", "params": {"padding": [1, 1]},
     "inputs": {"input": "x", "weight": "w1"}, "outputs": {"result": "c1"}},
    {"name": "conv2", "kernel": "conv2d", "params": {"padding": [1, 1]},
     "inputs": {"input": "c1", "weight": "w2"}, "outputs": {"result": "c2"}},
    {"name": "cat", "kernel": "concat", "params": {"axis": 1},
     "inputs": {"tensors": ["c1", "c2"]}, "outputs": {"result": "k"}},
    {"name": "var", "kernel": "exp", "inputs": {"input": "lv"}, "outputs": {"result": "v"}},
    {"name": "norm", "kernel": "batchnorm",
     "inputs": {"input": "k", "scale": "s", "bias": "b", "mean": "m", "var": "v"},
     "outputs": {"result": "n"}},
    {"name": "relu", "kernel": "relu", "inputs": {"input": "n"}, "outputs": {"result": "r"}},
    {"name": "conv3", "kernel": "conv2d", "inputs": {"input": "r", "weight": "w3"},
     "outputs": {"result": "c3"}},
    {"name": "halves", "kernel": "split", "params": {"axis": 1, "sections": [4, 4]},
     "inputs": {"input": "c3"}, "outputs": {"results": ["h0", "h1"]}},
    {"name": "sum", "kernel": "add", "inputs": {"A": "h0", "B": "h1"}, "outputs": {"result": "y"}},
    {"name": "gap", "kernel": "global_avgpool", "inputs": {"input": "y"}, "outputs": {"result": "g"}},
    {"name": "flat", "kernel": "reshape", "params": {"shape": [2, 4]},
     "inputs": {"input": "g"}, "outputs": {"result": "f"}}],
  "outputs": ["f"]})";

TEST_CASE("concatenations, splits and normalizations between convolutions run channels last",
          "[executor][layout]") {
  const graph::ExpandedGraph g = expandText(kDenseBlock);
  // c1 c2 k n r c3 h0 h1 y: every 4-d tensor but the graph input x and g
  // (it feeds the reshape).
  const Outcome one = runAndCheck(g, 1, plan::singleDeviceChoice(g));
  CHECK(one.run.stats.channelsLastRegions == 9);
  const Outcome two = runAndCheck(g, 2, dataParallel(g, 2, 2));
  CHECK(two.run.stats.channelsLastRegions == 18);
  std::mt19937 rng(13);
  for (int i = 0; i < 6; ++i) {
    const int devices = 2 + i % 3;
    const Outcome random = runAndCheck(g, devices, randomChoice(g, devices, rng), i % 2);
    CHECK(random.run.stats.channelsLastRegions > 0);
  }
}

TEST_CASE("constant inputs resident from the start (InputsOn::Constants) run and check",
          "[executor]") {
  // kSmallCnn's w1, b1 and w2 are constant; x, w3 and fc are not.
  const graph::ExpandedGraph g = expandText(kSmallCnn);
  std::mt19937 rng(5);
  for (int i = 0; i < 4; ++i) {
    const int devices = 2 + i % 2;
    const PlanChoice c = randomChoice(g, devices, rng);
    const Outcome constants = runAndCheck(g, devices, c, i % 2, plan::InputsOn::Constants);
    const Outcome host = runAndCheck(g, devices, c, i % 2, plan::InputsOn::Host);
    // The constants' transfers from the host are gone, and nothing else.
    const plan::ShardPlan p =
        plan::buildPlan(g, devices, c, plan::PlanOptions{plan::InputsOn::Constants, {}});
    std::int64_t residentBytes = 0;
    for (const plan::Resident& r : p.residents) {
      CHECK(g.tensors[r.tensor].constant);
      residentBytes += r.bytes;
    }
    CHECK(residentBytes > 0);
    CHECK(constants.run.stats.transferBytes + residentBytes == host.run.stats.transferBytes);
  }
}

TEST_CASE("a row split keeps its halo transfers and assembled selections channels last",
          "[executor][layout]") {
  const graph::ExpandedGraph g = expandText(kSmallCnn);
  // Every 4-d op split in two along its third index dim (output rows for the
  // convolutions and pools), alternating devices: each convolution's shard
  // reads a halo row the other device made.
  plan::PlanChoice c;
  for (const graph::Operation& op : g.operations) {
    std::vector<std::int64_t> split(op.application.index.rank(), 1);
    if (split.size() >= 4 && op.application.index.extent(2) > 1) {
      split[2] = 2;
    }
    const std::int64_t shards = split.size() >= 4 ? split[2] : 1;
    c.ops.push_back(
        plan::OpChoice{split, shards == 2 ? std::vector<int>{0, 1} : std::vector<int>{0}});
  }
  const Outcome rows = runAndCheck(g, 2, c);
  CHECK(rows.run.stats.assembledSelections > 0);
  // The tiles of c1 r1 p c3 q s (6 tensors, 2 shards each), and more: the
  // transfers of those tensors arrive channels last too.
  CHECK(rows.run.stats.channelsLastRegions > 12);
  const Outcome one = runAndCheck(g, 1, plan::singleDeviceChoice(g));
  for (const char* name : {"y", "c2"}) {
    const std::vector<float> a = values(one.run.outputs.at(name));
    const std::vector<float> b = values(rows.run.outputs.at(name));
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      INFO(name << "[" << i << "]");
      CHECK(b[i] == Approx(a[i]).epsilon(1e-4).margin(1e-5));
    }
  }
}

// The small CNN's convolutions fused (conv2d_act): relu after a bias, ReLU6
// depthwise (a graph output), and a pointwise convolution whose residual is
// the first one's output; then a tail that stays row-major.
const char* kFusedCnn = R"({"tapestry": "graph/v1", "name": "fused",
  "tensors": {"x": {"dtype": "float32", "shape": [2, 3, 12, 10]},
              "w1": {"dtype": "float32", "shape": [16, 3, 3, 3], "constant": true},
              "b1": {"dtype": "float32", "shape": [16], "constant": true},
              "w2": {"dtype": "float32", "shape": [16, 1, 3, 3], "constant": true},
              "w3": {"dtype": "float32", "shape": [16, 16, 1, 1]},
              "b3": {"dtype": "float32", "shape": [16]},
              "fc": {"dtype": "float32", "shape": [16, 5]}},
  "operations": [
    {"name": "conv1", "kernel": "conv2d_act", "params": {"padding": [1, 1], "min": 0},
     "inputs": {"input": "x", "weight": "w1", "bias": "b1"}, "outputs": {"result": "r1"}},
    {"name": "dw", "kernel": "conv2d_act", "params": {"padding": [1, 1], "groups": 16, "min": 0, "max": 6},
     "inputs": {"input": "r1", "weight": "w2"}, "outputs": {"result": "r2"}},
    {"name": "pw", "kernel": "conv2d_act",
     "inputs": {"input": "r2", "weight": "w3", "bias": "b3", "residual": "r1"}, "outputs": {"result": "s"}},
    {"name": "gap", "kernel": "global_avgpool", "inputs": {"input": "s"}, "outputs": {"result": "g"}},
    {"name": "flat", "kernel": "reshape", "params": {"shape": [2, 16]},
     "inputs": {"input": "g"}, "outputs": {"result": "f"}},
    {"name": "head", "kernel": "matmul", "inputs": {"X": "f", "W": "fc"}, "outputs": {"result": "y"}}],
  "outputs": ["y", "r2"]})";

TEST_CASE("fused convolutions (conv2d_act) run channels last, residual too, sharded, with the "
          "same outputs",
          "[executor][layout]") {
  const graph::ExpandedGraph g = expandText(kFusedCnn);
  const Outcome one = runAndCheck(g, 1, plan::singleDeviceChoice(g));
  // r1 and s: pw's dst is s itself, channels last, so oneDNN adds the
  // residual r1 (channels last too) as a sum post-op; r2 is a graph output.
  CHECK(one.run.stats.channelsLastRegions == 2);
  runAndCheck(g, 2, dataParallel(g, 2, 2));
  runAndCheck(g, 3, reductionSplit(g, 3));
  std::mt19937 rng(13);
  for (int i = 0; i < 4; ++i) {
    const int devices = 2 + i % 3;
    runAndCheck(g, devices, randomChoice(g, devices, rng), i % 2);
  }
  // Row-major, the same plan: the same outputs to float32 rounding.
  const TensorBuffers inputs = drawInputs(g, 7);
  CpuBackend backend(1);
  ExecuteOptions rowMajor;
  rowMajor.blasThreads = 1;
  rowMajor.channelsLast = false;
  const Execution plain =
      execute(g, plan::buildPlan(g, 1, plan::singleDeviceChoice(g)), backend, inputs, rowMajor);
  CHECK(plain.stats.channelsLastRegions == 0);
  for (const char* name : {"y", "r2"}) {
    const std::vector<float> a = values(plain.outputs.at(name));
    const std::vector<float> b = values(one.run.outputs.at(name));
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      INFO(name << "[" << i << "]");
      CHECK(b[i] == Approx(a[i]).epsilon(1e-4).margin(1e-5));
    }
  }
}

TEST_CASE("graphs without convolutions, or where kernels would convert layouts, stay row-major",
          "[executor][layout]") {
  // relu and add take channels last, but nothing here prefers it.
  const graph::ExpandedGraph g = expandText(R"({"tapestry": "graph/v1", "name": "ew",
    "tensors": {"x": {"dtype": "float32", "shape": [2, 4, 6, 6]}, "b": {"dtype": "float32", "shape": [2, 4, 6, 6]}},
    "operations": [
      {"name": "a", "kernel": "relu", "inputs": {"input": "x"}, "outputs": {"result": "h"}},
      {"name": "s", "kernel": "add", "inputs": {"A": "h", "B": "b"}, "outputs": {"result": "y"}}],
    "outputs": ["y"]})");
  CHECK(runAndCheck(g, 1, plan::singleDeviceChoice(g)).run.stats.channelsLastRegions == 0);
  CHECK(runAndCheck(g, 2, dataParallel(g, 2, 2)).run.stats.channelsLastRegions == 0);
  // convnet adds a per-channel bias after each convolution (a broadcast
  // operand: runs of C elements channels last) and its relus feed means:
  // every region stays row-major, and the convolutions copy.
  const graph::ExpandedGraph convnet = testGraph("convnet.json");
  CHECK(runAndCheck(convnet, 1, plan::singleDeviceChoice(convnet)).run.stats.channelsLastRegions ==
        0);
}

TEST_CASE("a squeeze-excitation's per-channel scale keeps its block channels last",
          "[executor][layout]") {
  // conv -> x; mean over the image -> s (1 x 1); x * s: a per-channel operand
  // of C channels. With 16 channels or more its channels-last runs are whole
  // vectors and the block stays channels last; with 8 it goes row-major.
  auto block = [](int c) {
    const std::string C = std::to_string(c);
    return expandText(R"({"tapestry": "graph/v1", "name": "se",
      "tensors": {"img": {"dtype": "float32", "shape": [2, 3, 8, 8]}, "w": {"dtype": "float32", "shape": [)" +
                      C + R"(, 3, 3, 3]}, "v": {"dtype": "float32", "shape": [)" + C + ", " + C +
                      R"(, 1, 1]}},
      "operations": [
        {"name": "conv", "kernel": "conv2d", "params": {"padding": [1, 1]}, "inputs": {"input": "img", "weight": "w"}, "outputs": {"result": "x"}},
        {"name": "act", "kernel": "hard_swish", "inputs": {"input": "x"}, "outputs": {"result": "h"}},
        {"name": "pool", "kernel": "global_avgpool", "inputs": {"input": "h"}, "outputs": {"result": "p"}},
        {"name": "gate", "kernel": "sigmoid", "inputs": {"input": "p"}, "outputs": {"result": "s"}},
        {"name": "scale", "kernel": "mul", "inputs": {"A": "h", "B": "s"}, "outputs": {"result": "y"}},
        {"name": "out", "kernel": "conv2d", "inputs": {"input": "y", "weight": "v"}, "outputs": {"result": "z"}}],
      "outputs": ["z"]})");
  };
  const graph::ExpandedGraph wide = block(16);
  CHECK(runAndCheck(wide, 1, plan::singleDeviceChoice(wide)).run.stats.channelsLastRegions >= 3);
  const graph::ExpandedGraph narrow = block(8);
  CHECK(runAndCheck(narrow, 1, plan::singleDeviceChoice(narrow)).run.stats.channelsLastRegions ==
        0);
}

TEST_CASE("empty index spaces write nothing: outputs are zeros", "[executor]") {
  const graph::ExpandedGraph g = expandText(R"({"tapestry": "graph/v1", "name": "z",
    "tensors": {"x": {"dtype": "float32", "shape": [3, 0]}, "b": {"dtype": "float32", "shape": [3]}},
    "operations": [
      {"name": "s", "kernel": "sum", "params": {"axis": 1}, "inputs": {"input": "x"}, "outputs": {"result": "t"}},
      {"name": "a", "kernel": "add", "inputs": {"A": "t", "B": "b"}, "outputs": {"result": "y"}},
      {"name": "r", "kernel": "relu", "inputs": {"input": "x"}, "outputs": {"result": "e"}}],
    "outputs": ["y", "e", "t"]})");
  const TensorBuffers inputs{{"x", Buffer::host(DType::Float32, std::vector<std::int64_t>{3, 0})},
                             {"b", floats({3}, {1, -2, 3})}};
  CpuBackend backend(2);
  for (const PlanChoice& choice :
       {plan::singleDeviceChoice(g),
        PlanChoice{{{{3, 1}, {0, 1, 0}}, {{3}, {1, 0, 1}}, {{2, 1}, {1, 0}}}}}) {
    INFO(describe(choice));
    const Execution run = execute(g, plan::buildPlan(g, 2, choice), backend, inputs);
    CHECK(values(run.outputs.at("t")) == std::vector<float>{0, 0, 0});
    CHECK(values(run.outputs.at("y")) == std::vector<float>{1, -2, 3});
    CHECK(run.outputs.at("e").elementCount() == 0);
  }
}

TEST_CASE("outputs are gathered into reused host memory, every element written",
          "[executor][memory]") {
  // A 4 MiB output in two row halves: the host block a run returns goes back
  // to the backend when the caller drops it, and the next run gathers into
  // it (fresh pages fault every 4 KiB on first touch: 148 ms against 8 ms a
  // run for a 64 MiB `add`). Not zero-filled first, so each run must write
  // every element: -x of a new x each run.
  const graph::ExpandedGraph g = expandText(R"({"tapestry": "graph/v1", "name": "big",
    "tensors": {"x": {"dtype": "float32", "shape": [1024, 1024]}},
    "operations": [{"name": "n", "kernel": "neg", "inputs": {"input": "x"},
                    "outputs": {"result": "y"}}],
    "outputs": ["y"]})");
  CpuBackend backend(2);
  const plan::ShardPlan p = plan::buildPlan(g, 2, PlanChoice{{{{2, 1}, {0, 1}}}});
  Buffer x = Buffer::host(DType::Float32, std::vector<std::int64_t>{1024, 1024});
  const TensorBuffers inputs{{"x", x}};
  PreparedRun prepared(g, p, backend, inputs);
  const std::byte* first = nullptr;
  for (int run = 0; run < 3; ++run) {
    auto* in = reinterpret_cast<float*>(x.data());
    for (std::int64_t i = 0; i < 1024 * 1024; ++i) {
      in[i] = static_cast<float>((i + run) % 7);
    }
    const Execution out = prepared.run();
    const Buffer& y = out.outputs.at("y");
    first = run == 0 ? y.data() : first;
    CHECK(y.data() == first);
    const auto* got = reinterpret_cast<const float*>(y.data());
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < 1024 * 1024; ++i) {
      wrong += got[i] != -static_cast<float>((i + run) % 7) ? 1 : 0;
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("a reshard cuts shards into pieces that read one region each", "[executor]") {
  // h is made in row halves; the add reads it in column halves, so each of its
  // shards spans two regions: it runs as two kernel calls, copying nothing.
  const graph::ExpandedGraph g = expandText(R"({"tapestry": "graph/v1", "name": "re",
    "tensors": {"x": {"dtype": "float32", "shape": [4, 6]}, "y": {"dtype": "float32", "shape": [4, 6]}},
    "operations": [
      {"name": "r", "kernel": "relu", "inputs": {"input": "x"}, "outputs": {"result": "h"}},
      {"name": "a", "kernel": "add", "inputs": {"A": "h", "B": "y"}, "outputs": {"result": "z"}}],
    "outputs": ["z"]})");
  const PlanChoice choice{{{{2, 1}, {0, 1}}, {{1, 2}, {0, 1}}}};
  const Outcome out = runAndCheck(g, 2, choice);
  CHECK(out.run.stats.splitShards == 2);
  CHECK(out.run.stats.kernelCalls == 2 + 4);
  CHECK(out.run.stats.assembledSelections == 0);
}

TEST_CASE("a row-split convolution copies only its halo rows and a column split its selection",
          "[executor][layout]") {
  // A 1x1 and a 3x3 convolution, both in row halves on two devices: h
  // between them is channels last, and each 3x3 shard reads 8 rows of it in
  // place and one from the other device. Its index is cut where its 3-row
  // windows cross that boundary: 7 output rows read the local tile in place,
  // and one row's 3 input rows are assembled (not all 9).
  const graph::ExpandedGraph g = expandText(R"({"tapestry": "graph/v1", "name": "halo",
    "tensors": {"x": {"dtype": "float32", "shape": [1, 4, 16, 16]},
                "v": {"dtype": "float32", "shape": [4, 4, 1, 1], "constant": true},
                "w": {"dtype": "float32", "shape": [4, 4, 3, 3], "constant": true}},
    "operations": [
      {"name": "p", "kernel": "conv2d", "inputs": {"input": "x", "weight": "v"}, "outputs": {"result": "h"}},
      {"name": "c", "kernel": "conv2d", "params": {"padding": [1, 1]},
       "inputs": {"input": "h", "weight": "w"}, "outputs": {"result": "y"}}],
    "outputs": ["y"]})");
  // Both convolutions in halves along index dim `dim` (2: rows, 3: columns).
  auto halves = [&](std::size_t dim) {
    plan::PlanChoice c;
    for (const graph::Operation& op : g.operations) {
      std::vector<std::int64_t> split(op.application.index.rank(), 1);
      split[dim] = 2;
      c.ops.push_back(plan::OpChoice{split, {0, 1}});
    }
    return c;
  };
  // The plan's Shard::assembled (what the cost model charges) agrees with the
  // executor: nothing for the rows (their 3 halo rows left out), all of each
  // column selection.
  auto planned = [&](std::size_t dim) {
    std::int64_t bytes = 0;
    for (const plan::OpPlan& op : plan::buildPlan(g, 2, halves(dim)).ops) {
      for (const plan::Shard& s : op.shards) {
        bytes += s.assembled;
      }
    }
    return bytes;
  };
  const Outcome out = runAndCheck(g, 2, halves(2));
  CHECK(out.run.stats.splitShards == 2);
  CHECK(out.run.stats.kernelCalls == 2 + 4);
  CHECK(out.run.stats.assembledSelections == 2);
  CHECK(out.run.stats.assembledBytes == 2 * 3 * 16 * 4 * 4);
  CHECK(planned(2) == 0);

  // In column halves the pieces would read boxes of the channels-last tiles
  // that are not one block each (oneDNN copies such a box whole on every
  // call): each shard assembles its 9 columns instead, in one call.
  const Outcome cols = runAndCheck(g, 2, halves(3));
  CHECK(cols.run.stats.splitShards == 0);
  CHECK(cols.run.stats.kernelCalls == 2 + 2);
  CHECK(cols.run.stats.assembledSelections == 2);
  CHECK(cols.run.stats.assembledBytes == 2 * 16 * 9 * 4 * 4);
  CHECK(planned(3) == cols.run.stats.assembledBytes);
  CHECK(cols.run.stats.channelsLastRegions > 0);
}

// ---------------------------------------------------------------- testdata

TEST_CASE("user kernels without a native kernel run from their bodies, sharded",
          "[executor][body]") {
  metakernel::MetakernelLibrary library = lib();
  for (const char* file : {"my_rmsnorm.yaml", "matmul_draft.yaml"}) {
    library.addFile(SourceFile::read(std::string(TAPESTRY_TESTDATA_DIR) + "/metakernels/" + file));
  }
  const std::string text = R"({"tapestry": "graph/v1", "name": "user",
    "tensors": {"x": {"dtype": "float32", "shape": [6, 10, 16]},
                "g": {"dtype": "float32", "shape": [16]},
                "w": {"dtype": "float32", "shape": [6, 16, 12]},
                "v": {"dtype": "float64", "shape": [6, 16, 12]}},
    "operations": [
      {"name": "norm", "kernel": "my_rmsnorm", "inputs": {"input": "x", "gamma": "g"},
       "outputs": {"result": "y"}},
      {"name": "mm", "kernel": "draft_matmul", "inputs": {"X": "y", "W": "w"},
       "outputs": {"result": "z"}},
      {"name": "mmk", "kernel": "draft_matmul_k", "inputs": {"X": "y", "W": "w"},
       "outputs": {"result": "zk"}},
      {"name": "c", "kernel": "cast", "params": {"dtype": "float64"}, "inputs": {"input": "y"},
       "outputs": {"result": "y64"}},
      {"name": "mm64", "kernel": "draft_matmul_k", "inputs": {"X": "y64", "W": "v"},
       "outputs": {"result": "z64"}}]})";
  json::Document doc = json::Document::parse(SourceFile("user.json", text));
  const graph::ExpandedGraph g = graph::expand(graph::decodeGraph(json::Value(doc)), library);
  REQUIRE(g.operations[2].application.reductionDims == std::vector<std::size_t>{3});
  (void)runAndCheck(g, 1, dataParallel(g, 1, 1));
  (void)runAndCheck(g, 2, dataParallel(g, 2, 2));
  // k split 3 ways over 3 devices: partial products joined by combine: sum.
  const PlanChoice split = reductionSplit(g, 3);
  REQUIRE(split.ops[2].split[3] == 3);
  (void)runAndCheck(g, 3, split);
  std::mt19937 rng(5);
  for (int i = 0; i < 4; ++i) {
    (void)runAndCheck(g, 4, randomChoice(g, 4, rng));
  }
}

TEST_CASE("extern kernels run from a shared library and agree with their bodies",
          "[executor][extern]") {
  const std::string lib64 = TAPESTRY_EXAMPLE_KERNELS;
  const std::string yaml = R"(ext_rmsnorm:
  params: {eps: {type: float, default: 1e-6}}
  inputs:
    input: {shape: "[$batch..., $d]", dtype: "$dtype", ipf: "[@..., 0] :> [1..., $d]"}
    gamma: {shape: "[$d]", dtype: "$dtype", ipf: "[0] :> [$d]"}
  index: "$batch"
  outputs:
    result: {shape: "[$batch..., $d]", dtype: "$dtype", ipf: "[@..., 0] :> [1..., $d]"}
  extern: {library: ")" + lib64 +
                           R"(", symbol: example_rmsnorm}
  body: "result = input / sqrt(mean(input * input, axis=-1, keepdims=true) + $eps) * gamma"
ext_fail:
  inputs:
    input: {shape: "[$s...]", dtype: "$dtype"}
  index: "$s"
  outputs:
    result: {dtype: "$dtype"}
  extern: {library: ")" + lib64 +
                           R"(", symbol: example_fail}
ext_nosymbol:
  inputs:
    input: {shape: "[$s...]", dtype: "$dtype"}
  index: "$s"
  outputs:
    result: {dtype: "$dtype"}
  extern: {library: ")" + lib64 +
                           R"(", symbol: example_nope}
ext_nolibrary:
  inputs:
    input: {shape: "[$s...]", dtype: "$dtype"}
  index: "$s"
  outputs:
    result: {dtype: "$dtype"}
  extern: {library: no/such/libkernels.so, symbol: k}
)";
  metakernel::MetakernelLibrary library = lib();
  library.addFile(SourceFile("dir/ext.yaml", yaml));
  CHECK(library.get("ext_nolibrary").externKernel->path == "dir/no/such/libkernels.so");
  auto graphOf = [&](const std::string& kernel, const std::string& dtype) {
    const std::string text =
        R"({"tapestry": "graph/v1", "name": "ext", "tensors": {
      "x": {"dtype": ")" +
        dtype + R"(", "shape": [6, 5, 24]},
      "g": {"dtype": ")" +
        dtype + R"(", "shape": [24]}},
      "operations": [{"name": "op", "kernel": ")" +
        kernel + R"(", "inputs": )" +
        (kernel == "ext_rmsnorm" ? R"({"input": "x", "gamma": "g"})" : R"({"input": "x"})") +
        R"(, "outputs": {"result": "y"}}]})";
    json::Document doc = json::Document::parse(SourceFile("ext.json", text));
    return graph::expand(graph::decodeGraph(json::Value(doc)), library);
  };
  // Sharded through the library; the check's reference runs the body.
  for (const char* dtype : {"float32", "float64"}) {
    INFO(dtype);
    const graph::ExpandedGraph g = graphOf("ext_rmsnorm", dtype);
    (void)runAndCheck(g, 1, dataParallel(g, 1, 1));
    (void)runAndCheck(g, 3, dataParallel(g, 3, 3));
    std::mt19937 rng(3);
    (void)runAndCheck(g, 2, randomChoice(g, 2, rng));
  }
  auto failure = [&](const std::string& kernel) {
    const graph::ExpandedGraph g = graphOf(kernel, "float32");
    CpuBackend backend(1);
    return failureOf([&] { (void)evaluateGraph(backend, g, drawInputs(g, 1), 0); });
  };
  const Failure fails = failure("ext_fail");
  CHECK(
      fails.message ==
      "op (ext_fail): extern kernel example_fail failed (7): example_fail: refused op on purpose");
  CHECK(fails.code == ExitCode::InvalidInput);
  const Failure symbol = failure("ext_nosymbol");
  CHECK_THAT(symbol.message, Contains("has no symbol example_nope"));
  CHECK(symbol.location.rfind("dir/ext.yaml:24:", 0) == 0);
  const Failure missing = failure("ext_nolibrary");
  CHECK_THAT(missing.message, Contains("cannot load extern library dir/no/such/libkernels.so: "));
  CHECK(missing.location.rfind("dir/ext.yaml:31:", 0) == 0);
}

TEST_CASE("a body staged through host memory (for a backend without block operations) equals "
          "the native kernel",
          "[executor][body]") {
  const graph::ExpandedGraph g = expandText(R"({"tapestry": "graph/v1", "name": "s",
    "tensors": {"x": {"dtype": "float32", "shape": [6, 10]}},
    "operations": [{"name": "sm", "kernel": "softmax", "inputs": {"input": "x"}}]})");
  const graph::Operation& op = g.operations[0];
  const TensorBuffers inputs = drawInputs(g, 4);
  CpuBackend backend(2);
  const Buffer native = backend.allocate(DType::Float32, ZRange::fromShape(ZPoint{6, 10}), 0);
  const Buffer staged = backend.allocate(DType::Float32, ZRange::fromShape(ZPoint{6, 10}), 1);
  const ZRange shard(ZPoint{2}, ZPoint{5});
  const std::vector<PortViews> in{{inputs.at("x").view()}};
  backend.runKernel(op, shard, in, std::vector<PortViews>{{native.view()}}, 0);
  const std::vector<PortViews> out{{staged.view()}};
  backend::cpu::runBodyKernelStaged(backend, KernelCall{op, shard, in, out, 1});
  const std::vector<float> a = values(native);
  const std::vector<float> b = values(staged);
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i);
    if (i < 20 || i >= 50) {
      CHECK(b[i] == 0); // outside the shard's rows: untouched
    } else {
      CHECK(b[i] == Approx(a[i]).epsilon(1e-6));
    }
  }
}

TEST_CASE("every testdata graph runs under many plans and equals the unsharded graph",
          "[executor][testdata]") {
  const std::vector<std::string> names{"tiny.json",
                                       "mlp.json",
                                       "convnet.json",
                                       "concat_split_embedding.json",
                                       "transformer_block.json",
                                       "mobilenet_block.json"};
  for (const std::string& name : names) {
    INFO("graph " << name);
    const graph::ExpandedGraph g = testGraph(name);
    std::mt19937 rng(static_cast<std::mt19937::result_type>(name.size() * 7919));
    runAndCheck(g, 1, plan::singleDeviceChoice(g));
    runAndCheck(g, 2, dataParallel(g, 2, 2), 0);
    runAndCheck(g, 4, dataParallel(g, 4, 4), 2);
    const Outcome split = runAndCheck(g, 3, reductionSplit(g, 3), 0);
    // Graphs with matmul, conv2d, sum, max or mean get split reduction dims.
    if (name != "tiny.json" && name != "mlp.json") {
      CHECK(split.run.stats.reductionSteps > 0);
    }
    runAndCheck(g, 2, randomChoice(g, 2, rng), 0, plan::InputsOn::Free);
    runAndCheck(g, 4, randomChoice(g, 4, rng), 3);
    runAndCheck(g, 3, randomChoice(g, 3, rng), 1);
  }
}

TEST_CASE("the stored testdata plans run and check", "[executor][testdata]") {
  for (const std::string& path : testdataPlans()) {
    INFO(path);
    const plan::LoadedPlan loaded = plan::loadPlan(path, lib());
    const TensorBuffers inputs = drawInputs(loaded.graph, 3);
    CpuBackend backend(loaded.plan.deviceCount);
    const Execution run = execute(loaded, backend, inputs);
    const CheckReference reference = unshardedReference(backend, loaded.graph, inputs);
    for (const OutputCheck& c : compareOutputs(loaded.graph, run.outputs, reference)) {
      INFO(c.tensor << ": " << describeCheck(c));
      CHECK(c.ok);
    }
    for (std::size_t d = 0; d < run.stats.devices.size(); ++d) {
      CHECK(run.stats.devices[d].peakBytes <=
            loaded.simulation.peakPerDevice[d] + run.stats.assembledBytes);
    }
  }
}

TEST_CASE("fewer threads than devices: a worker serves several devices", "[executor]") {
  const graph::ExpandedGraph g = testGraph("mlp.json");
  const PlanChoice choice = reductionSplit(g, 4);
  CHECK(runAndCheck(g, 4, choice, 1).run.stats.workers == 1);
  CHECK(runAndCheck(g, 4, choice, 2).run.stats.workers == 2);
  CHECK(runAndCheck(g, 4, choice, 8).run.stats.workers == 4); // a cap, not a default
  // Without the simulated schedule, tasks go in submission order.
  const plan::ShardPlan p = plan::buildPlan(g, 4, choice);
  CpuBackend backend(4);
  const TensorBuffers inputs = drawInputs(g, 1);
  const Execution run = execute(g, p, backend, inputs, ExecuteOptions{3, 1});
  for (const OutputCheck& c :
       compareOutputs(g, run.outputs, unshardedReference(backend, g, inputs))) {
    CHECK(c.ok);
  }
}

// ---------------------------------------------------------------- task times

namespace {

// The per-task times of a run: one per shard, transfer and reduction of the
// plan, each within the run (start <= end), on a worker that ran one task at a
// time, and after the tasks it waited for.
void checkTaskTimes(const plan::ShardPlan& p, const ExecutionStats& stats) {
  REQUIRE(stats.shardTimes.size() == p.ops.size());
  REQUIRE(stats.transferTimes.size() == p.transfers.size());
  REQUIRE(stats.reductionTimes.size() == p.reductions.size());
  std::vector<std::vector<TaskTime>> byWorker(static_cast<std::size_t>(stats.workers));
  auto check = [&](const TaskTime& t) {
    CHECK(t.start >= 0);
    CHECK(t.start <= t.end);
    CHECK(t.end <= stats.wallSeconds);
    REQUIRE(t.worker >= 0);
    REQUIRE(t.worker < stats.workers);
  };
  for (std::size_t op = 0; op < p.ops.size(); ++op) {
    REQUIRE(stats.shardTimes[op].size() == p.ops[op].shards.size());
    for (const TaskTime& t : stats.shardTimes[op]) {
      check(t);
      byWorker[static_cast<std::size_t>(t.worker)].push_back(t);
    }
  }
  for (std::size_t i = 0; i < p.transfers.size(); ++i) {
    const TaskTime& t = stats.transferTimes[i];
    check(t);
    byWorker[static_cast<std::size_t>(t.worker)].push_back(t);
    if (const auto& after = p.transfers[i].afterShard) {
      CHECK(t.start >= stats.shardTimes[after->first][after->second].end);
    }
  }
  for (std::size_t r = 0; r < p.reductions.size(); ++r) {
    const plan::Reduction& red = p.reductions[r];
    const TaskTime& t = stats.reductionTimes[r];
    check(t);
    for (std::size_t k : red.shards) {
      CHECK(t.end >= stats.shardTimes[red.op][k].end); // the last combine waits for every partial
    }
    for (const plan::Reduction::Step& step : red.steps) {
      if (step.transfer) {
        CHECK(t.start <= stats.transferTimes[*step.transfer].start);
      }
    }
  }
  for (std::vector<TaskTime>& tasks : byWorker) {
    std::sort(tasks.begin(), tasks.end(),
              [](const TaskTime& a, const TaskTime& b) { return a.start < b.start; });
    for (std::size_t i = 1; i < tasks.size(); ++i) {
      CHECK(tasks[i - 1].end <= tasks[i].start); // one task at a time
    }
  }
}

} // namespace

TEST_CASE("every shard, transfer and reduction is timed on the worker that ran it",
          "[executor][timing]") {
  // m in 2, k in 3 over 3 devices: two reduction trees with partial moves.
  const graph::ExpandedGraph g = expandText(kMatmulAddRelu);
  const plan::ShardPlan p = plan::buildPlan(
      g, 3, PlanChoice{{{{2, 1, 3}, {0, 1, 2, 1, 2, 0}}, {{1, 2}, {2, 0}}, {{2, 1}, {1, 2}}}});
  REQUIRE(p.reductions.size() == 2);
  const cost::Simulation sim = cost::simulate(g, roomyCpuTarget(3), p);
  CpuBackend backend(3);
  const TensorBuffers inputs = drawInputs(g, 1);
  for (int threads : {0, 1, 2}) {
    INFO(threads << " threads");
    const Execution run = execute(g, p, backend, inputs, ExecuteOptions{threads, 1}, &sim);
    checkTaskTimes(p, run.stats);
    // Every task took some time, and together no more than the workers had.
    double busy = 0;
    for (const std::vector<TaskTime>& op : run.stats.shardTimes) {
      for (const TaskTime& t : op) {
        busy += t.seconds();
      }
    }
    for (const TaskTime& t : run.stats.transferTimes) {
      busy += t.seconds();
    }
    CHECK(busy > 0);
    CHECK(busy <= run.stats.wallSeconds * run.stats.workers);
  }
  // Without a schedule (submission order) too, on a single device, and for a
  // larger graph over 4 devices.
  checkTaskTimes(p, execute(g, p, backend, inputs, ExecuteOptions{3, 1}).stats);
  const plan::ShardPlan single = plan::buildPlan(g, 1, plan::singleDeviceChoice(g));
  checkTaskTimes(single, execute(g, single, backend, inputs).stats);
  const graph::ExpandedGraph mlp = testGraph("mlp.json");
  const plan::ShardPlan split = plan::buildPlan(mlp, 4, reductionSplit(mlp, 4));
  CpuBackend four(4);
  checkTaskTimes(split, execute(mlp, split, four, drawInputs(mlp, 1), ExecuteOptions{0, 1}).stats);
}

// ---------------------------------------------------------------- ranks

namespace {

// K ranks of a distributed run as threads of this process: what MpiRankLink
// does over MPI, with a mailbox per (from, to, tag) and a rendezvous for the
// collectives.
struct Mailroom {
  explicit Mailroom(int k) : ranks(k), gathered(static_cast<std::size_t>(k)) {}
  int ranks;
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::tuple<int, int, int>, std::deque<Buffer>> mail;
  std::vector<std::vector<std::int64_t>> gathered, result;
  int arrived = 0;
  int round = 0;
};

class ThreadLink : public RankLink {
public:
  ThreadLink(Mailroom& room, int rank) : room_(room), rank_(rank) {}
  int rank() const override { return rank_; }
  int ranks() const override { return room_.ranks; }
  int maxTag() const override { return 1 << 30; }
  int ranksOnThisNode() const override { return room_.ranks; } // one steady clock
  void send(int to, int tag, Buffer data) override {
    std::lock_guard<std::mutex> lock(room_.mutex);
    room_.mail[{rank_, to, tag}].push_back(std::move(data));
    room_.changed.notify_all();
  }
  bool receive(int from, int tag, std::span<std::byte> into,
               const std::atomic<bool>& stop) override {
    std::unique_lock<std::mutex> lock(room_.mutex);
    std::deque<Buffer>& box = room_.mail[{from, rank_, tag}];
    while (box.empty()) {
      if (stop.load()) {
        return false;
      }
      room_.changed.wait_for(lock, std::chrono::milliseconds(1));
    }
    REQUIRE(static_cast<std::size_t>(box.front().byteSize()) == into.size());
    std::memcpy(into.data(), box.front().data(), into.size());
    box.pop_front();
    return true;
  }
  void flush() override {}
  std::vector<std::vector<std::int64_t>>
  allgather(const std::vector<std::int64_t>& local) override {
    std::unique_lock<std::mutex> lock(room_.mutex);
    const int round = room_.round;
    room_.gathered[static_cast<std::size_t>(rank_)] = local;
    if (++room_.arrived == room_.ranks) {
      room_.result = room_.gathered;
      room_.arrived = 0;
      ++room_.round;
      room_.changed.notify_all();
    } else {
      room_.changed.wait(lock, [&] { return room_.round != round; });
    }
    return room_.result;
  }
  void barrier() override { allgather({0}); }

private:
  Mailroom& room_;
  int rank_;
};

// NCCL's point-to-point semantics between rank threads: each rank's link
// thread makes one call at a time, and a send completes only together with
// its peer's receive (a rendezvous per ordered pair of ranks), so calls that
// do not pair up in order never complete. The buffers must match in size; a
// call without its partner for 30 s throws (a deadlock) instead of hanging.
struct Rendezvous {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::pair<int, int>, const Buffer*> posted; // (from, to): the send waiting
  int calls = 0;
};

class ThreadDeviceLink : public DeviceLink {
public:
  ThreadDeviceLink(Rendezvous& room, int rank) : room_(room), rank_(rank) {}
  int device() const override { return 0; }
  bool reaches(int) const override { return true; }
  bool send(int to, const Buffer& data, const std::atomic<bool>& stop) override {
    std::unique_lock<std::mutex> lock(room_.mutex);
    const std::pair<int, int> key{rank_, to};
    if (room_.posted.count(key) != 0) {
      throw Error("two sends at once from one rank's link thread");
    }
    room_.posted[key] = &data;
    ++room_.calls;
    room_.changed.notify_all();
    return await(lock, stop, [&] { return room_.posted.count(key) == 0; });
  }
  bool receive(int from, const Buffer& into, const std::atomic<bool>& stop) override {
    std::unique_lock<std::mutex> lock(room_.mutex);
    const std::pair<int, int> key{from, rank_};
    if (!await(lock, stop, [&] { return room_.posted.count(key) != 0; })) {
      return false;
    }
    const Buffer& data = *room_.posted[key];
    if (data.byteSize() != into.byteSize()) {
      throw Error("a send of " + std::to_string(data.byteSize()) + " bytes met a receive of " +
                  std::to_string(into.byteSize()));
    }
    std::memcpy(into.data(), data.data(), static_cast<std::size_t>(data.byteSize()));
    room_.posted.erase(key);
    room_.changed.notify_all();
    return true;
  }

private:
  template <class Done>
  bool await(std::unique_lock<std::mutex>& lock, const std::atomic<bool>& stop, Done done) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done()) {
      if (stop.load()) {
        return false;
      }
      if (std::chrono::steady_clock::now() > limit) {
        throw Error("rank " + std::to_string(rank_) + "'s link call found no partner in 30 s");
      }
      room_.changed.wait_for(lock, std::chrono::milliseconds(1));
    }
    return true;
  }
  Rendezvous& room_;
  int rank_;
};

// Runs plan `p` on `ranks` threads as ranks; each rank's Execution. With
// `devices`, the cross-rank transfers go through ThreadDeviceLinks on it.
std::vector<Execution> runOnRanks(const graph::ExpandedGraph& g, const plan::ShardPlan& p,
                                  const cost::Target& target, const TensorBuffers& inputs,
                                  int ranks, Rendezvous* devices = nullptr,
                                  const cost::Simulation* schedule = nullptr) {
  Mailroom room(ranks);
  std::vector<Execution> runs(static_cast<std::size_t>(ranks));
  std::vector<std::string> errors(static_cast<std::size_t>(ranks));
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] {
        try {
          ThreadLink link(room, r);
          CpuBackend backend(p.deviceCount);
          ExecuteOptions options{0, 1};
          options.link = &link;
          options.deviceRank = deviceRanks(p, target, ranks);
          std::optional<ThreadDeviceLink> deviceLink;
          if (devices != nullptr) {
            options.deviceLink = &deviceLink.emplace(*devices, r);
          }
          runs[static_cast<std::size_t>(r)] = execute(g, p, backend, inputs, options, schedule);
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(r)] = e.what();
        }
      });
    }
  }
  for (const std::string& e : errors) {
    REQUIRE(e.empty());
  }
  return runs;
}

} // namespace

TEST_CASE("devices go to ranks in contiguous blocks, whole nodes where they fit", "[executor]") {
  const graph::ExpandedGraph g = testGraph("mlp.json");
  // The used devices in order, split into contiguous blocks as even as
  // possible, the first ranks one longer; ranks past them hold none.
  auto blocks = [](const std::vector<int>& used, int ranks) {
    std::vector<std::vector<int>> held(static_cast<std::size_t>(ranks));
    const std::size_t small = used.size() / static_cast<std::size_t>(ranks);
    const std::size_t extra = used.size() % static_cast<std::size_t>(ranks);
    std::size_t next = 0;
    for (std::size_t r = 0; r < held.size(); ++r) {
      for (std::size_t i = 0; i < small + (r < extra ? 1 : 0); ++i) {
        held[r].push_back(used[next++]);
      }
    }
    return held;
  };
  const cost::Target eight = cost::loadTarget("h100x8");
  for (int devices : {2, 5, 8}) {
    const plan::ShardPlan p = plan::buildPlan(g, 8, reductionSplit(g, devices));
    const std::vector<int> used = rankDevices(p, deviceRanks(p, eight, 1), 1)[0];
    REQUIRE(used.size() >= 2);
    for (int ranks : {1, 2, 3, 4, 9}) {
      CHECK(rankDevices(p, deviceRanks(p, eight, ranks), ranks) == blocks(used, ranks));
    }
  }
  // Two nodes of 8: whole nodes while there are at least as many nodes as
  // ranks, else blocks of the used devices.
  const cost::Target nodes = cost::loadTarget("2x-h100x8");
  const plan::ShardPlan p = plan::buildPlan(g, 16, reductionSplit(g, 16));
  const std::vector<int> byRank = deviceRanks(p, nodes, 2);
  for (int d = 0; d < 16; ++d) {
    CHECK(byRank[static_cast<std::size_t>(d)] == nodes.nodeOf(d));
  }
  const std::vector<int> used = rankDevices(p, deviceRanks(p, nodes, 1), 1)[0];
  CHECK(rankDevices(p, deviceRanks(p, nodes, 4), 4) == blocks(used, 4));
}

namespace {

// Every output of `want` is in `got`, byte for byte.
void checkSameBytes(const TensorBuffers& got, const TensorBuffers& want) {
  REQUIRE(got.size() == want.size());
  for (const auto& [output, buffer] : want) {
    INFO(output);
    const Buffer& mine = got.at(output);
    REQUIRE(mine.byteSize() == buffer.byteSize());
    CHECK(std::memcmp(mine.data(), buffer.data(), static_cast<std::size_t>(buffer.byteSize())) ==
          0);
  }
}

} // namespace

// Graph inputs relayed between devices (plan::PlanOptions::relayGroups): the
// forwarded copies read the first device's arrival, alone, on worker threads
// and across ranks.
TEST_CASE("inputs relayed between devices run and check, on ranks too", "[executor]") {
  for (const char* name : {"mlp.json", "convnet.json", "transformer_block.json"}) {
    INFO("graph " << name);
    const graph::ExpandedGraph g = testGraph(name);
    std::mt19937 rng(13);
    for (const std::vector<int>& groups : {std::vector<int>{0, 0, 0, 0}, {0, 0, 1, 1}}) {
      const PlanChoice parallel = dataParallel(g, 4, 4);
      const plan::ShardPlan p =
          plan::buildPlan(g, 4, parallel, plan::PlanOptions{plan::InputsOn::Host, groups});
      int relays = 0;
      for (const plan::Transfer& t : p.transfers) {
        relays += t.afterTransfer ? 1 : 0;
      }
      CHECK(relays > 0);
      const Outcome run = runAndCheck(g, 4, parallel, 2, plan::InputsOn::Host, 7, groups);
      CHECK(run.run.stats.transfers == p.transfers.size());
      runAndCheck(g, 4, randomChoice(g, 4, rng), 0, plan::InputsOn::Host, 7, groups);
      const TensorBuffers inputs = drawInputs(g, 3);
      CpuBackend backend(4);
      const Execution one = execute(g, p, backend, inputs, ExecuteOptions{0, 1});
      const std::vector<Execution> ranks = runOnRanks(g, p, roomyCpuTarget(4), inputs, 2);
      checkSameBytes(ranks[0].outputs, one.outputs);
    }
  }
}

TEST_CASE("ranks run their devices' tasks and rank 0 gets the outputs bit for bit", "[executor]") {
  for (const char* name : {"convnet_2dev.json", "mm_relu_2dev.json", "mlp_2dev.json"}) {
    const plan::LoadedPlan loaded =
        driver::loadRunnable(std::string(TAPESTRY_TESTDATA_DIR) + "/plans/" + name, lib());
    const graph::ExpandedGraph& g = loaded.graph;
    const plan::ShardPlan& p = loaded.plan;
    const TensorBuffers inputs = drawInputs(g, 3);
    CpuBackend backend(p.deviceCount);
    const Execution one = execute(g, p, backend, inputs, ExecuteOptions{0, 1});
    for (int ranks : {2, 3}) {
      const std::vector<Execution> runs = runOnRanks(g, p, loaded.target, inputs, ranks);
      for (std::size_t r = 1; r < runs.size(); ++r) {
        CHECK(runs[r].outputs.empty());
        CHECK(runs[r].stats.wallSeconds == runs[0].stats.wallSeconds); // the same merged stats
      }
      const ExecutionStats& stats = runs[0].stats;
      CHECK(stats.transfers == one.stats.transfers);
      CHECK(stats.reductionSteps == one.stats.reductionSteps);
      CHECK(stats.kernelCalls == one.stats.kernelCalls);
      CHECK(stats.workers == one.stats.workers); // one per device, over the ranks
      for (std::size_t d = 0; d < stats.devices.size(); ++d) {
        CHECK(stats.devices[d].allocatedBytes == one.stats.devices[d].allocatedBytes);
      }
      checkSameBytes(runs[0].outputs, one.outputs);
      checkTaskTimes(p, stats);
    }
  }
}

TEST_CASE("ranks whose transfers go through a device link's one thread per rank get the outputs "
          "bit for bit",
          "[executor]") {
  // The executor's link thread under NCCL's rules (ThreadDeviceLink), on the
  // CPU backend: the testdata plans, and split reductions over 4 devices
  // (partials moved between ranks), in simulated and in submission order.
  struct Case {
    graph::ExpandedGraph g;
    plan::ShardPlan p;
    cost::Target target;
    std::optional<cost::Simulation> sim;
  };
  std::vector<Case> cases;
  for (const char* name : {"convnet_2dev.json", "mm_relu_2dev.json", "mlp_2dev.json"}) {
    plan::LoadedPlan loaded =
        driver::loadRunnable(std::string(TAPESTRY_TESTDATA_DIR) + "/plans/" + name, lib());
    cases.push_back(Case{loaded.graph, loaded.plan, loaded.target, loaded.simulation});
  }
  const cost::Target eight = cost::loadTarget("h100x8");
  for (const char* name : {"mlp.json", "transformer_block.json"}) {
    const graph::ExpandedGraph g = testGraph(name);
    const plan::ShardPlan p = plan::buildPlan(g, 8, reductionSplit(g, 4));
    cases.push_back(Case{g, p, eight, cost::simulate(g, eight, p)});
    cases.push_back(Case{g, p, eight, std::nullopt});
  }
  for (const Case& c : cases) {
    INFO(c.g.name << (c.sim ? ", simulated order" : ", submission order"));
    const TensorBuffers inputs = drawInputs(c.g, 3);
    CpuBackend backend(c.p.deviceCount);
    const cost::Simulation* sim = c.sim ? &*c.sim : nullptr;
    const Execution one = execute(c.g, c.p, backend, inputs, ExecuteOptions{0, 1}, sim);
    for (int ranks : {2, 3}) {
      INFO(ranks << " ranks");
      Rendezvous room;
      const std::vector<Execution> runs = runOnRanks(c.g, c.p, c.target, inputs, ranks, &room, sim);
      CHECK(room.calls > 0);
      CHECK(room.posted.empty());
      const ExecutionStats& stats = runs[0].stats;
      CHECK(stats.transport == Transport::Nccl);
      CHECK(stats.transfers == one.stats.transfers);
      CHECK(stats.reductionSteps == one.stats.reductionSteps);
      CHECK(stats.workers > one.stats.workers); // the link threads
      checkSameBytes(runs[0].outputs, one.outputs);
    }
  }
}

// ---------------------------------------------------------------- errors

TEST_CASE("executor errors: missing inputs, wrong shapes, a failing kernel", "[executor]") {
  const graph::ExpandedGraph g = expandText(kMatmulAddRelu);
  CpuBackend backend(2);
  const plan::ShardPlan p = plan::buildPlan(g, 2, plan::singleDeviceChoice(g));
  TensorBuffers inputs{{"x", floats({2, 3}, {1, 2, 3, 4, 5, 6})},
                       {"w", floats({3, 2}, {1, 0, 0, 1, 1, 1})}};
  CHECK_THROWS_WITH(execute(g, p, backend, inputs), Contains("missing input tensor c"));
  inputs.emplace("c", floats({1, 2}, {1, 2}));
  CHECK_THROWS_WITH(execute(g, p, backend, inputs), Contains("input tensor c is float32"));

  // An embedding index out of range fails inside a worker; the error comes
  // back once all workers stopped (no hang), as the input error it is.
  const graph::ExpandedGraph e = expandText(R"({"tapestry": "graph/v1", "name": "e",
    "tensors": {"t": {"dtype": "float32", "shape": [4, 2]}, "i": {"dtype": "int64", "shape": [6]}},
    "operations": [{"name": "emb", "kernel": "embedding", "inputs": {"table": "t", "indices": "i"}, "outputs": {"result": "r"}},
                   {"name": "act", "kernel": "relu", "inputs": {"input": "r"}, "outputs": {"result": "y"}}]})");
  Buffer indices = Buffer::host(DType::Int64, std::vector<std::int64_t>{6});
  std::vector<std::int64_t> idx{0, 1, 2, 9, 3, 0};
  std::copy(idx.begin(), idx.end(), indices.elements<std::int64_t>().begin());
  const TensorBuffers embInputs{
      {"t", Buffer::host(DType::Float32, std::vector<std::int64_t>{4, 2})}, {"i", indices}};
  const plan::ShardPlan ep =
      plan::buildPlan(e, 2, PlanChoice{{{{3, 2}, {0, 1, 0, 1, 0, 1}}, {{2, 1}, {1, 0}}}});
  try {
    execute(e, ep, backend, embInputs, ExecuteOptions{2, 1});
    FAIL("expected an error");
  } catch (const Error& err) {
    CHECK(err.exitCode() == ExitCode::InvalidInput);
  }
}

// ---------------------------------------------------------------- --check

TEST_CASE("check bounds: a multiple of the unsharded error, or a floor", "[executor][check]") {
  CHECK(unitRoundoff(DType::Float32) == std::ldexp(1.0, -24));
  CHECK(unitRoundoff(DType::Float64) == std::ldexp(1.0, -53));
  CHECK(unitRoundoff(DType::Float16) == std::ldexp(1.0, -11));
  CHECK(unitRoundoff(DType::BFloat16) == std::ldexp(1.0, -8));
  CHECK(unitRoundoff(DType::Int64) == 0);
  const double floor32 = kFloorUnits * std::ldexp(1.0, -24);
  CHECK(checkBound(DType::Float32, 0) == floor32);
  CHECK(checkBound(DType::Float32, 1e-9) == floor32);
  CHECK(checkBound(DType::Float32, 1e-4) == kBaselineMultiple * 1e-4);
  CHECK(checkBound(DType::Float32, std::nan("")) == floor32);
  CHECK(checkBound(DType::BFloat16, 0) == kFloorUnits * std::ldexp(1.0, -8));
  CHECK(checkBound(DType::Int32, 0.5) == 0);
}

TEST_CASE("max relative error: scale, zeros, infinities, NaN, mixed dtypes", "[executor][check]") {
  CHECK(maxRelativeError(floats({3}, {1, 2, 4}), floats({3}, {1, 2, 4})) == 0);
  CHECK(maxRelativeError(floats({3}, {1, 2.5f, 4}), floats({3}, {1, 2, 4})) == Approx(0.125));
  // All-zero reference: the absolute error.
  CHECK(maxRelativeError(floats({2}, {0, 0.5f}), floats({2}, {0, 0})) == Approx(0.5));
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(maxRelativeError(floats({2}, {-inf, 1}), floats({2}, {-inf, 1})) == 0);
  CHECK(std::isinf(maxRelativeError(floats({2}, {inf, 1}), floats({2}, {2, 1}))));
  CHECK(std::isnan(maxRelativeError(floats({2}, {std::nanf(""), 1}), floats({2}, {1, 1}))));
  CHECK(std::isnan(maxRelativeError(floats({2}, {1, 1}), floats({2}, {std::nanf(""), 1}))));
  Buffer half = Buffer::host(DType::BFloat16, std::vector<std::int64_t>{2});
  half.elements<BFloat16>()[0] = floatToBFloat16(1.0f);
  half.elements<BFloat16>()[1] = floatToBFloat16(2.0f);
  CHECK(maxRelativeError(half, half) == 0);
  // Against a float64 reference, in float64.
  Buffer wide = Buffer::host(DType::Float64, std::vector<std::int64_t>{2});
  wide.elements<double>()[0] = 1.0;
  wide.elements<double>()[1] = 2.0 + 1e-9;
  CHECK(maxRelativeError(half, wide) == Approx(0.5e-9));
  CHECK(maxRelativeError(floats({2}, {1, 2}), wide) == Approx(0.5e-9));
  CHECK_THROWS_AS(maxRelativeError(half, floats({3}, {1, 2, 3})), InternalError);
}

TEST_CASE("the reference is the graph in float64, the baseline in its own dtypes",
          "[executor][check]") {
  // y = x·w = 1 + 1e-8: float32 rounds it to 1, float64 keeps every digit.
  const graph::ExpandedGraph g = expandText(R"({"tapestry": "graph/v1", "name": "mm",
    "tensors": {"x": {"dtype": "float32", "shape": [1, 2]}, "w": {"dtype": "float32", "shape": [2, 1]}},
    "operations": [{"name": "p", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "y"}}],
    "outputs": ["y"]})");
  const graph::ExpandedGraph wide = widenToFloat64(g);
  CHECK(wide.tensors[0].type.dtype == "float64");
  CHECK(g.tensors[0].type.dtype == "float32");
  const TensorBuffers inputs{{"x", floats({1, 2}, {1.0f, 1e-8f})},
                             {"w", floats({2, 1}, {1.0f, 1.0f})}};
  CpuBackend backend(1);
  const CheckReference r = unshardedReference(backend, g, inputs);
  REQUIRE(r.reference.at("y").dtype() == DType::Float64);
  REQUIRE(r.baseline.at("y").dtype() == DType::Float32);
  const double exact = 1.0 + static_cast<double>(1e-8f);
  CHECK(r.reference.at("y").elements<double>()[0] == exact);
  CHECK(r.baseline.at("y").elements<float>()[0] == 1.0f);
  const std::vector<OutputCheck> checks = compareOutputs(g, r.baseline, r);
  REQUIRE(checks.size() == 1);
  CHECK(checks[0].error == checks[0].baselineError);
  CHECK(checks[0].baselineError == Approx((exact - 1.0) / exact));
  CHECK(checks[0].bound == kFloorUnits * std::ldexp(1.0, -24));
  CHECK(checks[0].ok);
}

TEST_CASE("compareOutputs: bounds follow the unsharded error, 16-bit chains, NaN, integers",
          "[executor][check]") {
  const graph::ExpandedGraph g = expandText(kMatmulAddRelu);
  const TensorBuffers exact{{"y", floats({2, 2}, {1, 2, 3, 4})}};
  Buffer wide = Buffer::host(DType::Float64, std::vector<std::int64_t>{2, 2});
  std::vector<double> w{1, 2, 3, 4};
  std::copy(w.begin(), w.end(), wide.elements<double>().begin());
  // A baseline that is off by 1e-5 (relative to max 4) allows 16x that.
  CheckReference r{{{"y", wide}}, {{"y", floats({2, 2}, {1, 2, 3, 4.00004f})}}};
  const TensorBuffers close{{"y", floats({2, 2}, {1, 2, 3.0006f, 4})}};
  const TensorBuffers far{{"y", floats({2, 2}, {1, 2, 3.0007f, 4})}};
  std::vector<OutputCheck> c = compareOutputs(g, close, r);
  REQUIRE(c.size() == 1);
  CHECK(c[0].baselineError == Approx(1e-5).epsilon(1e-2));
  CHECK(c[0].bound == Approx(kBaselineMultiple * 1e-5).epsilon(1e-2));
  CHECK(c[0].error == Approx(1.5e-4).epsilon(1e-2));
  CHECK(c[0].ok);
  CHECK_FALSE(compareOutputs(g, far, r)[0].ok);
  // An exact baseline leaves the floor: 8 units of float32's rounding.
  r.baseline = exact;
  c = compareOutputs(g, close, r);
  CHECK(c[0].bound == kFloorUnits * std::ldexp(1.0, -24));
  CHECK_FALSE(c[0].ok);
  CHECK(compareOutputs(g, exact, r)[0].ok);
  CHECK_THAT(describeCheck(c[0]), Contains("max error 0.00015, unsharded 0, bound 4.8e-07"));
  const TensorBuffers nan{{"y", floats({2, 2}, {1, 2, 3, std::nanf("")})}};
  CHECK_FALSE(compareOutputs(g, nan, r)[0].ok);
  r.baseline = nan; // a NaN baseline error allows no more than the floor
  CHECK(compareOutputs(g, exact, r)[0].bound == kFloorUnits * std::ldexp(1.0, -24));

  // A float32 output computed through a bfloat16 tensor has bfloat16's floor.
  const graph::ExpandedGraph down = expandText(R"({"tapestry": "graph/v1", "name": "c",
    "tensors": {"x": {"dtype": "float32", "shape": [4]}},
    "operations": [
      {"name": "down", "kernel": "cast", "params": {"dtype": "bfloat16"}, "inputs": {"input": "x"}, "outputs": {"result": "b"}},
      {"name": "up", "kernel": "cast", "params": {"dtype": "float32"}, "inputs": {"input": "b"}, "outputs": {"result": "y"}}],
    "outputs": ["y"]})");
  const TensorBuffers four{{"y", floats({4}, {1, 2, 3, 4})}};
  const CheckReference same{four, four};
  const std::vector<OutputCheck> bf = compareOutputs(down, four, same);
  CHECK(bf[0].precision == DType::BFloat16);
  CHECK(bf[0].bound == kFloorUnits * std::ldexp(1.0, -8));

  // Integer outputs equal the unsharded ones exactly.
  const graph::ExpandedGraph ints = expandText(R"({"tapestry": "graph/v1", "name": "i",
    "tensors": {"a": {"dtype": "int32", "shape": [3]}},
    "operations": [{"name": "n", "kernel": "neg", "inputs": {"input": "a"}, "outputs": {"result": "y"}}],
    "outputs": ["y"]})");
  auto int3 = [](std::vector<std::int32_t> v) {
    Buffer b = Buffer::host(DType::Int32, std::vector<std::int64_t>{3});
    std::copy(v.begin(), v.end(), b.elements<std::int32_t>().begin());
    return b;
  };
  const CheckReference ir{{{"y", int3({1, 2, 3})}}, {{"y", int3({1, 2, 3})}}};
  CHECK(compareOutputs(ints, {{"y", int3({1, 2, 3})}}, ir)[0].ok);
  const OutputCheck off = compareOutputs(ints, {{"y", int3({1, 2, 4})}}, ir)[0];
  CHECK_FALSE(off.ok);
  CHECK(off.bound == 0);
}

TEST_CASE("bool tensors stay bool in the reference, and bool outputs must be exact",
          "[executor][check][bool]") {
  // m = (x != 0) through cast, y = where(m, x, fill): a bool output and a float one.
  const graph::ExpandedGraph g = expandText(R"({"tapestry": "graph/v1", "name": "b",
    "tensors": {"x": {"dtype": "float32", "shape": [6]}, "mask": {"dtype": "bool", "shape": [6]},
                "fill": {"dtype": "float32", "shape": [1]}},
    "operations": [
      {"name": "nz", "kernel": "cast", "params": {"dtype": "bool"}, "inputs": {"input": "x"}, "outputs": {"result": "m"}},
      {"name": "w", "kernel": "where", "inputs": {"condition": "mask", "X": "x", "Y": "fill"}, "outputs": {"result": "y"}}],
    "outputs": ["m", "y"]})");
  const graph::ExpandedGraph wide = widenToFloat64(g);
  CHECK(wide.tensors[*wide.tensorIndex("mask")].type.dtype == "bool");
  CHECK(wide.tensors[*wide.tensorIndex("m")].type.dtype == "bool");
  CHECK(wide.tensors[*wide.tensorIndex("y")].type.dtype == "float64");
  TensorBuffers inputs{{"x", floats({6}, {0, 1.5f, -2, 0, 3, std::nanf("")})},
                       {"fill", floats({1}, {-9})}};
  Buffer mask = Buffer::host(DType::Bool, std::vector<std::int64_t>{6});
  for (std::size_t i = 0; i < 6; ++i) {
    mask.elements<Bool>()[i] = Bool{static_cast<std::uint8_t>(i % 2)};
  }
  inputs.emplace("mask", mask);
  CpuBackend backend(1);
  const CheckReference r = unshardedReference(backend, g, inputs);
  REQUIRE(r.reference.at("m").dtype() == DType::Bool);
  REQUIRE(r.baseline.at("m").dtype() == DType::Bool);
  std::vector<int> m;
  for (Bool b : r.reference.at("m").elements<Bool>()) {
    m.push_back(b.bits);
  }
  CHECK(m == std::vector<int>{0, 1, 1, 0, 1, 1}); // NaN is nonzero
  CHECK(r.reference.at("y").elements<double>()[1] == 1.5);
  CHECK(r.reference.at("y").elements<double>()[2] == -9);
  std::vector<OutputCheck> checks = compareOutputs(g, r.baseline, r);
  REQUIRE(checks.size() == 2);
  CHECK(checks[0].tensor == "m");
  CHECK(checks[0].dtype == DType::Bool);
  CHECK(checks[0].bound == 0);
  CHECK(checks[0].error == 0);
  CHECK(checks[0].ok);
  // y reads x's NaN only where the mask is true (element 5): NaN never passes.
  CHECK_FALSE(checks[1].ok);
  // One wrong bool in a sharded result is a mismatch.
  TensorBuffers wrong = r.baseline;
  Buffer flipped = Buffer::host(DType::Bool, std::vector<std::int64_t>{6});
  std::copy(r.baseline.at("m").elements<Bool>().begin(), r.baseline.at("m").elements<Bool>().end(),
            flipped.elements<Bool>().begin());
  flipped.elements<Bool>()[3] = Bool{1};
  wrong.erase("m");
  wrong.emplace("m", flipped);
  const OutputCheck bad = compareOutputs(g, wrong, r)[0];
  CHECK_FALSE(bad.ok);
  CHECK(bad.error == 1);
  CHECK(bad.bound == 0);
}

// A CPU backend with one deliberate bug, to show the check catches real ones.
// OffByOne: every shard of operation `op` but its first reads its input port
// 0 one step too far along the leading dim (row r gets row r + 1; the last row
// is repeated). DropCombine: the first partial of a split reduction is never
// added (a missing reduction step).
class FaultyBackend final : public Backend {
public:
  enum class Fault { OffByOne, DropCombine };
  FaultyBackend(int devices, Fault fault, std::string op = "")
      : cpu_(devices), fault_(fault), op_(std::move(op)) {}
  std::string name() const override { return "cpu"; }
  int deviceCount() const override { return cpu_.deviceCount(); }
  Buffer allocate(DType dtype, const ZRange& region, int device) override {
    return cpu_.allocate(dtype, region, device);
  }
  void copyRegion(const TensorView& src, const TensorView& dst, const ZRange& region) override {
    cpu_.copyRegion(src, dst, region);
  }
  void combine(Combine kind, const TensorView& dst, const TensorView& src,
               const ZRange& region) override {
    if (fault_ == Fault::DropCombine && !dropped_.exchange(true)) {
      return;
    }
    cpu_.combine(kind, dst, src, region);
  }
  void fillIdentity(Combine kind, const TensorView& dst) override { cpu_.fillIdentity(kind, dst); }
  bool hasKernel(std::string_view kernel) const override { return cpu_.hasKernel(kernel); }
  std::vector<std::string> kernelNames() const override { return cpu_.kernelNames(); }
  void synchronize() override {}
  int shifted() const { return shifted_; }

protected:
  void launch(const KernelCall& call) override {
    const TensorView& in = call.inputs[0][0];
    if (fault_ != Fault::OffByOne || call.op.name != op_ ||
        call.index.start() == call.op.application.index.start() || in.rank() == 0 ||
        in.region.extent(0) < 2) {
      cpu_.runKernel(call.op, call.index, call.inputs, call.outputs, call.device);
      return;
    }
    ++shifted_;
    Buffer copy = Buffer::host(in.dtype, in.region);
    cpu_.copyRegion(in, copy.view(), in.region);
    const std::int64_t row = copy.byteSize() / in.region.extent(0);
    std::memmove(copy.data(), copy.data() + row, static_cast<std::size_t>(copy.byteSize() - row));
    std::vector<PortViews> inputs(call.inputs.begin(), call.inputs.end());
    inputs[0][0] = copy.view();
    cpu_.runKernel(call.op, call.index, inputs, call.outputs, call.device);
  }

private:
  CpuBackend cpu_;
  Fault fault_;
  std::string op_;
  std::atomic<bool> dropped_{false};
  std::atomic<int> shifted_{0};
};

TEST_CASE("a deliberately broken plan fails the check", "[executor][check][broken]") {
  for (const std::string name : {"mlp.json", "transformer_block.json", "convnet.json"}) {
    INFO("graph " << name);
    const graph::ExpandedGraph g = testGraph(name);
    const TensorBuffers inputs = drawInputs(g, 5);
    CpuBackend cpu(1);
    const CheckReference reference = unshardedReference(cpu, g, inputs);
    auto failing = [&](const Execution& run) {
      for (const OutputCheck& c : compareOutputs(g, run.outputs, reference)) {
        INFO("output " << c.tensor << ": " << describeCheck(c));
        if (!c.ok) {
          CHECK(c.error > 10 * c.bound); // not a near miss
          return true;
        }
      }
      return false;
    };

    // An off-by-one region in the second shard of the first operation.
    const plan::ShardPlan dp = plan::buildPlan(g, 2, dataParallel(g, 2, 2));
    FaultyBackend shifted(2, FaultyBackend::Fault::OffByOne, g.operations[0].name);
    const Execution a = execute(g, dp, shifted, inputs);
    REQUIRE(shifted.shifted() > 0);
    CHECK(failing(a));

    // A missing reduction step (the mlp's linear layers keep k whole).
    const plan::ShardPlan rs = plan::buildPlan(g, 3, reductionSplit(g, 3));
    if (name != "mlp.json") {
      FaultyBackend dropping(3, FaultyBackend::Fault::DropCombine);
      const Execution b = execute(g, rs, dropping, inputs);
      REQUIRE(b.stats.reductionSteps > 0);
      CHECK(failing(b));
    }

    // The same plans on the real backend pass.
    CpuBackend good(3);
    for (const plan::ShardPlan* p : {&dp, &rs}) {
      for (const OutputCheck& c :
           compareOutputs(g, execute(g, *p, good, inputs).outputs, reference)) {
        INFO("output " << c.tensor << ": " << describeCheck(c));
        CHECK(c.ok);
      }
    }
  }
}

TEST_CASE("bool graphs run sharded and pass the check, and a wrong bool shard fails it",
          "[executor][check][bool]") {
  // The nonzero pattern of an int tensor (cast to bool), a mask picking x or a
  // fill (where), and the mask transposed: bool through compute and copies.
  const graph::ExpandedGraph g = expandText(R"({"tapestry": "graph/v1", "name": "masks",
    "tensors": {"n": {"dtype": "int32", "shape": [8, 6]}, "mask": {"dtype": "bool", "shape": [8, 1]},
                "x": {"dtype": "float32", "shape": [8, 6]}, "fill": {"dtype": "float32", "shape": [1]}},
    "operations": [
      {"name": "nz", "kernel": "cast", "params": {"dtype": "bool"}, "inputs": {"input": "n"}, "outputs": {"result": "m"}},
      {"name": "w", "kernel": "where", "inputs": {"condition": "m", "X": "x", "Y": "fill"}, "outputs": {"result": "y"}},
      {"name": "w2", "kernel": "where", "inputs": {"condition": "mask", "X": "y", "Y": "x"}, "outputs": {"result": "z"}},
      {"name": "t", "kernel": "transpose", "params": {"perm": [1, 0]}, "inputs": {"input": "m"}, "outputs": {"result": "mt"}}],
    "outputs": ["z", "mt"]})");
  runAndCheck(g, 1, plan::singleDeviceChoice(g));
  runAndCheck(g, 2, dataParallel(g, 2, 2));
  runAndCheck(g, 4, dataParallel(g, 4, 4), 2);
  std::mt19937 rng(17);
  for (int i = 0; i < 4; ++i) {
    runAndCheck(g, 3, randomChoice(g, 3, rng));
  }
  // Shards of nz past the first read n one row off: mt is wrong, and exactly
  // checked (bound 0).
  const TensorBuffers inputs = drawInputs(g, 5);
  CpuBackend cpu(1);
  const CheckReference reference = unshardedReference(cpu, g, inputs);
  FaultyBackend shifted(2, FaultyBackend::Fault::OffByOne, "nz");
  const Execution bad = execute(g, plan::buildPlan(g, 2, dataParallel(g, 2, 2)), shifted, inputs);
  REQUIRE(shifted.shifted() > 0);
  const std::vector<OutputCheck> checks = compareOutputs(g, bad.outputs, reference);
  REQUIRE(checks.size() == 2);
  CHECK(checks[1].tensor == "mt");
  CHECK(checks[1].dtype == DType::Bool);
  CHECK(checks[1].bound == 0);
  CHECK(checks[1].error > 0);
  CHECK_FALSE(checks[1].ok);
}

// ---------------------------------------------------------------- commands

TEST_CASE("run: plan files, graphs, --check, outputs, JSON, NaN inputs", "[executor][command]") {
  const std::filesystem::path dir = tempDir("run");
  const graph::ExpandedGraph g = expandText(kMatmulAddRelu);
  const std::string planPath = writePlanFile(
      g, 3, PlanChoice{{{{2, 1, 3}, {0, 1, 2, 1, 2, 0}}, {{1, 2}, {2, 0}}, {{2, 1}, {1, 2}}}}, dir,
      "plan.json");

  RunConfig config;
  config.planPath = planPath;
  config.check = true;
  config.outputsDir = (dir / "out").string();
  std::ostringstream out;
  std::ostringstream err;
  CHECK(runCommand(config, out, err) == 0);
  CHECK(out.str().empty());
  CHECK_THAT(err.str(), Contains("10 shards") && Contains("on 3 devices") &&
                            Contains("check y (float32): max error") && Contains("ok"));
  const NpyArray y = readNpy((dir / "out" / "y.npy").string());
  CHECK(y.buffer.region() == ZRange::fromShape(ZPoint{2, 2}));

  // The same inputs from files give the numbers worked out by hand.
  std::filesystem::create_directories(dir / "in");
  writeNpy((dir / "in" / "x.npy").string(), floats({2, 3}, {1, 2, 3, 4, 5, 6}).view());
  writeNpy((dir / "in" / "w.npy").string(), floats({3, 2}, {1, 0, 0, 1, 1, 1}).view());
  writeNpy((dir / "in" / "c.npy").string(), floats({2}, {-5, 0}).view());
  config.inputsDir = (dir / "in").string();
  config.json = true;
  out.str("");
  err.str("");
  CHECK(runCommand(config, out, err) == 0);
  const Json doc = Json::parse(out.str());
  CHECK(doc["status"] == "ok");
  CHECK(doc["check"]["ok"] == true);
  CHECK(doc["check"]["outputs"][0]["precision"] == "float32");
  CHECK(doc["check"]["outputs"][0]["max_error"].is_number());
  CHECK(doc["check"]["outputs"][0]["unsharded_error"].is_number());
  CHECK(doc["check"]["outputs"][0]["bound"].get<double>() >= kFloorUnits * std::ldexp(1.0, -24));
  CHECK(doc["shards"] == 10);
  CHECK(doc["memory"]["peak_bytes_per_device"].size() == 3);
  CHECK(doc["memory"]["predicted_peak_bytes_per_device"].size() == 3);
  CHECK(doc["memory"]["input_bytes"] == 4 * (6 + 6 + 2));
  CHECK(values(readNpy((dir / "out" / "y.npy").string()).buffer) ==
        std::vector<float>{0, 5, 5, 11});

  // NaN never passes: exit 3, with the outputs written and the reason said.
  writeNpy((dir / "in" / "c.npy").string(), floats({2}, {std::nanf(""), 0}).view());
  config.json = false;
  out.str("");
  err.str("");
  CHECK(runCommand(config, out, err) == 3);
  CHECK_THAT(err.str(), Contains("MISMATCH") &&
                            Contains("error: run --check: output y differs from the unsharded "
                                     "graph: max error nan"));

  // A wrong input shape is an input error naming the file.
  writeNpy((dir / "in" / "c.npy").string(), floats({3}, {1, 2, 3}).view());
  CHECK_THROWS_WITH(runCommand(config, out, err), Contains("c.npy has shape (3,)"));

  // A graph runs as the single-device plan on `local`.
  const std::string graphPath = writeText(dir, "g.json", kMatmulAddRelu);
  const plan::LoadedPlan loaded = loadRunnable(graphPath, lib());
  CHECK(loaded.target.name == "local");
  CHECK(loaded.plan.shardCount() == 3);
  RunConfig graphRun;
  graphRun.planPath = graphPath;
  graphRun.check = true;
  graphRun.quiet = true;
  out.str("");
  err.str("");
  CHECK(runCommand(graphRun, out, err) == 0);
  CHECK(err.str().empty());

  // Other documents are input errors at the tag.
  const std::string other = writeText(dir, "t.json", R"({"tapestry": "front/v1"})");
  CHECK_THROWS_WITH(loadRunnable(other, lib()), Contains("unknown format \"front/v1\""));
  std::filesystem::remove_all(dir);
}

TEST_CASE("the cuda backend is unavailable without a GPU, unknown backends are usage errors",
          "[executor][command]") {
  CHECK_NOTHROW(requireBackend("cpu"));
#ifdef TAPESTRY_HAVE_CUDA
  const bool gpu = cuda::probe().available;
#else
  const bool gpu = false;
#endif
  if (gpu) {
    CHECK_NOTHROW(requireBackend("cuda")); // a GPU machine (tests labelled cuda cover it)
  } else {
    try {
      requireBackend("cuda");
      FAIL("expected BackendUnavailable");
    } catch (const BackendUnavailable& e) {
      CHECK(e.exitCode() == ExitCode::BackendUnavailable);
      CHECK_THAT(e.message(), Contains("without the CUDA backend") || Contains("CUDA GPU"));
    }
  }
  CHECK_THROWS_AS(requireBackend("tpu"), UsageError);
}

TEST_CASE("bench times the plan and the single-device baseline", "[executor][command]") {
  const std::filesystem::path dir = tempDir("bench");
  const graph::ExpandedGraph g = expandText(kMatmulAddRelu);
  BenchConfig config;
  config.planPath = writePlanFile(
      g, 2, PlanChoice{{{{2, 1, 2}, {0, 1, 1, 0}}, {{2, 1}, {0, 1}}, {{2, 1}, {0, 1}}}}, dir,
      "plan.json");
  config.repeat = 3;
  config.maxRepeat = 3; // exactly 3 runs
  config.warmup = 1;
  config.json = true;
  std::ostringstream out;
  std::ostringstream err;
  CHECK(benchCommand(config, out, err) == 0);
  const Json doc = Json::parse(out.str());
  for (const char* key :
       {"status", "plan_file", "graph", "backend", "target", "repeat", "max_repeat", "max_seconds",
        "warmup", "flops", "plan", "single_device", "speedup", "repacked_bytes", "operations",
        "transfers", "reductions", "totals"}) {
    INFO(key);
    CHECK(doc.contains(key));
  }
  // w (24 B, not constant) is read through matmul's packed port by each of mm's
  // 4 shards, a half of it each (split 2 along k), for both halves of m.
  CHECK(doc["repacked_bytes"].get<std::int64_t>() == 48);
  for (const char* part : {"plan", "single_device"}) {
    for (const char* key : {"devices", "workers", "measured_s", "predicted_s",
                            "measured_over_predicted", "flops_per_s", "times_s", "min_s",
                            "median_s", "max_s", "stable", "median_moved", "median_uncertainty"}) {
      INFO(part << "." << key);
      CHECK(doc[part].contains(key));
    }
    CHECK(doc[part]["times_s"].size() == 3);
    CHECK(doc[part]["min_s"].get<double>() <= doc[part]["median_s"].get<double>());
    CHECK(doc[part]["median_s"].get<double>() <= doc[part]["max_s"].get<double>());
    CHECK(doc[part]["median_s"] == doc[part]["measured_s"]);
  }
  CHECK(doc["max_repeat"] == 3);
  CHECK(doc["plan"]["devices"] == 2);
  CHECK(doc["single_device"]["devices"] == 1);
  CHECK(doc["flops"] == 2 * 2 * 2 * 3 + 4 + 4);

  // The breakdown: every operation once, transfers and reductions grouped,
  // each list worst first, and the totals.
  REQUIRE(doc["operations"].size() == 3);
  std::vector<std::string> names;
  for (const Json& op : doc["operations"]) {
    names.push_back(op["name"].get<std::string>());
    CHECK(op["shards"].get<int>() >= 2);
    CHECK(op["measured_s"].get<double>() >= 0);
    CHECK(op["predicted_s"].get<double>() > 0);
    CHECK(op["ratio"].get<double>() ==
          Approx(op["measured_s"].get<double>() / op["predicted_s"].get<double>()));
  }
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"act", "bias", "mm"});
  REQUIRE(doc["reductions"].size() == 1); // the k-split matmul's partials of h
  CHECK(doc["reductions"][0]["tensor"] == "h");
  CHECK(doc["reductions"][0]["operation"] == "mm");
  CHECK(doc["reductions"][0]["combine"] == "sum");
  CHECK(doc["reductions"][0]["regions"] == 2);
  for (const char* kind : {"operations", "transfers", "reductions"}) {
    INFO(kind);
    double last = std::numeric_limits<double>::infinity();
    double predicted = 0;
    for (const Json& row : doc[kind]) {
      const double off =
          std::fabs(row["measured_s"].get<double>() - row["predicted_s"].get<double>());
      CHECK(off <= last);
      last = off;
      predicted += row["predicted_s"].get<double>();
    }
    CHECK(doc["totals"][kind]["predicted_s"].get<double>() == Approx(predicted));
    CHECK(doc["totals"][kind]["measured_s"].get<double>() >= 0);
  }
  CHECK(doc["totals"]["operations"]["count"] == 4 + 2 + 2);
  bool partials = false;
  for (const Json& row : doc["transfers"]) {
    partials = partials || row["partials"].get<bool>();
    CHECK((row["from"] == "host" || row["from"].is_number()));
  }
  CHECK(partials); // the partials of h cross devices

  config.json = false;
  config.verbose = true; // every row: which rows are the worst 10 depends on the machine's load
  out.str("");
  CHECK(benchCommand(config, out, err) == 0);
  CHECK_THAT(out.str(), Contains("single device") && Contains("speedup") && Contains("\nspread ") &&
                            Contains("where the plan's time goes") &&
                            Contains("\nop mm (matmul, 4 shards) ") &&
                            Contains("\nreduction h of mm (sum, 2 regions) ") &&
                            Contains("\ntotal operations (8 shards) ") &&
                            Contains("\nnote: 48B of weights come from graph inputs not marked "
                                     "constant, so the CPU products pack them anew on every run"));

  // --max-seconds 0: no run past --repeat; --max-repeat below --repeat, or a
  // negative budget, are usage errors.
  config.json = true;
  config.repeat = 2;
  config.maxRepeat = 0;
  config.maxSeconds = 0;
  out.str("");
  CHECK(benchCommand(config, out, err) == 0);
  CHECK(Json::parse(out.str())["plan"]["times_s"].size() == 2);
  CHECK(Json::parse(out.str())["max_repeat"] == 50);
  config.repeat = 3;
  config.maxRepeat = 2;
  CHECK_THROWS_AS(benchCommand(config, out, err), UsageError);
  config.maxRepeat = 3;
  config.maxSeconds = -1;
  CHECK_THROWS_AS(benchCommand(config, out, err), UsageError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("bench's breakdown sums the simulation's and the run's task times", "[executor][bench]") {
  const graph::ExpandedGraph g = expandText(kMatmulAddRelu);
  const plan::ShardPlan p = plan::buildPlan(
      g, 3, PlanChoice{{{{2, 1, 3}, {0, 1, 2, 1, 2, 0}}, {{1, 2}, {2, 0}}, {{2, 1}, {1, 2}}}});
  const cost::Simulation sim = cost::simulate(g, roomyCpuTarget(3), p);
  const PlanBreakdown breakdown(g, p, sim);
  const std::vector<BenchRow>& rows = breakdown.rows();
  REQUIRE(rows.size() >= g.operations.size());
  double predictedShards = 0;
  for (const std::vector<cost::Interval>& op : sim.shards) {
    for (const cost::Interval& i : op) {
      predictedShards += i.end - i.start;
    }
  }
  double predictedTransfers = 0;
  for (const cost::Interval& i : sim.transfers) {
    predictedTransfers += i.end - i.start;
  }
  std::size_t transfers = 0;
  std::size_t reductions = 0;
  double sums[3] = {0, 0, 0};
  for (std::size_t r = 0; r < rows.size(); ++r) {
    sums[static_cast<std::size_t>(rows[r].kind)] += rows[r].predicted;
    if (r < g.operations.size()) {
      CHECK(rows[r].kind == BenchRow::Kind::Operation); // operations first, in graph order
      CHECK(rows[r].name == g.operations[r].name);
      CHECK(rows[r].count == p.ops[r].shards.size());
    }
    transfers += rows[r].kind == BenchRow::Kind::Transfers ? rows[r].count : 0;
    reductions += rows[r].kind == BenchRow::Kind::Reduction ? rows[r].count : 0;
  }
  CHECK(sums[0] == Approx(predictedShards));
  CHECK(sums[1] == Approx(predictedTransfers));
  CHECK(transfers == p.transfers.size());
  CHECK(reductions == p.reductions.size());
  REQUIRE(p.reductions.size() == 2); // both trees of h: one row
  CHECK(rows.back().kind == BenchRow::Kind::Reduction);
  CHECK(rows.back().count == 2);
  CHECK(rows.back().steps == 4);
  CHECK(rows.back().predicted == Approx((sim.reductions[0].end - sim.reductions[0].start) +
                                        (sim.reductions[1].end - sim.reductions[1].start)));

  CpuBackend backend(3);
  const Execution run = execute(g, p, backend, drawInputs(g, 2), ExecuteOptions{0, 1}, &sim);
  const std::vector<double> measured = breakdown.measure(run.stats);
  REQUIRE(measured.size() == rows.size());
  double shards = 0;
  for (const std::vector<TaskTime>& op : run.stats.shardTimes) {
    for (const TaskTime& t : op) {
      shards += t.seconds();
    }
  }
  double measuredShards = 0;
  for (std::size_t r = 0; r < g.operations.size(); ++r) {
    measuredShards += measured[r];
  }
  CHECK(measuredShards == Approx(shards));
  CHECK(measured.back() ==
        Approx(run.stats.reductionTimes[0].seconds() + run.stats.reductionTimes[1].seconds()));
}

namespace {

// Feeds `times` to bench's stopping rule one run at a time, each run taking its
// own time against the budget; the runs it takes.
std::size_t runsTaken(const std::vector<double>& times, const RepeatLimits& limits) {
  std::vector<double> taken;
  double elapsed = 0;
  for (double t : times) {
    taken.push_back(t);
    elapsed += t;
    if (!repeatAgain(taken, elapsed, limits)) {
      break;
    }
  }
  return taken.size();
}

std::vector<double> firstRuns(const std::vector<double>& times, std::size_t n) {
  return {times.begin(), times.begin() + static_cast<std::ptrdiff_t>(n)};
}

} // namespace

TEST_CASE("bench repeats until the median is stable, and says when it is not", "[bench]") {
  const RepeatLimits limits{5, 50, 1e9};
  std::vector<double> steady;  // within +-0.5%
  std::vector<double> swing;   // every other run twice as long
  std::vector<double> drift;   // 3% slower each run
  std::vector<double> outlier; // one run in eight twice as long
  for (int i = 0; i < 100; ++i) {
    steady.push_back(1e-3 * (1 + 0.005 * std::sin(i)));
    swing.push_back(i % 2 == 0 ? 1e-3 : 2e-3);
    drift.push_back(1e-3 * std::pow(1.03, i));
    outlier.push_back(i % 8 == 3 ? 2e-3 : 1e-3 * (1 + 0.001 * std::sin(i)));
  }

  // A steady machine: the fewest runs suffice.
  CHECK(runsTaken(steady, limits) == 5);
  const MedianStability s = medianStability(firstRuns(steady, 5));
  CHECK(s.stable);
  CHECK(s.lastRuns == 2);
  CHECK(s.moved < 0.02);
  CHECK(s.uncertainty < 0.02);

  // A 2x swing between runs is never stable: not at the most runs, nor at any
  // count on the way (a median alone settles on 1 ms at 7 runs and hides it).
  CHECK(runsTaken(swing, limits) == 50);
  for (std::size_t n = 1; n <= 50; ++n) {
    INFO(n << " runs");
    CHECK_FALSE(medianStability(firstRuns(swing, n)).stable);
  }
  CHECK(medianStability(firstRuns(swing, 50)).uncertainty > 0.05);

  // A drift moves the median.
  CHECK(runsTaken(drift, limits) == 50);
  const MedianStability d = medianStability(firstRuns(drift, 50));
  CHECK_FALSE(d.stable);
  CHECK(d.moved > 0.02);

  // One slow run among many does not move the median (the max shows it).
  const std::size_t n = runsTaken(outlier, RepeatLimits{8, 50, 1e9});
  CHECK(n == 8);
  CHECK(medianStability(firstRuns(outlier, n)).stable);
  CHECK(medianStability(firstRuns(outlier, n)).median == Approx(1e-3).epsilon(0.01));

  // The numbers: 1, 2, 3, 4 -> median 2.5, before the last run 2, middle half
  // 1..4 (never narrower than the quartiles).
  const MedianStability m = medianStability({1, 2, 3, 4});
  CHECK(m.median == 2.5);
  CHECK(m.lastRuns == 1);
  CHECK(m.moved == Approx(0.5 / 2.5));
  CHECK(m.uncertainty == Approx(0.93 * 3 / 2 / 2.5));

  // One run cannot tell; --repeat N --max-repeat N runs exactly N.
  CHECK_FALSE(medianStability({1e-3}).stable);
  CHECK_FALSE(medianStability({}).stable);
  CHECK(runsTaken(steady, RepeatLimits{1, 1, 1e9}) == 1);
  CHECK(runsTaken(swing, RepeatLimits{4, 4, 1e9}) == 4);
  CHECK(runsTaken(steady, RepeatLimits{4, 4, 1e9}) == 4);

  // The budget stops an unstable series once the fewest runs are done: after
  // 1 + 2 + 1 ms the 3.5 ms budget is spent.
  CHECK(runsTaken(swing, RepeatLimits{2, 50, 3.5e-3}) == 3);
  CHECK(runsTaken(swing, RepeatLimits{6, 50, 3.5e-3}) == 6); // never fewer than --repeat

  // The defaults: --max-repeat 0 is the larger of --repeat and 50.
  BenchConfig config;
  config.repeat = 10;
  CHECK(repeatLimits(config).most == 50);
  config.repeat = 80;
  CHECK(repeatLimits(config).most == 80);
  config.maxRepeat = 90;
  CHECK(repeatLimits(config).most == 90);
  CHECK(repeatLimits(config).fewest == 80);
  CHECK(repeatLimits(config).seconds == 10);
}

TEST_CASE("run refuses a plan that cannot fit in host memory, before allocating",
          "[executor][limits]") {
  const metakernel::MetakernelLibrary library = metakernel::MetakernelLibrary::standard();
  const plan::LoadedPlan loaded =
      plan::loadPlan(std::string(TAPESTRY_TESTDATA_DIR) + "/plans/mlp_2dev.json", library);
  // x [64, 784], w1 [784, 512], b1 [512], w2 [512, 256], b2 [256], w3 [256, 10], b3 [10]
  const std::int64_t inputs = 4 * (64 * 784 + 784 * 512 + 512 + 512 * 256 + 256 + 256 * 10 + 10);
  backend::HostMemoryNeed need = backend::hostMemoryNeed(loaded, true, false);
  CHECK(need.inputs == inputs);
  CHECK(need.outputs == 4 * 64 * 10);
  CHECK(need.reference == 0);
  std::int64_t peaks = 0;
  for (std::int64_t p : loaded.simulation.peakPerDevice) {
    peaks += p;
  }
  CHECK(need.devices == peaks);
  CHECK(backend::hostMemoryNeed(loaded, false, false).devices == 0);
  const backend::HostMemoryNeed checked = backend::hostMemoryNeed(loaded, true, true);
  CHECK(checked.reference > inputs); // every tensor, inputs included

  CHECK_NOTHROW(backend::refuseIfTooBig("p.json", need, std::nullopt));
  CHECK_NOTHROW(backend::refuseIfTooBig("p.json", need, need.total()));
  try {
    backend::refuseIfTooBig("p.json", need, need.total() - 1);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.exitCode() == ExitCode::InvalidInput);
    CHECK_THAT(e.message(), Catch::Matchers::StartsWith("the run needs "));
    CHECK_THAT(e.message(), Catch::Matchers::Contains("(inputs 2.235MiB, device peaks "));
    CHECK_THAT(e.message(), Catch::Matchers::EndsWith("is available; nothing was allocated"));
  }
  // The override tests and users can set.
  ::setenv("TAPESTRY_AVAILABLE_MEMORY", "1MiB", 1);
  CHECK(backend::availableMemory() == std::optional<std::int64_t>(1 << 20));
  ::setenv("TAPESTRY_AVAILABLE_MEMORY", "lots", 1);
  CHECK_THROWS_AS(backend::availableMemory(), Error);
  ::unsetenv("TAPESTRY_AVAILABLE_MEMORY");
  const std::optional<std::int64_t> real = backend::availableMemory();
  REQUIRE(real); // Linux always has /proc/meminfo
  CHECK(*real > 0);
}

TEST_CASE("calibrate's second pass of a table: each point keeps its faster time", "[calibrate]") {
  using tapestry::backend::keepFaster;
  cost::ProfileTable first;
  first.alone = {{1024, 2e-6}, {8192, 5e-6}, {65536, 30e-6}};
  first.all = {{1024, 2e-6}, {8192, 10e-6}, {65536, 60e-6}}; // a stretch of load: 2x
  cost::ProfileTable again = first;
  again.alone = {{1024, 3e-6}, {8192, 4e-6}, {65536, 31e-6}};
  again.all = {{1024, 2.5e-6}, {8192, 5.5e-6}, {65536, 32e-6}};
  const std::vector<double> ratios = keepFaster(first, again);
  // Each point's slower time over its faster, alone then all.
  REQUIRE(ratios.size() == 6);
  CHECK(ratios[0] == Approx(1.5));
  CHECK(ratios[1] == Approx(1.25));
  CHECK(ratios[2] == Approx(31.0 / 30));
  CHECK(ratios[3] == Approx(1.25));
  CHECK(ratios[4] == Approx(10 / 5.5));
  CHECK(ratios[5] == Approx(60.0 / 32));
  // Their median and largest, less 1, say how busy the machine was.
  cost::Profile profile;
  tapestry::backend::passDifference(ratios, profile);
  CHECK(profile.passDifference == Approx((1.25 + 1.5) / 2 - 1));
  CHECK(profile.passDifferenceMax == Approx(60.0 / 32 - 1));
  tapestry::backend::passDifference({}, profile);
  CHECK(profile.passDifference == 0);
  CHECK(profile.passDifferenceMax == 0);
  CHECK(first.alone[0].seconds == 2e-6);
  CHECK(first.alone[1].seconds == 4e-6);
  CHECK(first.alone[2].seconds == 30e-6);
  CHECK(first.all[0].seconds == 2e-6);
  CHECK(first.all[1].seconds == 5.5e-6);
  CHECK(first.all[2].seconds == 32e-6);
  CHECK(first.alone[1].size == 8192);
  // Another table's points are a bug, not a measurement.
  cost::ProfileTable shorter = again;
  shorter.all.pop_back();
  CHECK_THROWS_WITH(keepFaster(first, shorter),
                    Contains("calibrate: a table measured again has 2 points, not 3"));
  cost::ProfileTable moved = again;
  moved.alone[1].size = 4096;
  CHECK_THROWS_WITH(keepFaster(first, moved),
                    Contains("calibrate: a table measured again at other sizes"));
}

TEST_CASE("calibrate's spread: a burst in one pass does not decide it", "[calibrate][spread]") {
  using tapestry::backend::SpeedupSample;
  using tapestry::backend::speedupSpread;
  CHECK(speedupSpread({}) == 0.0);
  // Predicted 2x, measured 2x: no spread.
  CHECK(speedupSpread({{2.0, {2.0, 2.0, 2.0}}}) == Approx(0.0).margin(1e-12));
  // One pass of three measured 5x slower (a core taken away): its median is
  // the other passes' 1.6x, 25% off the predicted 2x.
  CHECK(speedupSpread({{2.0, {1.6, 0.4, 1.6}}}) == Approx(0.25));
  // Too slow and too fast count alike (|ln|): 1.5 against 1.2 and 1.2 against
  // 1.5 are both 25% off; the median over the samples of 0, 25% and 25%.
  CHECK(speedupSpread({{1.2, {1.5}}, {1.5, {1.2}}, {1.0, {1.0}}}) == Approx(0.25));
  // The median over samples: one wild case among three calm ones.
  const double spread = speedupSpread({{2.0, {2.0}}, {2.0, {2.0}}, {2.0, {2.2}}, {2.0, {0.2}}});
  CHECK(spread == Approx(std::exp(std::log(1.1) / 2) - 1));
  // Samples without a measurement or a prediction are left out.
  CHECK(speedupSpread({{0.0, {1.0}}, {1.0, {}}, {2.0, {2.5}}}) == Approx(0.25));
}

TEST_CASE("calibrate's spread by size: cases grouped by their one-device time",
          "[calibrate][spread]") {
  using tapestry::backend::SpeedupSample;
  using tapestry::backend::spreadByTime;
  // Fewer than two groups of three: no spread by size.
  CHECK(spreadByTime({}).empty());
  CHECK(spreadByTime({{2.0, {2.0}, 1e-5},
                      {2.0, {2.0}, 1e-4},
                      {2.0, {2.0}, 1e-3},
                      {2.0, {2.0}, 1e-2},
                      {2.0, {2.0}, 1e-1}})
            .empty());
  // Small graphs measured 25% off their predicted 2x, large ones 2%: given
  // in no order, grouped by time; unusable samples (no time, no
  // measurement) are left out before grouping.
  const std::vector<tapestry::cost::SpreadPoint> points = spreadByTime({
      {2.0, {2.02}, 8e-3},
      {2.0, {1.6}, 1e-5},
      {2.0, {2.04}, 1e-2},
      {2.0, {1.6}, 2e-5},
      {2.0, {3.0}, 0.0},
      {2.0, {1.6, 2.5, 1.6}, 4e-5},
      {2.0, {}, 1e-4},
      {2.0, {1.96}, 2e-2},
  });
  REQUIRE(points.size() == 2);
  CHECK(points[0].time == Approx(2e-5));
  CHECK(points[0].spread == Approx(0.25));
  CHECK(points[1].time == Approx(std::cbrt(8e-3 * 1e-2 * 2e-2)));
  CHECK(points[1].spread == Approx(0.02)); // the median of 2.02, 2.04 and 1.96 over 2
  // Seven samples: groups of 3 and 4, the last taking the remainder.
  std::vector<SpeedupSample> seven;
  for (int i = 0; i < 7; ++i) {
    seven.push_back({1.0, {1.0 + 0.1 * i}, std::pow(10.0, -6 + i)});
  }
  const auto sevenPoints = spreadByTime(seven);
  REQUIRE(sevenPoints.size() == 2);
  CHECK(sevenPoints[0].time == Approx(1e-5));
  CHECK(sevenPoints[0].spread == Approx(0.1));
  CHECK(sevenPoints[1].time == Approx(std::pow(10.0, -1.5)));
  CHECK(sevenPoints[1].spread == Approx(std::sqrt(1.4 * 1.5) - 1)); // ln 1.4 and ln 1.5's mean
  // Groups of the same time make one point, its spread over all of them (the
  // median of 0% to 50% in steps of 10%: between 20% and 30%, where the first
  // group alone would give 10%).
  std::vector<SpeedupSample> same = seven;
  same.pop_back();
  for (SpeedupSample& s : same) {
    s.single = 1e-3;
  }
  same.push_back({1.0, {1.0}, 1e-1});
  same.push_back({1.0, {1.0}, 1e-1});
  same.push_back({1.0, {1.5}, 1e-1});
  const auto merged = spreadByTime(same);
  REQUIRE(merged.size() == 2);
  CHECK(merged[0].time == Approx(1e-3));
  CHECK(merged[0].spread == Approx(std::sqrt(1.2 * 1.3) - 1));
  CHECK(merged[1].time == Approx(1e-1));
  CHECK(merged[1].spread == Approx(0.0));
}

TEST_CASE("calibrate's spread by family: each family's samples, three at least",
          "[calibrate][spread]") {
  using tapestry::backend::spreadByFamily;
  const auto spreads = spreadByFamily({
      {2.0, {2.0}, 1e-5, "matmul"},
      {2.0, {2.1}, 1e-4, "matmul"},
      {2.0, {1.9}, 1e-3, "matmul"},
      {2.0, {1.0}, 1e-5, "elementwise"},
      {2.0, {1.5}, 1e-4, "elementwise"},
      {2.0, {}, 1e-3, "elementwise"}, // no measurement: two usable, too few
      {1.0, {1.5}, 1e-5, "activation"},
      {1.0, {1.5}, 1e-4, "activation"},
      {1.0, {0.5}, 1e-3, "activation"},
      {1.0, {3.0}, 1e-3, ""}, // no family
  });
  REQUIRE(spreads.size() == 2);
  CHECK(spreads.at("matmul") == Approx(0.05)); // 2.1 against 2.0
  CHECK(spreads.at("activation") == Approx(0.5));
}

TEST_CASE("a pinned worker pool holds each worker to its own CPU and gives the caller its CPUs "
          "back",
          "[executor][workers]") {
  const std::vector<int> before = allowedCpus();
  std::vector<std::vector<int>> seen(2);
  {
    WorkerPool pool(2, true);
    pool.run([&](std::size_t w) { seen[w] = allowedCpus(); });
  }
  CHECK(allowedCpus() == before);
  if (before.size() >= 2) {
    CHECK(seen[0] == std::vector<int>{before[0]});
    CHECK(seen[1] == std::vector<int>{before[1]});
  } else { // one CPU: nothing to spread the workers over, nothing pinned
    CHECK(seen[0] == before);
    CHECK(seen[1] == before);
  }
  // Unpinned, and with more workers than CPUs: every worker keeps the caller's CPUs.
  const std::size_t many = before.size() + 1;
  for (const auto& [workers, pin] : {std::pair<std::size_t, bool>{2, false}, {many, true}}) {
    std::vector<std::vector<int>> cpus(workers);
    {
      WorkerPool pool(workers, pin);
      pool.run([&](std::size_t w) { cpus[w] = allowedCpus(); });
    }
    for (const std::vector<int>& c : cpus) {
      CHECK(c == before);
    }
  }
  CHECK(allowedCpus() == before);
}
