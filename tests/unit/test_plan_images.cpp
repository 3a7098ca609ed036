// Tests for the images a plan's convolutions copy (plan::Shard::assembled,
// plan::imageRead): which parts of a channels-last region a convolution or a
// pool reads in place, which it copies, and what the cost model charges for
// the copies on a CPU target and not on a GPU one.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/cost/simulator.hpp"
#include "core/cost/target.hpp"
#include "core/graph/expansion.hpp"
#include "core/plan/plan.hpp"
#include "tests/unit/fixtures.hpp"

using namespace tapestry;
using namespace tapestry::testing;
using namespace tapestry::plan;

namespace {

// x [1, 4, 8, 8] -> a = conv 3x3 (padding 1) -> b = conv 3x3 (padding 1);
// d = conv 1x1 stride 2 of a (a ResNet shortcut); p = max pool 2x2 of b.
// Convolutions index [N, O, OH, OW, C, KH, KW]; the pool [N, C, OH, OW, KH, KW].
graph::ExpandedGraph convs() {
  return expandText(R"({"tapestry": "graph/v1", "name": "images",
    "tensors": {"x": {"dtype": "float32", "shape": [1, 4, 8, 8]},
                "w1": {"dtype": "float32", "shape": [4, 4, 3, 3], "constant": true},
                "w2": {"dtype": "float32", "shape": [4, 4, 3, 3], "constant": true},
                "w3": {"dtype": "float32", "shape": [4, 4, 1, 1], "constant": true}},
    "operations": [
      {"name": "a", "kernel": "conv2d", "params": {"padding": [1, 1]},
       "inputs": {"input": "x", "weight": "w1"}, "outputs": {"result": "ha"}},
      {"name": "b", "kernel": "conv2d", "params": {"padding": [1, 1]},
       "inputs": {"input": "ha", "weight": "w2"}, "outputs": {"result": "hb"}},
      {"name": "d", "kernel": "conv2d", "params": {"stride": [2, 2]},
       "inputs": {"input": "ha", "weight": "w3"}, "outputs": {"result": "y"}},
      {"name": "p", "kernel": "maxpool2d", "params": {"kernel": [2, 2], "stride": [2, 2]},
       "inputs": {"input": "hb"}, "outputs": {"result": "z"}}],
    "outputs": ["y", "z"]})");
}

// One device each, all on device 0 unless `split` (op, index dim, devices)
// halves an op along that dim.
struct Halve {
  std::size_t op;
  std::size_t dim;
  std::vector<int> devices;
};

PlanChoice halves(const graph::ExpandedGraph& g, const std::vector<Halve>& cuts) {
  PlanChoice c;
  for (const graph::Operation& op : g.operations) {
    c.ops.push_back(OpChoice{std::vector<std::int64_t>(op.application.index.rank(), 1), {0}});
  }
  for (const Halve& h : cuts) {
    c.ops[h.op].split[h.dim] = 2;
    c.ops[h.op].devices = h.devices;
  }
  return c;
}

std::vector<std::int64_t> assembled(const ShardPlan& p, std::size_t op) {
  std::vector<std::int64_t> out;
  for (const Shard& s : p.ops[op].shards) {
    out.push_back(s.assembled);
  }
  return out;
}

using Bytes = std::vector<std::int64_t>;

// roomyCpuTarget's figures, on devices of `kind`.
cost::Target target(cost::DeviceKind kind) {
  cost::Target t = roomyCpuTarget(2);
  t.devices.kind = kind;
  return t;
}

} // namespace

TEST_CASE("imageRead: convolutions read images densely, pools strided, port 0 only",
          "[plan][layout]") {
  CHECK(imageRead("conv2d", 0) == ImageRead::Dense);
  CHECK(imageRead("conv2d_grouped_act", 0) == ImageRead::Dense);
  CHECK(imageRead("conv2d", 1) == ImageRead::None);
  CHECK(imageRead("maxpool2d", 0) == ImageRead::Strided);
  CHECK(imageRead("global_avgpool", 0) == ImageRead::Strided);
  CHECK(imageRead("relu", 0) == ImageRead::None);
}

TEST_CASE("a convolution copies a part of a region that is not one channels-last block",
          "[plan][layout]") {
  const graph::ExpandedGraph g = convs();
  // One device: every image is read whole, or (the stride-2 shortcut) all but
  // its last row and column, which it takes in (fewer than its stride).
  CHECK(assembled(buildPlan(g, 1, halves(g, {})), 1) == Bytes{0});
  CHECK(assembled(buildPlan(g, 1, halves(g, {})), 2) == Bytes{0});

  // b in column halves on devices 0 and 1 reading a whole on device 0: the
  // shard on device 0 reads columns 0..4 of a's region, not one block (a copy
  // of 1 x 4 x 8 x 5 floats); the one on device 1 reads its transfer whole.
  CHECK(assembled(buildPlan(g, 2, halves(g, {{1, 3, {0, 1}}})), 1) == Bytes{640, 0});
  // Both on device 0: both copy.
  CHECK(assembled(buildPlan(g, 2, halves(g, {{1, 3, {0, 0}}})), 1) == Bytes{640, 640});
  // In row halves of one image: rows of a region are one block.
  CHECK(assembled(buildPlan(g, 2, halves(g, {{1, 2, {0, 0}}})), 1) == Bytes{0, 0});
  // In halves of its input channels (a split reduction): channel parts are not.
  CHECK(assembled(buildPlan(g, 2, halves(g, {{1, 4, {0, 0}}})), 1) == Bytes{512, 512});

  // a and b both in column halves: each b shard's columns span its own tile
  // and the neighbour's column, and cut along columns its pieces would read
  // column ranges of 8-row tiles, not blocks: the executor assembles all 5.
  CHECK(assembled(buildPlan(g, 2, halves(g, {{0, 3, {0, 1}}, {1, 3, {0, 1}}})), 1) ==
        Bytes{640, 640});
  // In row halves the pieces read rows in place (only the halo row's piece
  // is assembled, which is not counted).
  CHECK(assembled(buildPlan(g, 2, halves(g, {{0, 2, {0, 1}}, {1, 2, {0, 1}}})), 1) == Bytes{0, 0});

  // A pool reads any box in place: its column halves of b copy nothing; but
  // b's two column tiles, read through its 2-column windows, it assembles.
  CHECK(assembled(buildPlan(g, 2, halves(g, {{3, 3, {0, 0}}})), 3) == Bytes{0, 0});
  CHECK(assembled(buildPlan(g, 2, halves(g, {{1, 3, {0, 1}}})), 3) == Bytes{1024});
  CHECK(assembled(buildPlan(g, 2, halves(g, {{1, 2, {0, 1}}})), 3) == Bytes{0});
  // The first convolution reads the graph input, which stays row-major.
  CHECK(assembled(buildPlan(g, 2, halves(g, {{0, 3, {0, 0}}})), 0) == Bytes{0, 0});
}

TEST_CASE("the copies cost a read and a write of each byte on a CPU target, nothing on a GPU",
          "[plan][layout][cost]") {
  const graph::ExpandedGraph g = convs();
  const PlanChoice rows = halves(g, {{1, 2, {0, 0}}});
  const PlanChoice columns = halves(g, {{1, 3, {0, 0}}});
  const double bandwidth = target(cost::DeviceKind::Cpu).devices.memoryBandwidth;
  auto time = [&](const PlanChoice& c, cost::DeviceKind kind) {
    return cost::simulate(g, target(kind), buildPlan(g, 2, c)).objectives.timeS;
  };
  // Rows and columns move the same bytes otherwise; in columns b's shards
  // copy 640 bytes each, and the pool assembles b's two column tiles (1024).
  CHECK(assembled(buildPlan(g, 2, columns), 3) == Bytes{1024});
  CHECK(time(columns, cost::DeviceKind::Cpu) - time(rows, cost::DeviceKind::Cpu) ==
        Approx(2 * (640 + 640 + 1024) / bandwidth));
  CHECK(time(columns, cost::DeviceKind::Gpu) == Approx(time(rows, cost::DeviceKind::Gpu)));
}
