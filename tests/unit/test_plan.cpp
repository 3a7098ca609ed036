// Tests for core/plan: shard ranges and selections (list ports, conv padding),
// choice checks, the disjoint-output rule (reshape's merged dims), reduction
// trees, transfers (dedup, host inputs, partial moves), resident inputs, the
// JSON parts, and the plan/v1 file: round trip, stored plans, tampered plans.
//
// Longer than 800 lines on purpose: tests/unit keeps one file per module, and
// this module's cases read best side by side (each is short and independent).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/cost/plan_file.hpp"
#include "core/cost/simulator.hpp"
#include "core/cost/target.hpp"
#include "core/expr/dtype.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/graph.hpp"
#include "core/graph/loader.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"
#include "core/plan/plan.hpp"
#include "tests/unit/fixtures.hpp"

using namespace tapestry;
using namespace tapestry::testing;
using namespace tapestry::plan;
using Catch::Matchers::Contains;

namespace {

// x [8, 4] @ w [4, 6] -> h [8, 6]; relu(h) -> y. Index of mm: [m=8, n=6, k=4].
// With `constantW`, w is a constant graph input (weights).
graph::ExpandedGraph mmReluGraph(bool constantW) {
  return expandText(std::string(R"({"tapestry": "graph/v1", "name": "mm_relu",
  "tensors": {"x": {"dtype": "float32", "shape": [8, 4]}, "w": {"dtype": "float32", "shape": [4, 6])") +
                    (constantW ? R"(, "constant": true)" : "") + R"(}},
  "operations": [
    {"name": "mm", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "h"}},
    {"name": "act", "kernel": "relu", "inputs": {"input": "h"}, "outputs": {"result": "y"}}],
  "outputs": ["y"]})");
}

graph::ExpandedGraph mmRelu() {
  return mmReluGraph(false);
}

ZRange zr(std::initializer_list<std::int64_t> start, std::initializer_list<std::int64_t> end) {
  return ZRange(ZPoint(start), ZPoint(end));
}

PlanChoice choose(std::vector<OpChoice> ops) {
  return PlanChoice{std::move(ops)};
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A small target for plan files (its figures only matter to the schedule).
cost::Target tinyTarget(int devices) {
  cost::Target t;
  t.name = "tiny";
  t.devices.count = devices;
  t.devices.kind = cost::DeviceKind::Cpu;
  t.devices.memory = 1 << 20;
  t.devices.memoryBandwidth = 256;
  t.devices.flops = {{"float32", 96}};
  t.devices.launchOverhead = 0.5;
  t.links = cost::LinkSpec{48, 0.5};
  t.host = cost::LinkSpec{32, 1};
  return t;
}

std::string tensorName(const graph::ExpandedGraph& g, std::size_t t) {
  return g.tensors[t].name;
}

} // namespace

TEST_CASE("dtype sizes", "[plan]") {
  CHECK(dtypeSize("float32") == 4);
  CHECK(dtypeSize("bfloat16") == 2);
  CHECK(dtypeSize("int64") == 8);
  CHECK(dtypeSize("bool") == 1);
  CHECK(dtypeSize("complex128") == 16);
  // Every dtype a graph may use has its size from the one table.
  for (const expr::DTypeInfo& d : expr::dtypes()) {
    CHECK(graph::isKnownDType(d.name));
    CHECK(dtypeSize(d.name) == d.bytes);
  }
  CHECK_FALSE(graph::isKnownDType("float13"));
  CHECK_THROWS_AS(dtypeSize("float13"), InternalError);
}

TEST_CASE("shards are the row-major tiles of the split, selections the IPF projections", "[plan]") {
  const graph::ExpandedGraph g = mmRelu();
  const ShardPlan p = buildPlan(g, 2, choose({{{2, 1, 1}, {0, 1}}, {{2, 1}, {0, 1}}}));
  REQUIRE(p.ops.size() == 2);
  const OpPlan& mm = p.ops[0];
  REQUIRE(mm.shards.size() == 2);
  CHECK(mm.shards[0].index == zr({0, 0, 0}, {4, 6, 4}));
  CHECK(mm.shards[1].index == zr({4, 0, 0}, {8, 6, 4}));
  CHECK(mm.shards[1].device == 1);
  CHECK(mm.shards[1].inputs[0][0].range == zr({4, 0}, {8, 4})); // X
  CHECK(mm.shards[1].inputs[1][0].range == zr({0, 0}, {4, 6})); // W
  CHECK(mm.shards[1].outputs[0][0].range == zr({4, 0}, {8, 6}));
  CHECK(tensorName(g, mm.shards[1].outputs[0][0].tensor) == "h");
  CHECK(mm.shards[0].flops == 2 * 4 * 6 * 4);
  CHECK(mm.shards[0].bytes == (16 + 24 + 24) * 4);
  CHECK_FALSE(mm.shards[0].partial);
  CHECK(p.reductions.empty());
  CHECK(p.shardCount() == 4);
  CHECK(p.choice() == choose({{{2, 1, 1}, {0, 1}}, {{2, 1}, {0, 1}}}));
  CHECK(p.choice().shardCount() == 4);
  CHECK(choose({{{2, 1, 1}, {0, 1}}, {{1, 1}, {1}}}).shardCount() == 3);

  // Graph inputs come from the host, one transfer per (tensor, device), in the
  // order first read; the aligned relu reads its tiles in place.
  REQUIRE(p.transfers.size() == 4);
  CHECK(tensorName(g, p.transfers[0].tensor) == "x");
  CHECK(p.transfers[0].region == zr({0, 0}, {4, 4}));
  CHECK(p.transfers[0].bytes == 64);
  CHECK(p.transfers[0].from == kHost);
  CHECK(p.transfers[0].to == 0);
  CHECK_FALSE(p.transfers[0].afterShard);
  CHECK(tensorName(g, p.transfers[1].tensor) == "w");
  CHECK(p.transfers[1].region == zr({0, 0}, {4, 6}));
  CHECK(p.transfers[2].to == 1);
  CHECK(p.transfers[2].region == zr({4, 0}, {8, 4}));
  CHECK(p.transfers[3].to == 1);
  CHECK(mm.inputTransfers == std::make_pair<std::size_t, std::size_t>(0, 4));
  CHECK(p.ops[1].inputTransfers == std::make_pair<std::size_t, std::size_t>(4, 4));
  CHECK(mm.shards[0].reads ==
        std::vector<Source>{{Source::Kind::Transfer, 0, 0, 0}, {Source::Kind::Transfer, 1, 0, 1}});
  const std::size_t h = *g.tensorIndex("h");
  CHECK(p.ops[1].shards[1].reads == std::vector<Source>{{Source::Kind::Shard, 0, 1, h}});
}

TEST_CASE("a consumer split another way receives only the parts it lacks", "[plan]") {
  const graph::ExpandedGraph g = mmRelu();
  const std::size_t h = *g.tensorIndex("h");
  const ShardPlan p = buildPlan(g, 2, choose({{{2, 1, 1}, {0, 1}}, {{1, 2}, {0, 1}}}));
  const OpPlan& act = p.ops[1];
  CHECK(act.shards[0].index == zr({0, 0}, {8, 3}));
  REQUIRE(p.transfers.size() == 6);
  CHECK(act.inputTransfers == std::make_pair<std::size_t, std::size_t>(4, 6));
  const Transfer& toZero = p.transfers[4];
  CHECK(toZero.tensor == h);
  CHECK(toZero.region == zr({4, 0}, {8, 3}));
  CHECK(toZero.bytes == 48);
  CHECK(toZero.from == 1);
  CHECK(toZero.to == 0);
  CHECK(toZero.afterShard == std::make_pair<std::size_t, std::size_t>(0, 1));
  const Transfer& toOne = p.transfers[5];
  CHECK(toOne.region == zr({0, 3}, {4, 6}));
  CHECK(toOne.from == 0);
  CHECK(toOne.to == 1);
  CHECK(act.shards[0].reads ==
        std::vector<Source>{{Source::Kind::Shard, 0, 0, h}, {Source::Kind::Transfer, 4, 0, h}});
  CHECK(act.shards[1].reads ==
        std::vector<Source>{{Source::Kind::Transfer, 5, 0, h}, {Source::Kind::Shard, 0, 1, h}});
}

TEST_CASE("one transfer per tile and device: the bounding box of what the device needs", "[plan]") {
  const graph::ExpandedGraph g = mmRelu();
  // Both relu shards on device 0 need halves of mm's tile on device 1.
  const ShardPlan p = buildPlan(g, 2, choose({{{2, 1, 1}, {0, 1}}, {{1, 2}, {0, 0}}}));
  REQUIRE(p.transfers.size() == 5);
  CHECK(p.transfers[4].region == zr({4, 0}, {8, 6}));
  CHECK(p.transfers[4].bytes == 96);
  CHECK(p.ops[1].shards[0].reads[1] == Source{Source::Kind::Transfer, 4, 0, *g.tensorIndex("h")});
  CHECK(p.ops[1].shards[1].reads[1] == Source{Source::Kind::Transfer, 4, 0, *g.tensorIndex("h")});

  // Host inputs likewise: two mm shards on one device get one x and one w.
  const ShardPlan q = buildPlan(g, 2, choose({{{1, 2, 1}, {1, 1}}, {{1, 1}, {1}}}));
  REQUIRE(q.transfers.size() == 2);
  CHECK(q.transfers[0].region == zr({0, 0}, {8, 4}));
  CHECK(q.transfers[1].region == zr({0, 0}, {4, 6})); // [0:4, 0:3] and [0:4, 3:6]
  CHECK(q.transfers[1].to == 1);
  // act on device 1 reads both tiles in place.
  CHECK(q.ops[1].inputTransfers.first == q.ops[1].inputTransfers.second);
  CHECK(q.ops[1].shards[0].reads.size() == 2);
}

TEST_CASE("a split reduction dim gives partials combined in a pairwise tree", "[plan]") {
  const graph::ExpandedGraph g = mmRelu();
  const std::size_t h = *g.tensorIndex("h");
  const ShardPlan p = buildPlan(g, 4, choose({{{1, 1, 4}, {0, 1, 2, 3}}, {{1, 1}, {0}}}));
  const OpPlan& mm = p.ops[0];
  CHECK(mm.shards[2].index == zr({0, 0, 2}, {8, 6, 3}));
  CHECK(mm.shards[2].partial);
  CHECK(mm.shards[2].outputs[0][0].range == zr({0, 0}, {8, 6}));
  REQUIRE(p.reductions.size() == 1);
  const Reduction& r = p.reductions[0];
  CHECK(r.op == 0);
  CHECK(r.tensor == h);
  CHECK(r.region == zr({0, 0}, {8, 6}));
  CHECK(r.bytes == 192);
  CHECK(r.combine == "sum");
  CHECK(r.shards == std::vector<std::size_t>{0, 1, 2, 3});
  CHECK(r.device == 0);
  REQUIRE(r.steps.size() == 3);
  CHECK((r.steps[0].from == 1 && r.steps[0].into == 0));
  CHECK((r.steps[1].from == 3 && r.steps[1].into == 2));
  CHECK((r.steps[2].from == 2 && r.steps[2].into == 0));
  // Partial moves follow mm's 8 input transfers, one per step across devices.
  CHECK(mm.inputTransfers == std::make_pair<std::size_t, std::size_t>(0, 8));
  CHECK(mm.partialTransfersEnd == 11);
  CHECK(mm.reductions == std::make_pair<std::size_t, std::size_t>(0, 1));
  REQUIRE(r.steps[2].transfer);
  const Transfer& move = p.transfers[*r.steps[2].transfer];
  CHECK(move.from == 2);
  CHECK(move.to == 0);
  CHECK(move.bytes == 192);
  CHECK(move.afterShard == std::make_pair<std::size_t, std::size_t>(0, 2));
  CHECK(move.reduction == 0u);
  // relu reads the result in place, on the reduction's device.
  CHECK(p.ops[1].shards[0].reads == std::vector<Source>{{Source::Kind::Reduction, 0, 0, h}});

  // Partials on one device combine without a transfer; relu elsewhere receives
  // the result with afterReduction.
  const ShardPlan q = buildPlan(g, 2, choose({{{1, 1, 2}, {1, 1}}, {{1, 1}, {0}}}));
  REQUIRE(q.reductions.size() == 1);
  CHECK_FALSE(q.reductions[0].steps[0].transfer);
  CHECK(q.reductions[0].device == 1);
  const Transfer& result = q.transfers.back();
  CHECK(result.afterReduction == 0u);
  CHECK_FALSE(result.afterShard);
  CHECK(result.from == 1);
  CHECK(result.to == 0);
  CHECK(result.region == zr({0, 0}, {8, 6}));
}

TEST_CASE("reduction groups follow the non-reduction tile coordinates", "[plan]") {
  const graph::ExpandedGraph g = mmRelu();
  // Shards (m0,k0)=0, (m0,k1)=1, (m1,k0)=2, (m1,k1)=3.
  const ShardPlan p = buildPlan(g, 4, choose({{{2, 1, 2}, {0, 1, 2, 3}}, {{1, 1}, {3}}}));
  REQUIRE(p.reductions.size() == 2);
  CHECK(p.reductions[0].shards == std::vector<std::size_t>{0, 1});
  CHECK(p.reductions[0].region == zr({0, 0}, {4, 6}));
  CHECK(p.reductions[0].device == 0);
  CHECK(p.reductions[1].shards == std::vector<std::size_t>{2, 3});
  CHECK(p.reductions[1].region == zr({4, 0}, {8, 6}));
  CHECK(p.reductions[1].device == 2);
  CHECK((p.reductions[1].steps.size() == 1 && p.reductions[1].steps[0].from == 1 &&
         p.reductions[1].steps[0].into == 0));
  // relu on device 3 receives both results.
  const auto [b, e] = p.ops[1].inputTransfers;
  REQUIRE(e - b == 2);
  CHECK(p.transfers[b].afterReduction == 0u);
  CHECK(p.transfers[b + 1].afterReduction == 1u);
}

TEST_CASE("checkChoice names the operation and what is wrong", "[plan]") {
  graph::ExpandedGraph g = mmRelu();
  auto reason = [&](const PlanChoice& c, int devices = 2) {
    auto r = checkChoice(g, devices, c);
    return r ? *r : std::string();
  };
  CHECK(reason(choose({{{2, 1, 1}, {0, 1}}, {{2, 1}, {0, 1}}})).empty());
  CHECK(reason(choose({{{2, 1, 1}, {0, 1}}})) ==
        "expected a choice for each of the 2 operations, got 1");
  CHECK(reason(choose({{{2, 1}, {0, 1}}, {{1, 1}, {0}}})) ==
        "operation mm: split [2, 1] has 2 parts but the index zr[0:8, 0:6, 0:4] has 3 dims");
  CHECK(reason(choose({{{1, 7, 1}, {0, 0, 0, 0, 0, 0, 0}}, {{1, 1}, {0}}})) ==
        "operation mm: split [1, 7, 1] cuts dim 1 into 7 parts; expected 1 to 6 (the index "
        "extent there)");
  CHECK(reason(choose({{{1, 0, 1}, {}}, {{1, 1}, {0}}})) ==
        "operation mm: split [1, 0, 1] cuts dim 1 into 0 parts; expected 1 to 6 (the index "
        "extent there)");
  CHECK(reason(choose({{{2, 1, 1}, {0}}, {{1, 1}, {0}}})) ==
        "operation mm: split [2, 1, 1] makes 2 shards but 1 devices are given");
  CHECK(reason(choose({{{1, 1, 1}, {0}}, {{1, 1}, {2}}})) ==
        "operation act: shard 0 is on device 2, expected 0 to 1 (the target has 2 devices)");
  CHECK(reason(choose({{{1, 1, 1}, {0}}, {{1, 1}, {-1}}})) ==
        "operation act: shard 0 is on device -1, expected 0 to 1 (the target has 2 devices)");
  CHECK(reason(choose({{{1, 1, 1}, {0}}, {{1, 1}, {0}}}), 0) ==
        "a plan needs at least one device, got 0");
  // A reduction dim may be split only when every output has a combine.
  g.operations[0].application.reductionSplittable = false;
  CHECK(reason(choose({{{1, 1, 2}, {0, 1}}, {{1, 1}, {0}}})) ==
        "operation mm: split [1, 1, 2] cuts reduction dim 2, but not every output of matmul has a "
        "combine, so partial results could not be combined");
  // buildPlan throws the same reason.
  try {
    buildPlan(g, 2, choose({{{1, 1, 2}, {0, 1}}, {{1, 1}, {0}}}));
    FAIL("expected an Error");
  } catch (const Error& e) {
    CHECK(e.exitCode() == ExitCode::InvalidInput);
    CHECK_THAT(e.message(), Contains("operation mm: split [1, 1, 2] cuts reduction dim 2"));
  }
}

TEST_CASE("splitting a merged reshape dim on its minor term is rejected", "[plan]") {
  const graph::ExpandedGraph g = expandText(R"({"tapestry": "graph/v1", "name": "r",
  "tensors": {"x": {"dtype": "float32", "shape": [4, 4]}},
  "operations": [{"name": "flat", "kernel": "reshape", "params": {"shape": [16]},
                  "inputs": {"input": "x"}, "outputs": {"result": "y"}}]})");
  // Splitting the major term is fine: [0:8] and [8:16].
  const ShardPlan p = buildPlan(g, 2, choose({{{2, 1}, {0, 1}}}));
  CHECK(p.ops[0].shards[0].outputs[0][0].range == zr({0}, {8}));
  CHECK(p.ops[0].shards[1].outputs[0][0].range == zr({8}, {16}));
  try {
    buildPlan(g, 2, choose({{{1, 2}, {0, 1}}}));
    FAIL("expected an Error");
  } catch (const Error& e) {
    CHECK(e.message() ==
          "operation flat: split [1, 2] makes shards 0 and 1 write overlapping regions zr[0:14] "
          "and zr[2:16] of tensor y (output result); shards must write disjoint regions (split "
          "only the major term of a merged dim)");
  }
}

TEST_CASE("list ports: each element's selection is clipped to it, untouched ones are empty",
          "[plan]") {
  const graph::ExpandedGraph g = expandText(R"({"tapestry": "graph/v1", "name": "c",
  "tensors": {"a": {"dtype": "float32", "shape": [4, 2]}, "b": {"dtype": "float32", "shape": [4, 3]}},
  "operations": [{"name": "cat", "kernel": "concat", "params": {"axis": -1},
                  "inputs": {"tensors": ["a", "b"]}, "outputs": {"result": "z"}}]})");
  const ShardPlan p = buildPlan(g, 2, choose({{{1, 2}, {0, 1}}}));
  const Shard& s0 = p.ops[0].shards[0];
  const Shard& s1 = p.ops[0].shards[1];
  CHECK(s0.index == zr({0, 0}, {4, 3}));
  CHECK(s0.inputs[0][0].range == zr({0, 0}, {4, 2}));
  CHECK(s0.inputs[0][1].range == zr({0, 0}, {4, 1}));
  CHECK(s1.inputs[0][0].range.isEmpty());
  CHECK(s1.inputs[0][1].range == zr({0, 1}, {4, 3}));
  CHECK(s1.bytes == (8 + 8) * 4);
  // No transfer of a to device 1.
  REQUIRE(p.transfers.size() == 3);
  CHECK(p.transfers[2].region == zr({0, 1}, {4, 3}));
  CHECK(p.transfers[2].to == 1);
  // The JSON lists the untouched element with the canonical empty range.
  const Json ops = operationsToJson(g, p);
  CHECK(ops["cat"]["shards"][1]["selections"]["inputs"]["tensors"][0] ==
        Json::parse(R"({"tensor": "a", "range": {"start": [0, 0], "end": [0, 0]}})"));
}

TEST_CASE("conv2d padding: input selections are clipped to the tensor", "[plan]") {
  const graph::ExpandedGraph g = expandText(R"({"tapestry": "graph/v1", "name": "c",
  "tensors": {"x": {"dtype": "float32", "shape": [1, 1, 4, 4]}, "k": {"dtype": "float32", "shape": [1, 1, 3, 3]}},
  "operations": [{"name": "conv", "kernel": "conv2d", "params": {"padding": [1, 1]},
                  "inputs": {"input": "x", "weight": "k"}, "outputs": {"result": "y"}}]})");
  // Index [N, O, OH, OW, C, KH, KW] = [1, 1, 4, 4, 1, 3, 3]; split OH in two.
  const ShardPlan p = buildPlan(g, 2, choose({{{1, 1, 2, 1, 1, 1, 1}, {0, 1}}}));
  // Rows -1..2 and 1..4 clipped to 0..3 and 1..4.
  CHECK(p.ops[0].shards[0].inputs[0][0].range == zr({0, 0, 0, 0}, {1, 1, 3, 4}));
  CHECK(p.ops[0].shards[1].inputs[0][0].range == zr({0, 0, 1, 0}, {1, 1, 4, 4}));
  CHECK(p.transfers[0].region == zr({0, 0, 0, 0}, {1, 1, 3, 4}));
  CHECK(p.transfers[0].bytes == 12 * 4);
}

TEST_CASE("free inputs are resident where they are read, with no transfer", "[plan]") {
  const graph::ExpandedGraph g = mmRelu();
  const ShardPlan p = buildPlan(g, 2, choose({{{2, 1, 1}, {0, 1}}, {{1, 2}, {0, 1}}}),
                                PlanOptions{InputsOn::Free, {}});
  CHECK(p.options.inputsOn == InputsOn::Free);
  REQUIRE(p.residents.size() == 4);
  CHECK(tensorName(g, p.residents[0].tensor) == "x");
  CHECK(p.residents[0].region == zr({0, 0}, {4, 4}));
  CHECK(p.residents[0].bytes == 64);
  CHECK(p.residents[0].device == 0);
  CHECK(p.residents[3].device == 1);
  CHECK(p.ops[0].shards[0].reads[0] == Source{Source::Kind::Resident, 0, 0, 0});
  // Only the device-to-device transfers remain.
  REQUIRE(p.transfers.size() == 2);
  CHECK(p.transfers[0].from == 1);
}

TEST_CASE(
    "with InputsOn::Constants only constant inputs are resident, the others come from the host",
    "[plan]") {
  const graph::ExpandedGraph g = mmReluGraph(true);
  const PlanChoice c = choose({{{2, 1, 1}, {0, 1}}, {{1, 2}, {0, 1}}});
  const ShardPlan p = buildPlan(g, 2, c, PlanOptions{InputsOn::Constants, {}});
  CHECK(p.options.inputsOn == InputsOn::Constants);
  // w on both devices that read it, whole; x from the host, half to each.
  REQUIRE(p.residents.size() == 2);
  for (int d = 0; d < 2; ++d) {
    CHECK(tensorName(g, p.residents[d].tensor) == "w");
    CHECK(p.residents[d].region == zr({0, 0}, {4, 6}));
    CHECK(p.residents[d].bytes == 96);
    CHECK(p.residents[d].device == d);
  }
  std::vector<std::string> fromHost;
  for (const Transfer& t : p.transfers) {
    if (t.from == kHost) {
      fromHost.push_back(tensorName(g, t.tensor));
      CHECK(t.region.extent(0) == 4);
    }
  }
  CHECK(fromHost == std::vector<std::string>{"x", "x"});
  // The same choice with every input on the host moves w too, and with every
  // input free moves neither.
  const ShardPlan host = buildPlan(g, 2, c, PlanOptions{InputsOn::Host, {}});
  const ShardPlan free = buildPlan(g, 2, c, PlanOptions{InputsOn::Free, {}});
  CHECK(host.residents.empty());
  CHECK(host.transfers.size() == p.transfers.size() + 2);
  CHECK(free.residents.size() == 4);
  CHECK(free.transfers.size() == p.transfers.size() - 2);
}

TEST_CASE("single-device choice and rank-0 index spaces", "[plan]") {
  const graph::ExpandedGraph g = expandText(R"({"tapestry": "graph/v1", "name": "s",
  "tensors": {"v": {"dtype": "float32", "shape": [5]}, "s": {"dtype": "float32", "shape": []}},
  "operations": [{"name": "sm", "kernel": "softmax", "inputs": {"input": "v"}, "outputs": {"result": "p"}},
                 {"name": "sc", "kernel": "mul", "inputs": {"A": "p", "B": "s"}, "outputs": {"result": "q"}}]})");
  const PlanChoice c = singleDeviceChoice(g, 1);
  CHECK(c.ops[0].split.empty()); // softmax of a rank-1 input: a rank-0 index space
  const ShardPlan p = buildPlan(g, 2, c);
  CHECK(p.ops[0].shards.size() == 1);
  CHECK(p.ops[0].shards[0].index == ZRange());
  CHECK(p.ops[0].shards[0].inputs[0][0].range == zr({0}, {5}));
  CHECK(p.ops[1].shards[0].inputs[1][0].range == ZRange()); // the scalar s
  CHECK(p.transfers.size() == 2);
  CHECK(p.transfers[1].bytes == 4);
}

TEST_CASE("JSON of reductions and transfers", "[plan]") {
  const graph::ExpandedGraph g = mmRelu();
  const ShardPlan p = buildPlan(g, 2, choose({{{1, 1, 2}, {0, 1}}, {{1, 1}, {0}}}));
  const Json ops = operationsToJson(g, p);
  CHECK(ops["mm"]["split"] == Json::parse("[1, 1, 2]"));
  CHECK(ops["mm"]["devices"] == Json::parse("[0, 1]"));
  CHECK(ops["mm"]["shards"][1]["index"] ==
        Json::parse(R"({"start": [0, 0, 2], "end": [8, 6, 4]})"));
  CHECK(ops["mm"]["shards"][1]["selections"]["inputs"]["W"][0]["tensor"] == "w");
  CHECK(reductionsToJson(g, p) == Json::parse(R"([{"op": "mm", "tensor": "h",
    "region": {"start": [0, 0], "end": [8, 6]}, "bytes": 192, "combine": "sum", "device": 0,
    "shards": [0, 1], "steps": [{"from": 1, "into": 0, "transfer": 4}]}])"));
  const Json transfers = transfersToJson(g, p);
  CHECK(transfers[0] == Json::parse(R"({"tensor": "x", "region": {"start": [0, 0], "end": [8, 2]},
    "bytes": 64, "from": "host", "to": 0})"));
  CHECK(transfers[4] == Json::parse(R"({"tensor": "h", "region": {"start": [0, 0], "end": [8, 6]},
    "bytes": 192, "from": 1, "to": 0, "after": {"op": "mm", "shard": 1}, "reduction": 0})"));
}

// Data parallel over rows on 2 devices: both read all of w. In one relay
// group, w crosses the host link once and the receiving device forwards it.
TEST_CASE("graph inputs read alike by a relay group cross the host link once", "[plan]") {
  const graph::ExpandedGraph g = mmRelu();
  const PlanChoice c = choose({{{2, 1, 1}, {0, 1}}, {{2, 1}, {0, 1}}});
  const ShardPlan plain = buildPlan(g, 2, c);
  const ShardPlan relayed = buildPlan(g, 2, c, PlanOptions{InputsOn::Host, {0, 0}});
  const std::size_t w = 1;
  REQUIRE(tensorName(g, w) == "w");
  auto ofW = [&](const ShardPlan& p) {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < p.transfers.size(); ++i) {
      if (p.transfers[i].tensor == w) {
        out.push_back(i);
      }
    }
    return out;
  };
  REQUIRE(ofW(plain).size() == 2);
  for (std::size_t i : ofW(plain)) {
    CHECK(plain.transfers[i].from == kHost);
  }
  const std::vector<std::size_t> both = ofW(relayed);
  REQUIRE(both.size() == 2);
  const Transfer& sent = relayed.transfers[both[0]];
  const Transfer& forwarded = relayed.transfers[both[1]];
  CHECK(sent.from == kHost);
  CHECK_FALSE(sent.afterTransfer);
  // x's rows went to device 0 first, so w goes to device 1, which has had
  // fewer bytes from the host so far, and device 1 forwards it to device 0.
  CHECK(sent.to == 1);
  CHECK(forwarded.from == 1);
  CHECK(forwarded.to == 0);
  CHECK(forwarded.afterTransfer == both[0]);
  CHECK(forwarded.region == sent.region);
  CHECK(forwarded.bytes == sent.bytes);
  // Each shard reads w from the transfer that lands on its own device.
  for (const Shard& shard : relayed.ops[0].shards) {
    int reads = 0;
    for (const Source& s : shard.reads) {
      if (s.tensor == w) {
        REQUIRE(s.kind == Source::Kind::Transfer);
        CHECK(relayed.transfers[s.index].to == shard.device);
        ++reads;
      }
    }
    CHECK(reads == 1);
  }
  // x's halves differ: each still comes from the host.
  for (const Transfer& t : relayed.transfers) {
    if (t.tensor == 0) {
      CHECK(t.from == kHost);
    }
  }
  const Json json = transfersToJson(g, relayed);
  CHECK(json[both[1]]["after"] == Json::parse(R"({"transfer": )" + std::to_string(both[0]) + "}"));
  // Devices of different groups do not relay; the groups must cover the devices.
  CHECK(ofW(buildPlan(g, 2, c, PlanOptions{InputsOn::Host, {0, 1}})).size() == 2);
  for (std::size_t i : ofW(buildPlan(g, 2, c, PlanOptions{InputsOn::Host, {0, 1}}))) {
    CHECK(buildPlan(g, 2, c, PlanOptions{InputsOn::Host, {0, 1}}).transfers[i].from == kHost);
  }
  CHECK_THROWS_WITH(buildPlan(g, 2, c, PlanOptions{InputsOn::Host, {0}}),
                    Contains("1 relay groups for 2 devices"));
  CHECK(relayed.options.relayGroups == std::vector<int>{0, 0});
  // A choice that forwards nothing builds the plain plan under the same
  // options, and its plan (and so its file) has no relay groups.
  PlanChoice direct = c;
  direct.relay = false;
  const ShardPlan unrelayed = buildPlan(g, 2, direct, PlanOptions{InputsOn::Host, {0, 0}});
  CHECK(unrelayed.options.relayGroups.empty());
  CHECK(transfersToJson(g, unrelayed) == transfersToJson(g, plain));
  CHECK(operationsToJson(g, unrelayed) == operationsToJson(g, plain));
}

// Every consumer selection is covered exactly once by the regions it reads, and
// every transfer stays inside its tensor: checked over random transformer plans.
TEST_CASE("random transformer plans are consistent", "[plan]") {
  const graph::ExpandedGraph g = graph::loadAndExpand(
      std::string(TAPESTRY_TESTDATA_DIR) + "/graphs/transformer_block.json", lib());
  std::mt19937 rng(7);
  const int devices = 8;
  int built = 0;
  int relays = 0;
  for (int round = 0; round < 60; ++round) {
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
      for (std::int64_t s = 0; s < shards; ++s) {
        oc.devices.push_back(static_cast<int>(rng() % devices));
      }
      c.ops.push_back(std::move(oc));
    }
    // Every third round from the host, with 8 devices in one relay group and
    // then in two.
    const PlanOptions options{round % 3 == 1   ? InputsOn::Free
                              : round % 3 == 2 ? InputsOn::Constants
                                               : InputsOn::Host,
                              round % 3 != 0   ? std::vector<int>{}
                              : round % 6 == 0 ? std::vector<int>(8, 0)
                                               : std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}};
    ShardPlan p;
    try {
      p = buildPlan(g, devices, c, options);
    } catch (const Error& e) {
      CHECK_THAT(e.message(), Contains("overlapping regions"));
      continue;
    }
    ++built;
    auto regionOf = [&](const Source& s) -> ZRange {
      switch (s.kind) {
      case Source::Kind::Shard:
        for (const auto& port : p.ops[s.index].shards[s.shard].outputs) {
          for (const Selection& sel : port) {
            if (sel.tensor == s.tensor) {
              return sel.range;
            }
          }
        }
        break;
      case Source::Kind::Reduction:
        return p.reductions[s.index].region;
      case Source::Kind::Transfer:
        return p.transfers[s.index].region;
      case Source::Kind::Resident:
        return p.residents[s.index].region;
      }
      FAIL("bad source");
      return ZRange();
    };
    for (const OpPlan& op : p.ops) {
      for (const Shard& shard : op.shards) {
        for (const auto& port : shard.inputs) {
          for (const Selection& sel : port) {
            // Shard tiles and reduction results of one tensor are disjoint, and a
            // transfer's region lies inside its source's, so counting points
            // covered by producer regions (one per source) gives the size.
            std::int64_t covered = 0;
            for (const Source& s : shard.reads) {
              if (s.tensor != sel.tensor) {
                continue;
              }
              covered += regionOf(s).intersection(sel.range).size();
            }
            if (g.tensors[sel.tensor].isGraphInput()) {
              CHECK(covered == sel.range.size());
            } else {
              CHECK(covered >= sel.range.size());
            }
          }
        }
      }
    }
    for (std::size_t i = 0; i < p.transfers.size(); ++i) {
      const Transfer& t = p.transfers[i];
      CHECK(ZRange::fromShape(ZPoint(g.tensors[t.tensor].type.shape)).contains(t.region));
      CHECK(t.from != t.to);
      CHECK(t.bytes == t.region.size() * dtypeSize(g.tensors[t.tensor].type.dtype));
      if (t.afterTransfer) {
        // A relay forwards, within one group, what an earlier transfer brought
        // from the host to its source device.
        ++relays;
        REQUIRE(*t.afterTransfer < i);
        const Transfer& sent = p.transfers[*t.afterTransfer];
        CHECK(sent.from == kHost);
        CHECK(sent.to == t.from);
        CHECK(sent.tensor == t.tensor);
        CHECK(sent.region == t.region);
        CHECK(options.relayGroups.at(static_cast<std::size_t>(t.from)) ==
              options.relayGroups.at(static_cast<std::size_t>(t.to)));
      }
    }
    for (const OpPlan& op : p.ops) {
      for (const Shard& shard : op.shards) {
        for (const Source& s : shard.reads) {
          if (s.kind == Source::Kind::Transfer) {
            // On the shard's device, and submitted before the shard is.
            CHECK(p.transfers[s.index].to == shard.device);
            CHECK(s.index < op.inputTransfers.second);
          }
        }
      }
    }
  }
  CHECK(built > 20);
  CHECK(relays > 0);
}

// ---------------------------------------------------------------- plan files

namespace {

// The plan files under testdata/plans: graph, target, choice.
struct StoredPlan {
  std::string file;
  graph::ExpandedGraph (*graph)();
  PlanChoice (*choice)(const graph::ExpandedGraph&);
  InputsOn inputsOn;
};

graph::ExpandedGraph testdataGraph(const std::string& name) {
  return graph::loadAndExpand(std::string(TAPESTRY_TESTDATA_DIR) + "/graphs/" + name + ".json",
                              lib());
}

PlanChoice mlpChoice(const graph::ExpandedGraph& g) {
  // fc1 split on k (partials on two devices), act and fc2 row-split.
  PlanChoice c = singleDeviceChoice(g);
  for (std::size_t i = 0; i < g.operations.size(); ++i) {
    const graph::Operation& op = g.operations[i];
    if (op.kernel == "matmul" || op.kernel == "linear") {
      c.ops[i].split.back() = 2;
      c.ops[i].devices = {0, 1};
    } else if (op.application.index.rank() > 0 && op.application.index.extent(0) >= 2) {
      c.ops[i].split[0] = 2;
      c.ops[i].devices = {1, 0};
    }
  }
  return c;
}

PlanChoice convnetChoice(const graph::ExpandedGraph& g) {
  // conv1 by output rows (padding halos), conv2 by input channels and pool_w
  // along its axis (reductions), the rest by batch.
  PlanChoice c = singleDeviceChoice(g);
  for (std::size_t i = 0; i < g.operations.size(); ++i) {
    const graph::Operation& op = g.operations[i];
    const std::size_t dim = op.name == "conv1"    ? 2
                            : op.name == "conv2"  ? 4
                            : op.name == "pool_w" ? 3
                                                  : 0;
    if (op.application.index.rank() > dim && op.application.index.extent(dim) >= 2) {
      c.ops[i].split[dim] = 2;
      c.ops[i].devices = {0, 1};
    }
  }
  return c;
}

// A plausible two-GPU machine, written here so that stored plans do not change
// when a built-in target's figures do.
cost::Target twoGpus() {
  cost::Target t;
  t.name = "test-gpu-2";
  t.devices.count = 2;
  t.devices.kind = cost::DeviceKind::Gpu;
  t.devices.memory = std::int64_t{16} << 30;
  t.devices.memoryBandwidth = 1e12;
  t.devices.flops = {{"float32", 2e13}, {"bfloat16", 1e14}};
  t.devices.launchOverhead = 5e-6;
  t.links = cost::LinkSpec{1e11, 2e-6};
  t.host = cost::LinkSpec{2e10, 1e-5};
  return t;
}

const std::vector<StoredPlan>& storedPlans() {
  static const std::vector<StoredPlan> plans = {
      {"plans/mm_relu_2dev.json", mmRelu,
       [](const graph::ExpandedGraph&) {
         return choose({{{2, 1, 2}, {0, 1, 1, 0}}, {{1, 2}, {1, 0}}});
       },
       InputsOn::Host},
      {"plans/mlp_2dev.json", [] { return testdataGraph("mlp"); }, mlpChoice, InputsOn::Host},
      {"plans/convnet_2dev.json", [] { return testdataGraph("convnet"); }, convnetChoice,
       InputsOn::Free},
  };
  return plans;
}

std::string generate(const StoredPlan& s) {
  const graph::ExpandedGraph g = s.graph();
  const cost::Target t = twoGpus();
  const ShardPlan p = buildPlan(g, t.deviceCount(), s.choice(g), PlanOptions{s.inputsOn, {}});
  return writePlan(g, t, p, cost::simulate(g, t, p));
}

} // namespace

TEST_CASE("plan files round trip through the loader", "[plan][file]") {
  const graph::ExpandedGraph g = mmRelu();
  const cost::Target t = tinyTarget(4);
  for (const PlanOptions& options :
       {PlanOptions{InputsOn::Host, {}}, PlanOptions{InputsOn::Free, {}},
        PlanOptions{InputsOn::Constants, {}}, PlanOptions{InputsOn::Host, {0, 0, 0, 0}},
        PlanOptions{InputsOn::Host, {0, 0, 1, 1}}}) {
    const PlanChoice c = choose({{{2, 1, 2}, {0, 1, 2, 3}}, {{1, 2}, {3, 0}}});
    const ShardPlan p = buildPlan(g, 4, c, options);
    const cost::Simulation s = cost::simulate(g, t, p);
    const std::string text = writePlan(g, t, p, s);
    json::Document doc = json::Document::parse(SourceFile("p.json", text));
    const LoadedPlan loaded = decodePlan(json::Value(doc), lib());
    CHECK(loaded.choice == c);
    CHECK(loaded.target == t);
    CHECK(loaded.plan.options == options);
    CHECK(loaded.simulation.objectives == s.objectives);
    CHECK(writePlan(loaded.graph, loaded.target, loaded.plan, loaded.simulation) == text);
    const Json j = Json::parse(text);
    CHECK(j["tapestry"] == "plan/v1");
    CHECK(j["graph"]["tapestry"] == "expanded/v1");
    CHECK(j["options"]["inputs_on"] == inputsOnName(options.inputsOn));
    CHECK(j["objectives"]["transfer_bytes"] == s.objectives.transferBytes);
    // Schedule entries are sorted by start time.
    double last = 0;
    for (const Json& e : j["schedule"]) {
      CHECK(e["start"].get<double>() >= last);
      last = e["start"].get<double>();
    }
  }
}

// Where the device link is faster than the host link, relaying pays once a
// host link carries more than one input: the mlp's data-parallel plan, whose
// devices both read all six weights, on two GPUs. (With one input per host
// link it costs a device-link hop: mm_relu's w alone gains nothing.)
TEST_CASE("relayed inputs make data parallel faster on GPUs", "[plan]") {
  const graph::ExpandedGraph g = testdataGraph("mlp");
  PlanChoice c = singleDeviceChoice(g);
  for (std::size_t i = 0; i < g.operations.size(); ++i) {
    c.ops[i].split[0] = 2;
    c.ops[i].devices = {0, 1};
  }
  const cost::Target t = twoGpus();
  REQUIRE(cost::relayGroups(t) == std::vector<int>{0, 0});
  const ShardPlan plain = buildPlan(g, 2, c);
  const ShardPlan relayed = buildPlan(g, 2, c, PlanOptions{InputsOn::Host, cost::relayGroups(t)});
  const cost::Simulation before = cost::simulate(g, t, plain);
  const cost::Simulation after = cost::simulate(g, t, relayed);
  CHECK(after.objectives.timeS < 0.9 * before.objectives.timeS);
  // The same bytes leave the host only once: half as many as before.
  std::int64_t hostBefore = 0;
  std::int64_t hostAfter = 0;
  for (const Transfer& tr : plain.transfers) {
    hostBefore += tr.from == kHost ? tr.bytes : 0;
  }
  for (const Transfer& tr : relayed.transfers) {
    hostAfter += tr.from == kHost ? tr.bytes : 0;
  }
  CHECK(hostAfter < hostBefore);
  // Not on a CPU target: there the host link is no slower than the devices'.
  CHECK(cost::relayGroups(cost::loadTarget("cpu-2")).empty());
  CHECK(cost::relayGroups(cost::loadTarget("h100x8")) == std::vector<int>(8, 0));
  std::vector<int> nodes(16, 0);
  std::fill(nodes.begin() + 8, nodes.end(), 1);
  CHECK(cost::relayGroups(cost::loadTarget("2x-h100x8")) == nodes);
}

namespace {

// The diagnostic decodePlan gives for the plan JSON `plan` as `edit` leaves
// it (read as p.json), required to be an input error (exit 1).
std::string decodeFailure(const Json& plan, const std::function<void(Json&)>& edit) {
  Json edited = plan;
  edit(edited);
  json::Document d = json::Document::parse(SourceFile("p.json", edited.dump(2)));
  try {
    decodePlan(json::Value(d), lib());
  } catch (const Error& e) {
    CHECK(e.exitCode() == ExitCode::InvalidInput);
    return e.diagnostic().format();
  }
  FAIL("expected an Error");
  return std::string();
}

} // namespace

// options.relay_groups is read back, checked against the target, and the
// transfers it makes are compared like every other section.
TEST_CASE("plan files: relay groups are checked with their locations", "[plan][file]") {
  const graph::ExpandedGraph g = mmRelu();
  const cost::Target t = tinyTarget(4);
  const PlanChoice c = choose({{{4, 1, 1}, {0, 1, 2, 3}}, {{4, 1}, {0, 1, 2, 3}}});
  const ShardPlan p = buildPlan(g, 4, c, PlanOptions{InputsOn::Host, {0, 0, 0, 0}});
  const Json j = Json::parse(writePlan(g, t, p, cost::simulate(g, t, p)));
  REQUIRE(j["options"]["relay_groups"] == Json::parse("[0, 0, 0, 0]"));
  auto failure = [&](const std::function<void(Json&)>& edit) { return decodeFailure(j, edit); };
  CHECK_THAT(failure([](Json& d) { d["options"]["relay_groups"] = Json::parse("[0, 0]"); }),
             Contains("p.json:") &&
                 Contains("relay_groups has 2 entries; the target has 4 devices"));
  CHECK_THAT(failure([](Json& d) { d["options"]["relay_groups"] = Json::parse("[0, 0, 0, 7]"); }),
             Contains("relay group 7 of device 3 is not in [0, 4)"));
  CHECK_THAT(failure([](Json& d) { d["options"]["relay_groups"] = "all"; }),
             Contains("expected an array"));
  // Without the groups the plan's transfers are another plan's.
  CHECK_THAT(failure([](Json& d) { d["options"].erase("relay_groups"); }),
             Contains("at /transfers/"));
}

// testdata/bad/plans: mm_relu_2dev.json with one field edited, as (file, anchor,
// old text, new text): the first `old` after `anchor` becomes `new`.
struct Tamper {
  const char* file;
  const char* anchor;
  const char* from;
  const char* to;
};
const Tamper kTampers[] = {
    {"selection.json", "\"operations\": {",
     R"("W": [{"tensor": "w", "range": {"start": [2, 0], "end": [4, 6]}}])",
     R"("W": [{"tensor": "w", "range": {"start": [2, 0], "end": [3, 6]}}])"},
    {"shard_index.json", "\"operations\": {", R"("index": {"start": [0, 0], "end": [8, 3]})",
     R"("index": {"start": [0, 0], "end": [8, 2]})"},
    {"device.json", "\"act\": {", R"("device": 0)", R"("device": 1)"},
    {"bad_split.json", "\"act\": {", R"("split": [1, 2])", R"("split": [1, 9])"},
    {"transfer_region.json", "\"transfers\": [", R"("region": {"start": [0, 0], "end": [8, 4]})",
     R"("region": {"start": [0, 0], "end": [8, 3]})"},
    {"schedule_task.json", "\"kind\": \"shard\"", R"("device": 0)", R"("device": 1)"},
};
// testdata/plans/stale: the same plan with a prediction edited, as another
// version's cost model would have predicted it: loaded with a warning.
const Tamper kStale[] = {
    {"objective.json", "\"objectives\": {", R"("time_s": 4.4013472000000005e-05)",
     R"("time_s": 4.5e-05)"},
    {"peak_memory.json", "\"objectives\": {", R"("peak_memory_bytes": 512)",
     R"("peak_memory_bytes": 640)"},
    {"schedule_end.json", "\"schedule\": [", R"("end": 1.0006400000000001e-05)",
     R"("end": 1.2e-05)"},
    {"flops.json", "\"graph\": {", R"("flops": 384)", R"("flops": 400)"},
};

namespace {

// `text` with the first `t.from` after `t.anchor` replaced by `t.to`.
std::string tampered(std::string text, const Tamper& t) {
  const std::size_t anchor = text.find(t.anchor);
  REQUIRE(anchor != std::string::npos);
  const std::size_t at = text.find(t.from, anchor);
  REQUIRE(at != std::string::npos);
  text.replace(at, std::string(t.from).size(), t.to);
  return text;
}

} // namespace

// Regenerates testdata/plans, testdata/plans/stale and testdata/bad/plans (run by hand after a
// deliberate change of the format, the standard library or the cost model:
// unit_plan "[.generate]"; then update the expected messages below).
TEST_CASE("generate stored plans", "[.generate]") {
  const std::string dir = TAPESTRY_TESTDATA_DIR;
  for (const StoredPlan& s : storedPlans()) {
    const std::string text = generate(s);
    std::ofstream(dir + "/" + s.file, std::ios::binary) << text;
    if (s.file != "plans/mm_relu_2dev.json") {
      continue;
    }
    for (const Tamper& t : kTampers) {
      std::ofstream(dir + "/bad/plans/" + t.file, std::ios::binary) << tampered(text, t);
    }
    for (const Tamper& t : kStale) {
      std::ofstream(dir + "/plans/stale/" + t.file, std::ios::binary) << tampered(text, t);
    }
  }
}

TEST_CASE("stored plans load and are written back byte for byte", "[plan][file]") {
  for (const StoredPlan& s : storedPlans()) {
    INFO(s.file);
    const std::string path = std::string(TAPESTRY_TESTDATA_DIR) + "/" + s.file;
    const LoadedPlan loaded = loadPlan(path, lib());
    CHECK(writePlan(loaded.graph, loaded.target, loaded.plan, loaded.simulation) == readFile(path));
    CHECK(generate(s) == readFile(path));
  }
}

TEST_CASE("plans made with -k embed their user templates and load without them",
          "[plan][file][kernels]") {
  metakernel::MetakernelLibrary withUser = lib();
  withUser.addFile(SourceFile("my/ops.yaml", R"(# user kernels
twice:
  doc: result = 2 * input.
  inputs:
    input: {shape: "[$s...]", dtype: "$dtype"}
  index: "[$s...]"
  outputs:
    result: {dtype: "$dtype"}
  cost: {flops: 1}
unused:
  inputs:
    input: {shape: "[$n]", dtype: "$dtype"}
  index: "[$n]"
  outputs:
    result: {dtype: "$dtype"}
)"));
  const std::string graphText = R"({"tapestry": "graph/v1", "name": "t",
    "tensors": {"x": {"dtype": "float32", "shape": [4, 8]}},
    "operations": [{"name": "a", "kernel": "twice", "inputs": {"input": "x"}, "outputs": {"result": "y"}},
                   {"name": "b", "kernel": "relu", "inputs": {"input": "y"}, "outputs": {"result": "z"}}]})";
  json::Document graphDoc = json::Document::parse(SourceFile("g.json", graphText));
  const graph::ExpandedGraph g = graph::expand(graph::decodeGraph(json::Value(graphDoc)), withUser);
  const cost::Target t = tinyTarget(2);
  const ShardPlan p = buildPlan(g, 2, singleDeviceChoice(g));
  const cost::Simulation s = cost::simulate(g, t, p);
  const std::string text = writePlan(g, t, p, s, &withUser);
  const Json j = Json::parse(text);
  REQUIRE(j.contains("kernels"));
  CHECK(j["kernels"].size() == 1); // the user kernel the graph uses, not the stdlib's relu
  CHECK(j["kernels"]["twice"]["file"] == "my/ops.yaml");
  CHECK_THAT(j["kernels"]["twice"]["source"].get<std::string>(),
             Contains("twice:") && !Contains("unused"));
  // Without a library the writer embeds nothing (plans of stdlib kernels are unchanged).
  CHECK_FALSE(Json::parse(writePlan(g, t, p, s)).contains("kernels"));

  // The standard library alone loads it, and writes it back byte for byte.
  json::Document doc = json::Document::parse(SourceFile("p.json", text));
  const LoadedPlan loaded = decodePlan(json::Value(doc), lib());
  CHECK(loaded.graph.operations[0].kernel == "twice");
  CHECK(writePlan(loaded.graph, loaded.target, loaded.plan, loaded.simulation, &withUser) == text);

  auto failure = [&](const std::function<void(Json&)>& edit) { return decodeFailure(j, edit); };
  // An embedded template that does not parse points into the plan's text.
  CHECK_THAT(
      failure([](Json& d) { d["kernels"]["twice"]["source"] = "twice:\n  index: \"[$s...\"\n"; }),
      Contains("p.json#/kernels/twice:2:") && Contains("error:"));
  CHECK_THAT(failure([](Json& d) {
               d["kernels"]["twice"]["source"] =
                   "thrice:\n  inputs:\n    input: {shape: \"[$n]\", dtype: \"$d\"}\n"
                   "  index: \"[$n]\"\n  outputs:\n    result: {dtype: \"$d\"}\n";
             }),
             Contains("the embedded source does not define kernel \"twice\""));
  CHECK_THAT(failure([](Json& d) { d["kernels"]["twice"].erase("file"); }),
             Contains("missing required key \"file\""));
  CHECK_THAT(failure([](Json& d) { d["kernels"] = Json::array(); }), Contains("kernels"));
}

namespace {

// Calls check(path, expected message) for each file of testdata/DIR, which must
// be exactly the files `expected` lists.
void forEachListed(const std::string& dir, const std::map<std::string, std::string>& expected,
                   const std::function<void(const std::string&, const std::string&)>& check) {
  std::size_t seen = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(TAPESTRY_TESTDATA_DIR) + "/" + dir)) {
    const std::string name = entry.path().filename().string();
    INFO(name);
    REQUIRE(expected.count(name) == 1);
    ++seen;
    check(entry.path().string(), expected.at(name));
  }
  CHECK(seen == expected.size());
}

} // namespace

TEST_CASE("tampered plan files are located errors", "[plan][file]") {
  // testdata/bad/plans/NAME.json: a stored plan with one field edited.
  const std::map<std::string, std::string> expected = {
      {"selection.json", "at /operations/mm/shards/1/selections/inputs/W/0/range: selection "
                         "zr[2:3, 0:6] does not match the IPF projection zr[2:4, 0:6]"},
      {"shard_index.json", "at /operations/act/shards/0/index: shard index zr[0:8, 0:2] does not "
                           "match the split's tile zr[0:8, 0:3]"},
      {"device.json",
       "at /operations/act/shards/1/device: stored device 1 does not match the rebuilt 0"},
      {"bad_split.json", "at /operations/act: operation act: split [1, 9] cuts dim 1 into 9 parts; "
                         "expected 1 to 6 (the index extent there)"},
      {"transfer_region.json", "at /transfers/0/region: transfer region zr[0:8, 0:3] does not "
                               "match the rebuilt plan's zr[0:8, 0:4]"},
      {"schedule_task.json", "at /schedule/4/device: stored device 1 does not match the rebuilt 0"},
      {"inputs_on.json", "at /options/inputs_on: unknown inputs_on \"cloud\" (expected "
                         "\"host\", \"free\" or \"constants\")"},
  };
  forEachListed("bad/plans", expected, [&](const std::string& path, const std::string& message) {
    try {
      loadPlan(path, lib());
      FAIL("expected an Error");
    } catch (const Error& e) {
      CHECK(e.exitCode() == ExitCode::InvalidInput);
      CHECK(e.message() == message);
      CHECK(e.diagnostic().location.line > 0);
      CHECK(e.diagnostic().snippet);
    }
  });
}

// A plan saved by another version of the cost model differs from this one's
// simulation in its predictions only: it loads, with one located warning, and
// carries this version's simulation (written back, it is the plan as this
// version writes it).
TEST_CASE("plans whose predictions differ load with a warning", "[plan][file]") {
  const std::map<std::string, std::string> expected = {
      {"objective.json", "at /objectives/time_s: stored time_s 4.5e-05 does not match the "
                         "simulated 4.4013472000000005e-05"},
      {"peak_memory.json",
       "at /objectives/peak_memory_bytes: stored peak_memory_bytes 640 does not match the "
       "simulated 512"},
      {"schedule_end.json", "at /schedule/0/end: stored end 1.2e-05 does not match the "
                            "simulated 1.0006400000000001e-05"},
      // A kernel's cost formula changed: the graph's flops, not the plan's
      // predictions (the simulation uses this version's flops).
      {"flops.json", "at /graph/operations/0/flops: the stored flops 400 disagrees with the "
                     "expansion, which gives 384 (was the file edited, or expanded with other "
                     "kernels?)"},
  };
  const std::string fresh =
      readFile(std::string(TAPESTRY_TESTDATA_DIR) + "/plans/mm_relu_2dev.json");
  forEachListed("plans/stale", expected, [&](const std::string& path, const std::string& message) {
    const LoadedPlan loaded = loadPlan(path, lib());
    REQUIRE(loaded.warnings.size() == 1);
    const Diagnostic& w = loaded.warnings[0];
    CHECK(w.severity == Severity::Warning);
    CHECK(w.message == message);
    CHECK(w.location.line > 0);
    CHECK(w.snippet);
    REQUIRE(w.notes.size() == 1);
    CHECK_THAT(w.notes[0].message, Contains("by another version, or edited); this version's"));
    CHECK_THAT(w.format(), Contains(": warning: at /") && Contains("\nnote: the "));
    CHECK(writePlan(loaded.graph, loaded.target, loaded.plan, loaded.simulation) == fresh);
  });

  // The schedule's tasks are the plan's structure: a task missing, doubled or
  // unknown is an error; their order, like their times, a prediction.
  const Json j = Json::parse(fresh);
  REQUIRE(j["schedule"][0]["start"] == j["schedule"][1]["start"]);
  REQUIRE(j["schedule"][0]["end"] == j["schedule"][1]["end"]);
  {
    Json swapped = j;
    std::swap(swapped["schedule"][0], swapped["schedule"][1]);
    json::Document d = json::Document::parse(SourceFile("p.json", swapped.dump(2)));
    const LoadedPlan loaded = decodePlan(json::Value(d), lib());
    REQUIRE(loaded.warnings.size() == 1);
    CHECK(loaded.warnings[0].message == "at /schedule/0: this task is entry 1 of the simulated "
                                        "schedule");
  }
  auto failure = [&](const std::function<void(Json&)>& edit) { return decodeFailure(j, edit); };
  CHECK_THAT(failure([](Json& d) { d["schedule"][1] = d["schedule"][0]; }),
             Contains("at /schedule/1: this task is scheduled twice"));
  CHECK_THAT(failure([](Json& d) { d["schedule"][2]["transfer"] = 99; }),
             Contains("at /schedule/2: no such task in the rebuilt plan"));
  CHECK_THAT(failure([](Json& d) { d["schedule"][2]["kind"] = "nap"; }),
             Contains("at /schedule/2/kind: unknown kind \"nap\""));
  CHECK_THAT(failure([](Json& d) { d["schedule"].erase(d["schedule"].size() - 1); }),
             Contains("expected 16 entries (one per task of the rebuilt plan), got 15"));
  CHECK_THAT(failure([](Json& d) { d["schedule"][0]["end"] = "soon"; }),
             Contains("at /schedule/0/end: stored end \"soon\" does not match the simulated"));
  CHECK_THAT(failure([](Json& d) { d["objectives"]["time_s"] = "fast"; }),
             Contains("at /objectives/time_s: stored time_s \"fast\""));
  CHECK_THAT(failure([](Json& d) { d["objectives"]["fast"] = true; }),
             Contains("at /objectives: unknown key \"fast\""));
}

TEST_CASE("Shard counts are limited per operation and per plan", "[plan][limits]") {
  // 17 relus on [512, 512]: each op could be cut into 262144 shards.
  std::string ops;
  for (int i = 0; i < 17; ++i) {
    ops += std::string(i ? "," : "") + "{\"name\": \"r" + std::to_string(i) +
           "\", \"kernel\": \"relu\", \"inputs\": {\"input\": \"t" + std::to_string(i) +
           "\"}, \"outputs\": {\"result\": \"t" + std::to_string(i + 1) + "\"}}";
  }
  const graph::ExpandedGraph g = expandText(
      R"({"tapestry": "graph/v1", "name": "relus", "tensors": {"t0": {"dtype": "float32",
      "shape": [512, 512]}}, "operations": [)" +
      ops + R"(], "outputs": ["t17"]})");
  REQUIRE(g.operations.size() == 17);

  OpChoice tooMany;
  tooMany.split = {512, 256};
  tooMany.devices.assign(512 * 256, 0);
  std::optional<std::string> reason = checkOpChoice(g, 1, 0, tooMany);
  REQUIRE(reason);
  CHECK(*reason == "operation r0: split [512, 256] makes more than 65536 shards (the most "
                   "one operation may have)");

  // 65536 shards per op is allowed; 17 such ops are more than a plan may have.
  OpChoice most;
  most.split = {256, 256};
  most.devices.assign(256 * 256, 0);
  CHECK_FALSE(checkOpChoice(g, 1, 0, most));
  PlanChoice choice;
  choice.ops.assign(17, most);
  reason = checkChoice(g, 1, choice);
  REQUIRE(reason);
  CHECK(*reason == "the plan has 1114112 shards, more than the 1048576 a plan may have");
  // 16 * 65536 + 1 is still one too many; 15 * 65536 + 2 is allowed.
  choice.ops[16].split = {1, 1};
  choice.ops[16].devices = {0};
  CHECK(checkChoice(g, 1, choice) ==
        "the plan has 1048577 shards, more than the 1048576 a plan may have");
  choice.ops[15] = choice.ops[16];
  reason = checkChoice(g, 1, choice);
  CHECK(reason.value_or("") == "");
}
