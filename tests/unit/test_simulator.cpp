// Tests for core/cost/simulator: hand-computed schedules on a tiny target
// (exact start/end times, makespan, peak memory, transfer bytes), reduction
// steps, link and device queues, infeasibility, host vs free inputs, dominance,
// and a throughput figure for the search (hidden tag [.bench]).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "core/cost/busiest.hpp"
#include "core/cost/peak_memory.hpp"
#include "core/cost/simulator.hpp"
#include "core/cost/target.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/graph.hpp"
#include "core/graph/loader.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"
#include "core/plan/plan.hpp"
#include "tests/unit/fixtures.hpp"

using namespace tapestry;
using namespace tapestry::testing;
using namespace tapestry::cost;
using plan::OpChoice;
using plan::PlanChoice;

namespace {

// x [8, 4] @ w [4, 6] -> h [8, 6]; relu(h) -> y (the graph output).
graph::ExpandedGraph mmRelu() {
  return expandText(R"({"tapestry": "graph/v1", "name": "mm_relu",
  "tensors": {"x": {"dtype": "float32", "shape": [8, 4]}, "w": {"dtype": "float32", "shape": [4, 6]}},
  "operations": [
    {"name": "mm", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "h"}},
    {"name": "act", "kernel": "relu", "inputs": {"input": "h"}, "outputs": {"result": "y"}}],
  "outputs": ["y"]})");
}

// Figures chosen so every time is a short binary fraction (exact in double):
// 96 FLOP/s, 256 B/s memory, 0.5 s launch; links 48 B/s + 0.5 s; host 32 B/s + 1 s.
Target tiny(int devices, std::int64_t memory = 1 << 20) {
  Target t;
  t.name = "tiny";
  t.devices.count = devices;
  t.devices.kind = DeviceKind::Cpu;
  t.devices.memory = memory;
  t.devices.memoryBandwidth = 256;
  t.devices.flops = {{"float32", 96}};
  t.devices.launchOverhead = 0.5;
  t.links = LinkSpec{48, 0.5};
  t.host = LinkSpec{32, 1};
  return t;
}

PlanChoice choose(std::vector<OpChoice> ops) {
  return PlanChoice{std::move(ops)};
}

Interval iv(double start, double end) {
  return Interval{start, end};
}

} // namespace

// mm shard: 96 points x 2 flops = 192 flops -> 2 s; 256 bytes -> 1 s; + 0.5 = 2.5 s.
// act shard: 24 flops -> 0.25 s; 192 bytes -> 0.75 s; + 0.5 = 1.25 s.
// Host: x part 64 B -> 1 + 2 = 3 s; w 96 B -> 1 + 3 = 4 s, one link per device.
TEST_CASE("aligned row split: host inputs, then compute", "[simulator]") {
  const graph::ExpandedGraph g = mmRelu();
  const plan::ShardPlan p = plan::buildPlan(g, 2, choose({{{2, 1, 1}, {0, 1}}, {{2, 1}, {0, 1}}}));
  const Simulation s = simulate(g, tiny(2), p);
  REQUIRE(s.transfers.size() == 4);
  CHECK(s.transfers[0] == iv(0, 3)); // x -> 0
  CHECK(s.transfers[1] == iv(3, 7)); // w -> 0 waits for the host link to device 0
  CHECK(s.transfers[2] == iv(0, 3)); // x -> 1 on its own link
  CHECK(s.transfers[3] == iv(3, 7));
  CHECK(s.shards[0][0] == iv(7, 9.5));
  CHECK(s.shards[0][1] == iv(7, 9.5));
  CHECK(s.shards[1][0] == iv(9.5, 10.75));
  CHECK(s.shards[1][1] == iv(9.5, 10.75));
  CHECK(s.objectives.timeS == 10.75);
  CHECK(s.objectives.transferBytes == 64 + 96 + 64 + 96);
  // Device 0 at t = 7: x part 64 + w 96 + h tile 96 = 256; at 9.5 x and w are
  // freed before y's tile (96) is allocated.
  CHECK(s.peakPerDevice == std::vector<std::int64_t>{256, 256});
  CHECK(s.objectives.peakMemoryBytes == 256);
  CHECK(s.objectives.feasible);
  CHECK(evaluate(g, tiny(2), p) == s.objectives);

  // One byte less memory per device: infeasible, same schedule.
  const Simulation tight = simulate(g, tiny(2, 255), p);
  CHECK_FALSE(tight.objectives.feasible);
  CHECK(tight.objectives.timeS == 10.75);
  CHECK(simulate(g, tiny(2, 256), p).objectives.feasible);
}

TEST_CASE("free inputs are resident from time 0", "[simulator]") {
  const graph::ExpandedGraph g = mmRelu();
  const plan::ShardPlan p = plan::buildPlan(g, 2, choose({{{2, 1, 1}, {0, 1}}, {{2, 1}, {0, 1}}}),
                                            plan::PlanOptions{plan::InputsOn::Free, {}});
  const Simulation s = simulate(g, tiny(2), p);
  CHECK(s.transfers.empty());
  CHECK(s.shards[0][0] == iv(0, 2.5));
  CHECK(s.shards[1][1] == iv(2.5, 3.75));
  CHECK(s.objectives.timeS == 3.75);
  CHECK(s.objectives.transferBytes == 0);
  CHECK(s.objectives.peakMemoryBytes == 256);
}

// A constant w read by matmul's `packed` port: each device that reads it also
// holds the backend's packed copy (96 B), from w's arrival to the end.
TEST_CASE("a constant read by a packed port counts its packed copy", "[simulator]") {
  const graph::ExpandedGraph g = expandText(R"({"tapestry": "graph/v1", "name": "mm_relu",
  "tensors": {"x": {"dtype": "float32", "shape": [8, 4]},
              "w": {"dtype": "float32", "shape": [4, 6], "constant": true}},
  "operations": [
    {"name": "mm", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "h"}},
    {"name": "act", "kernel": "relu", "inputs": {"input": "h"}, "outputs": {"result": "y"}}],
  "outputs": ["y"]})");
  const PlanChoice c = choose({{{2, 1, 1}, {0, 1}}, {{2, 1}, {0, 1}}});
  const plan::ShardPlan p = plan::buildPlan(g, 2, c);
  const Simulation s = simulate(g, tiny(2), p);
  // The schedule is the one without constants; at t = 7 each device holds x
  // part 64 + w 96 + packed w 96 + h tile 96.
  CHECK(s.objectives.timeS == 10.75);
  CHECK(s.peakPerDevice == std::vector<std::int64_t>{352, 352});
  CHECK(simulate(g, tiny(2, 351), p).objectives.feasible == false);
  const Target two = tiny(2); // the simulator keeps a reference
  ChoiceSimulator evaluator(g, two);
  CHECK(evaluator.builder().tasks(c) == plan::summarize(g, p));
  CHECK(evaluator.evaluate(c) == s.objectives);

  // Resident (free) inputs: the packed copy sits beside the resident w.
  const plan::ShardPlan free =
      plan::buildPlan(g, 2, c, plan::PlanOptions{plan::InputsOn::Free, {}});
  CHECK(simulate(g, tiny(2), free).objectives.peakMemoryBytes == 352);

  // x is read by matmul's X port, which is not packed: marking it constant
  // adds nothing.
  const graph::ExpandedGraph onlyX = expandText(R"({"tapestry": "graph/v1", "name": "mm_relu",
  "tensors": {"x": {"dtype": "float32", "shape": [8, 4], "constant": true},
              "w": {"dtype": "float32", "shape": [4, 6]}},
  "operations": [
    {"name": "mm", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "h"}},
    {"name": "act", "kernel": "relu", "inputs": {"input": "h"}, "outputs": {"result": "y"}}],
  "outputs": ["y"]})");
  CHECK(simulate(onlyX, tiny(2), plan::buildPlan(onlyX, 2, c)).objectives.peakMemoryBytes == 256);
}

// act split by columns: each device lacks half of the other's tile (12 floats,
// 48 B -> 0.5 + 1 = 1.5 s on a device link).
TEST_CASE("resharding between ops: device links", "[simulator]") {
  const graph::ExpandedGraph g = mmRelu();
  const plan::ShardPlan p = plan::buildPlan(g, 2, choose({{{2, 1, 1}, {0, 1}}, {{1, 2}, {0, 1}}}));
  const Simulation s = simulate(g, tiny(2), p);
  REQUIRE(s.transfers.size() == 6);
  CHECK(s.transfers[4] == iv(9.5, 11)); // h[4:8, 0:3] 1 -> 0
  CHECK(s.transfers[5] == iv(9.5, 11)); // h[0:4, 3:6] 0 -> 1, the other direction
  CHECK(s.shards[1][0] == iv(11, 12.25));
  CHECK(s.shards[1][1] == iv(11, 12.25));
  CHECK(s.objectives.timeS == 12.25);
  CHECK(s.objectives.transferBytes == 320 + 96);
  // Device 0: 256 at t = 7; at 9.5 x and w go (96 left) and the received 48 B
  // arrive (144); at 11 the y tile (96) makes 240. Peak 256.
  CHECK(s.peakPerDevice == std::vector<std::int64_t>{256, 256});
}

// The schedules above, summed per device and per link.
TEST_CASE("busiest: the device and the link that are busy longest", "[simulator]") {
  const graph::ExpandedGraph g = mmRelu();
  // Aligned row split: each device runs mm (2.5 s) and act (1.25 s); each host
  // link moves x's part and w (3 + 4 s, 160 B). Ties go to device 0 and to
  // the first link, host -> 0.
  const plan::ShardPlan rows =
      plan::buildPlan(g, 2, choose({{{2, 1, 1}, {0, 1}}, {{2, 1}, {0, 1}}}));
  const Busiest b = busiest(rows, simulate(g, tiny(2), rows));
  CHECK(b.seconds == 10.75);
  CHECK(b.device == 0);
  CHECK(b.deviceSeconds == 3.75);
  CHECK(b.deviceShards == 2);
  CHECK(b.linkFrom == plan::kHost);
  CHECK(b.linkTo == 0);
  CHECK(b.linkSeconds == 7);
  CHECK(b.linkTransfers == 2);
  CHECK(b.linkBytes == 160);
  CHECK(b.linkShare() == 7 / 10.75);
  CHECK(b.deviceShare() == 3.75 / 10.75);

  // Everything on device 1 with free inputs: device 0 idle, nothing moved.
  const plan::ShardPlan one = plan::buildPlan(g, 2, choose({{{1, 1, 1}, {1}}, {{1, 1}, {1}}}),
                                              plan::PlanOptions{plan::InputsOn::Free, {}});
  const Busiest c = busiest(one, simulate(g, tiny(2), one));
  CHECK(c.device == 1);
  CHECK(c.deviceShards == 2);
  CHECK(c.linkTo == -1);
  CHECK(c.linkTransfers == 0);
  CHECK(c.linkShare() == 0);

  // A simulation of another plan is refused.
  CHECK_THROWS_AS(busiest(one, simulate(g, tiny(2), rows)), InternalError);
}

// mm split on k across two devices: each shard reads x[:, k part] (64 B, 3 s)
// and w[k part, :] (48 B, 2.5 s), computes 192 flops (2 s; 304 B is 1.1875 s),
// then device 1's partial (192 B) moves to device 0 (0.5 + 4 = 4.5 s) and is
// added there: 3 x 192 B / 256 B/s = 2.25 s (48 adds take 0.5 s) + 0.5 s.
TEST_CASE("a reduction: partial move and combine", "[simulator]") {
  const graph::ExpandedGraph g = mmRelu();
  const plan::ShardPlan p = plan::buildPlan(g, 2, choose({{{1, 1, 2}, {0, 1}}, {{1, 1}, {0}}}));
  const Simulation s = simulate(g, tiny(2), p);
  REQUIRE(s.transfers.size() == 5);
  CHECK(s.transfers[0] == iv(0, 3));
  CHECK(s.transfers[1] == iv(3, 5.5));
  CHECK(s.shards[0][0] == iv(5.5, 8));
  CHECK(s.shards[0][1] == iv(5.5, 8));
  CHECK(s.transfers[4] == iv(8, 12.5));
  REQUIRE(s.reductions.size() == 1);
  CHECK(s.reductions[0] == iv(8, 15.25));
  // act: 48 flops (0.5 s) and 384 B (1.5 s) + 0.5 s, after the reduction.
  CHECK(s.shards[1][0] == iv(15.25, 17.25));
  CHECK(s.objectives.timeS == 17.25);
  CHECK(s.objectives.transferBytes == 64 + 48 + 64 + 48 + 192);
  // Device 0: x 64 + w 48 + partial 192 = 304 at 5.5; at 8 x, w go and the
  // moved partial (192) arrives: 384; at 15.25 it is freed before y (192).
  // Device 1: 304 until its partial has been sent.
  CHECK(s.peakPerDevice == std::vector<std::int64_t>{384, 304});
  CHECK(s.objectives.peakMemoryBytes == 384);

  // Both partials on one device: no move, the combine waits for the device.
  const plan::ShardPlan q = plan::buildPlan(g, 2, choose({{{1, 1, 2}, {1, 1}}, {{1, 1}, {1}}}));
  const Simulation t = simulate(g, tiny(2), q);
  // Device 1 gets one x (all of it: 128 B, 5 s) and one w (96 B, 4 s) serving
  // both shards, so shard 0 starts at 9; the combine follows shard 1.
  CHECK(t.transfers[0] == iv(0, 5));
  CHECK(t.transfers[1] == iv(5, 9));
  CHECK(t.shards[0][0] == iv(9, 11.5));
  CHECK(t.shards[0][1] == iv(11.5, 14));
  CHECK(t.reductions[0] == iv(14, 16.75));
  CHECK(t.shards[1][0] == iv(16.75, 18.75));
  CHECK(t.objectives.transferBytes == 128 + 96);
}

TEST_CASE("a four-way reduction tree runs its levels in order", "[simulator]") {
  const graph::ExpandedGraph g = mmRelu();
  const plan::ShardPlan p =
      plan::buildPlan(g, 4, choose({{{1, 1, 4}, {0, 1, 2, 3}}, {{1, 1}, {0}}}));
  const Simulation s = simulate(g, tiny(4), p);
  // Each shard: x[:, k] 32 B (1 + 1 = 2 s), w[k, :] 24 B (1 + 0.75 = 1.75 s);
  // 48 points x 2 = 96 flops (1 s); 32 + 24 + 192 = 248 B (< 1 s); + 0.5 s.
  for (int k = 0; k < 4; ++k) {
    CHECK(s.shards[0][static_cast<std::size_t>(k)] == iv(3.75, 5.25));
  }
  // Steps: 1 -> 0 and 3 -> 2 in parallel (moves of 192 B take 4.5 s, combines
  // 2.75 s), then 2 -> 0; relu (2 s) follows on device 0.
  const plan::Reduction& r = p.reductions[0];
  CHECK(s.transfers[*r.steps[0].transfer] == iv(5.25, 9.75));
  CHECK(s.transfers[*r.steps[1].transfer] == iv(5.25, 9.75));
  CHECK(s.transfers[*r.steps[2].transfer] == iv(12.5, 17));
  CHECK(s.reductions[0] == iv(5.25, 19.75));
  CHECK(s.objectives.timeS == 19.75 + 2);
}

TEST_CASE("a compute queue serves shards in submission order", "[simulator]") {
  const graph::ExpandedGraph g = mmRelu();
  // Everything on device 0: two mm shards back to back.
  const plan::ShardPlan p = plan::buildPlan(g, 2, choose({{{2, 1, 1}, {0, 0}}, {{1, 1}, {0}}}));
  const Simulation s = simulate(g, tiny(2), p);
  // x (whole, 128 B: 5 s) then w (96 B: 4 s) on one host link.
  CHECK(s.transfers[0] == iv(0, 5));
  CHECK(s.transfers[1] == iv(5, 9));
  CHECK(s.shards[0][0] == iv(9, 11.5));
  CHECK(s.shards[0][1] == iv(11.5, 14));
  // act reads both tiles in place: 48 points (0.5 s), 384 B (1.5 s).
  CHECK(s.shards[1][0] == iv(14, 16));
  CHECK(s.objectives.transferBytes == 224);
}

TEST_CASE("a plan for more devices than the target has is an error", "[simulator]") {
  const graph::ExpandedGraph g = mmRelu();
  const plan::ShardPlan p = plan::buildPlan(g, 4, choose({{{2, 1, 1}, {0, 3}}, {{1, 1}, {0}}}));
  try {
    simulate(g, tiny(2), p);
    FAIL("expected an Error");
  } catch (const Error& e) {
    CHECK(e.message() == "the plan uses device 3 but target tiny has 2 devices (0 to 1)");
  }
}

TEST_CASE("multi-node targets use the inter-node link across nodes", "[simulator]") {
  const graph::ExpandedGraph g = mmRelu();
  Target t = tiny(4);
  t.nodes = NodeSpec{2, 2, LinkSpec{24, 1}};
  const plan::ShardPlan p = plan::buildPlan(g, 4, choose({{{2, 1, 1}, {0, 2}}, {{1, 2}, {0, 2}}}));
  const Simulation s = simulate(g, t, p);
  // 48 B across nodes: 1 + 2 = 3 s (instead of 1.5 s within a node).
  CHECK(s.transfers[4] == iv(9.5, 12.5));
}

TEST_CASE("dominance", "[simulator]") {
  const Objectives a{1.0, 100, 10, true};
  CHECK_FALSE(dominates(a, a));
  CHECK(dominates(a, Objectives{2.0, 100, 10, true}));
  CHECK(dominates(a, Objectives{1.0, 101, 10, true}));
  CHECK(dominates(a, Objectives{1.0, 100, 11, true}));
  CHECK_FALSE(dominates(a, Objectives{0.5, 200, 10, true}));
  CHECK_FALSE(dominates(Objectives{0.5, 200, 10, true}, a));
  // Feasibility first.
  CHECK(dominates(Objectives{9.0, 900, 90, true}, Objectives{1.0, 1, 1, false}));
  CHECK_FALSE(dominates(Objectives{1.0, 1, 1, false}, Objectives{9.0, 900, 90, true}));
  CHECK(dominates(Objectives{1.0, 1, 1, false}, Objectives{2.0, 1, 1, false}));
}

namespace {

// A random valid-looking choice: parts of 1, 2 or 4 per dim (at most 8 shards),
// random devices.
PlanChoice randomChoice(const graph::ExpandedGraph& g, std::mt19937& rng, int devices) {
  PlanChoice c;
  for (const graph::Operation& op : g.operations) {
    OpChoice oc;
    std::int64_t shards = 1;
    for (std::size_t d = 0; d < op.application.index.rank(); ++d) {
      std::int64_t part = std::int64_t{1} << (rng() % 3);
      part = std::min(part, op.application.index.extent(d));
      if (shards * part > 8) {
        part = 1;
      }
      oc.split.push_back(part);
      shards *= part;
    }
    for (std::int64_t k = 0; k < shards; ++k) {
      oc.devices.push_back(static_cast<int>(rng() % static_cast<unsigned>(devices)));
    }
    c.ops.push_back(std::move(oc));
  }
  return c;
}

// A plan's tasks as an evaluator for `t` makes them: without the image
// copies where the target does not price them (pricesImageCopies).
plan::PlanTasks asEvaluated(plan::PlanTasks tasks, const Target& t) {
  if (!pricesImageCopies(t)) {
    for (plan::PlanTasks::ShardTask& s : tasks.shards) {
      s.assembled = 0;
    }
  }
  return tasks;
}

} // namespace

// The search's fast path (PlanBuilder::tasks, ChoiceSimulator) must agree exactly with
// the full plan (buildPlan, summarize, simulate), on a GPU target (image
// copies left out) and a CPU one (counted).
TEST_CASE("the evaluator agrees with buildPlan + simulate", "[simulator]") {
  std::mt19937 rng(11);
  int checked = 0;
  int copying = 0; // plans with an image copy (on cpu-2)
  for (const auto& [target, name] :
       std::vector<std::pair<const char*, const char*>>{{"h100x8", "transformer_block"},
                                                        {"h100x8", "convnet"},
                                                        {"h100x8", "concat_split_embedding"},
                                                        {"h100x8", "mlp"},
                                                        {"cpu-2", "convnet"},
                                                        {"cpu-2", "mobilenet_block"}}) {
    INFO(target << " " << name);
    const Target t = loadTarget(target);
    const graph::ExpandedGraph g = graph::loadAndExpand(
        std::string(TAPESTRY_TESTDATA_DIR) + "/graphs/" + name + ".json", lib());
    for (const plan::PlanOptions& options :
         {plan::PlanOptions{plan::InputsOn::Host, {}}, plan::PlanOptions{plan::InputsOn::Free, {}},
          plan::PlanOptions{plan::InputsOn::Host, relayGroups(t)}}) {
      ChoiceSimulator evaluator(g, t, options);
      for (int round = 0; round < 25; ++round) {
        const PlanChoice c = randomChoice(g, rng, t.deviceCount());
        plan::ShardPlan p;
        try {
          p = plan::buildPlan(g, t.deviceCount(), c, options);
        } catch (const plan::InvalidChoice& e) {
          CHECK_THROWS_AS(evaluator.evaluate(c), plan::InvalidChoice);
          continue;
        }
        const plan::PlanTasks& fast = evaluator.builder().tasks(c);
        CHECK(fast == asEvaluated(plan::summarize(g, p), t));
        copying += std::any_of(fast.shards.begin(), fast.shards.end(),
                               [](const plan::PlanTasks::ShardTask& s) { return s.assembled > 0; })
                       ? 1
                       : 0;
        const Simulation s = simulate(g, t, p);
        CHECK(evaluator.evaluate(c) == s.objectives);
        CHECK(evaluator.plan(c).transfers.size() == p.transfers.size());
        ++checked;
      }
    }
  }
  CHECK(checked > 100);
  CHECK(copying > 0);
}

// A builder remembers each op's tiles for its last few splits (devices aside):
// choices that reuse, revisit and evict those splits, with new devices, must
// still build exactly the plan a fresh builder does.
TEST_CASE("a reused builder's remembered tiles give the plan a fresh one does", "[simulator]") {
  const Target t = loadTarget("h100x8");
  std::mt19937 rng(5);
  int checked = 0;
  for (const char* name : {"transformer_block", "convnet", "mlp"}) {
    INFO(name);
    const graph::ExpandedGraph g = graph::loadAndExpand(
        std::string(TAPESTRY_TESTDATA_DIR) + "/graphs/" + name + ".json", lib());
    // More choices than the builder remembers per op (8), so entries are replaced.
    std::vector<PlanChoice> pool;
    for (int i = 0; i < 12; ++i) {
      pool.push_back(randomChoice(g, rng, t.deviceCount()));
    }
    ChoiceSimulator evaluator(g, t);
    for (int round = 0; round < 60; ++round) {
      PlanChoice c;
      for (std::size_t op = 0; op < g.operations.size(); ++op) {
        OpChoice oc = pool[rng() % pool.size()].ops[op];
        for (int& d : oc.devices) {
          d = static_cast<int>(rng() % static_cast<unsigned>(t.deviceCount()));
        }
        c.ops.push_back(std::move(oc));
      }
      plan::ShardPlan p;
      try {
        p = plan::buildPlan(g, t.deviceCount(), c);
      } catch (const plan::InvalidChoice&) {
        CHECK_THROWS_AS(evaluator.evaluate(c), plan::InvalidChoice);
        continue;
      }
      CHECK(evaluator.builder().tasks(c) == asEvaluated(plan::summarize(g, p), t));
      CHECK(evaluator.evaluate(c) == simulate(g, t, p).objectives);
      ++checked;
    }
  }
  CHECK(checked > 60);
}

// The per-device peak sweep (detail::peakLive) against the plain way: every
// event sorted by key (a free's key is even, an allocation's odd, so frees come
// first at equal times; what is allocated at time 0 goes in at key 1), then
// the running sum's maximum, never below 0. Allocations and frees in every
// order the simulator can hand it: sorted, a sorted start then any order,
// reversed, shuffled, nearly sorted; times from a few values, so many tie.
TEST_CASE("the peak-memory sweep agrees with sorting every event", "[simulator]") {
  using detail::eventKey;
  using detail::MemEvent;
  std::mt19937 rng(17);
  detail::PeakScratch scratch;
  int checked = 0;
  for (int round = 0; round < 400; ++round) {
    const std::size_t n = rng() % 40;
    const std::size_t m = rng() % 40;
    const int times = 1 + static_cast<int>(rng() % 12);
    auto time = [&](bool zeroAllowed) {
      const int k = static_cast<int>(rng() % static_cast<unsigned>(times)) + (zeroAllowed ? 0 : 1);
      return 0.25 * k;
    };
    std::vector<MemEvent> allocs, frees;
    for (std::size_t i = 0; i < n; ++i) {
      allocs.push_back(MemEvent{eventKey(time(false), true), 1 + static_cast<int>(rng() % 100)});
    }
    for (std::size_t i = 0; i < m; ++i) {
      frees.push_back(MemEvent{eventKey(time(true), false), -1 - static_cast<int>(rng() % 100)});
    }
    const std::int64_t atZero = rng() % 3 == 0 ? 0 : static_cast<std::int64_t>(rng() % 500);
    const auto byKey = [](const MemEvent& x, const MemEvent& y) { return x.key < y.key; };
    for (std::vector<MemEvent>* events : {&allocs, &frees}) {
      switch (rng() % 5) {
      case 0:
        std::sort(events->begin(), events->end(), byKey);
        break;
      case 1: { // a sorted start, then any order
        const std::size_t cut = events->empty() ? 0 : rng() % events->size();
        std::sort(events->begin(), events->begin() + static_cast<std::ptrdiff_t>(cut), byKey);
        break;
      }
      case 2:
        std::sort(events->begin(), events->end(), byKey);
        std::reverse(events->begin(), events->end());
        break;
      case 3:
        break; // as drawn
      default: // nearly sorted: a few neighbours swapped
        std::sort(events->begin(), events->end(), byKey);
        for (std::size_t i = 0; i + 1 < events->size(); ++i) {
          if (rng() % 6 == 0) {
            std::swap((*events)[i], (*events)[i + 1]);
          }
        }
      }
    }
    std::vector<MemEvent> all = allocs;
    all.insert(all.end(), frees.begin(), frees.end());
    all.push_back(MemEvent{detail::kZeroAlloc, atZero});
    std::stable_sort(all.begin(), all.end(), byKey);
    std::int64_t live = 0;
    std::int64_t expected = 0;
    for (const MemEvent& e : all) {
      live += e.delta;
      expected = std::max(expected, live);
    }
    INFO("round " << round << ": " << n << " allocations, " << m << " frees");
    CHECK(detail::peakLive(allocs.data(), allocs.size(), frees.data(), frees.size(), atZero,
                           scratch) == expected);
    ++checked;
  }
  CHECK(checked == 400);
}

// buildPlan + simulate throughput on the transformer block, 8 devices (what the
// search does per evaluation). Run by hand on a release build:
//   unit_simulator "[.bench]"
TEST_CASE("plan and simulate throughput", "[.bench]") {
  const graph::ExpandedGraph g = graph::loadAndExpand(
      std::string(TAPESTRY_TESTDATA_DIR) + "/graphs/transformer_block.json", lib());
  const Target t = loadTarget("h100x8");
  // Data parallel over the batch (dim 0 of every index space with extent >= 8),
  // and a mixed plan (batch 4 ways x last dim 2 ways where it can) that
  // reshards between ops and splits the attention matmuls' reduction dim.
  PlanChoice dp = plan::singleDeviceChoice(g);
  PlanChoice mixed = plan::singleDeviceChoice(g);
  for (std::size_t i = 0; i < g.operations.size(); ++i) {
    const graph::Operation& op = g.operations[i];
    if (op.application.index.rank() > 0 && op.application.index.extent(0) >= 8) {
      dp.ops[i].split[0] = 8;
      dp.ops[i].devices = {0, 1, 2, 3, 4, 5, 6, 7};
      // mixed: batch 4 x one more dim 2 where possible (last dim), else batch 8.
      const std::size_t last = op.application.index.rank() - 1;
      if (last > 0 && op.application.index.extent(last) >= 2 && op.kernel != "reshape") {
        mixed.ops[i].split[0] = 4;
        mixed.ops[i].split[last] = 2;
        mixed.ops[i].devices = {0, 1, 2, 3, 4, 5, 6, 7};
      } else {
        mixed.ops[i].split = dp.ops[i].split;
        mixed.ops[i].devices = {7, 6, 5, 4, 3, 2, 1, 0};
      }
    }
  }
  ChoiceSimulator evaluator(g, t);
  for (const auto& [name, choice] : {std::pair{"data parallel", dp}, std::pair{"mixed", mixed}}) {
    plan::ShardPlan p;
    try {
      p = plan::buildPlan(g, 8, choice);
    } catch (const Error& e) {
      WARN(std::string(name) + ": " + e.message());
      continue;
    }
    for (const bool full : {false, true}) {
      int n = 0;
      double checksum = 0;
      // Thread CPU time: other processes on a shared machine do not count.
      const std::clock_t start = std::clock();
      double elapsed = 0;
      while (elapsed < 2.0) {
        for (int i = 0; i < 100; ++i, ++n) {
          checksum += full ? simulate(g, t, plan::buildPlan(g, 8, choice)).objectives.timeS
                           : evaluator.evaluate(choice).timeS;
        }
        elapsed = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
      }
      std::printf("%s (%zu shards, %zu transfers, %zu reductions): %s: %.0f plans/s, time %.3g s\n",
                  name, p.shardCount(), p.transfers.size(), p.reductions.size(),
                  full ? "buildPlan + simulate" : "ChoiceSimulator::evaluate", n / elapsed,
                  checksum / n);
    }
  }
}
