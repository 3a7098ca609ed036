// Tests for core/cost/profile and the measured-target parts of targets and the
// simulator: kernel families, interpolation in measured tables, the
// `profile:` section of target YAML and JSON (and its bad forms), the YAML
// writer's round trip, saved-calibration keys, and a simulator that costs
// shards from a hand-made profile (exact times).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <string>

#include "core/cost/profile.hpp"
#include "core/cost/simulator.hpp"
#include "core/cost/target.hpp"
#include "core/plan/plan.hpp"
#include "tests/unit/fixtures.hpp"

using namespace tapestry;
using namespace tapestry::testing;
using namespace tapestry::cost;

namespace {

const char* kBase = R"(name: m
devices: {count: 2, kind: cpu, memory: 1GiB, memory_bandwidth: 256B/s, flops: {float32: 96}, launch_overhead: 0.5s}
links: {bandwidth: 48B/s, latency: 0.5s}
host: {bandwidth: 32B/s, latency: 1s}
)";

Target targetText(const std::string& profile) {
  return loadTargetYaml(SourceFile("t.yaml", std::string(kBase) + profile));
}

Failure badProfile(const std::string& profile) {
  return failureOf([&] { targetText(profile); });
}

} // namespace

TEST_CASE("kernel families: every standard kernel has one, user kernels none") {
  for (const metakernel::Metakernel* k : lib().kernels()) {
    INFO(k->name);
    CHECK(familyOfKernel(k->name) != nullptr);
  }
  CHECK(familyOfKernel("linear")->name == "matmul");
  CHECK(familyOfKernel("concat")->name == "copy");
  CHECK(familyOfKernel("tanh")->name == "activation");
  CHECK(familyOfKernel("layernorm")->measure == WorkMeasure::Bytes);
  CHECK(familyOfKernel("conv2d")->measure == WorkMeasure::Flops);
  CHECK(familyOfKernel("conv2d_act")->name == "conv"); // the fused epilogue: conv2d's flops
  CHECK(familyOfKernel("my_rmsnorm") == nullptr);
  // A composed fuse(P, C) is P's work; C prices as an epilogue pass.
  CHECK(familyOfKernel("fuse(conv2d, sigmoid)")->name == "conv");
  CHECK(familyOfKernel("fuse(fuse(matmul, add.A), clip)")->name == "matmul");
  CHECK(familyOfKernel("fuse(my_rmsnorm, relu)") == nullptr);
}

TEST_CASE("interpolation: log-log between points, flat below, proportional above") {
  const std::vector<ProfilePoint> points = {{100, 1}, {400, 16}, {1600, 32}};
  CHECK(interpolateTime(points, 100) == 1);
  CHECK(interpolateTime(points, 10) == 1);          // latency-bound: the smallest time
  CHECK(interpolateTime(points, 200) == Approx(4)); // half way in log: sqrt(1 * 16)
  CHECK(interpolateTime(points, 400) == Approx(16));
  CHECK(interpolateTime(points, 800) == Approx(std::sqrt(16.0 * 32.0)));
  CHECK(interpolateTime(points, 3200) == Approx(64)); // the largest size's rate
  CHECK(interpolateTime({}, 5) == 0);

  ProfileTable table{WorkMeasure::Flops, {{100, 1}, {400, 4}}, {{100, 4}, {400, 16}}};
  CHECK(table.time(100, 0) == 1);
  CHECK(table.time(100, 1) == 4);
  CHECK(table.time(100, 0.5) == Approx(2)); // geometric between alone and all
  table.all.clear();
  CHECK(table.time(400, 1) == 4);
}

TEST_CASE("profile: YAML and JSON read the same, and toYaml reads back equal") {
  const Target t = targetText(R"(profile:
  machine: "Test CPU, 2 cores"
  backend: cpu
  date: "2026-11-24"
  devices: 2
  task_overhead: 3us
  start_overhead: 40us
  spread: 0.15
  spread_by_time: [[2e-5, 0.3], [2e-3, 0.04]]
  spread_by_family: {matmul: 0.03, elementwise: 0.4}
  thread_scaling: {matmul: 1.7, conv: 1.9}
  copies: {on_device: false, links: [[4096, 1e-6]], host_all: [[4096, 4e-6], [8192, 5e-6]]}
  last_level_cache: 32MiB
  pass_difference: 0.04
  pass_difference_max: 0.9
  kernels:
    matmul: {size: flops, alone: [[1e3, 1e-6], [1e9, 2e-2]], all: [[1e3, 2e-6], [1e9, 3e-2]]}
    elementwise: {size: bytes, alone: [[4096, 1e-6]]}
    sigmoid: {size: bytes, alone: [[4096, 2e-7]]}
)");
  REQUIRE(t.profile);
  const Profile& p = *t.profile;
  CHECK(p.machine == "Test CPU, 2 cores");
  CHECK(p.backend == "cpu");
  CHECK(p.devices == 2);
  CHECK(p.taskOverhead == Approx(3e-6));
  CHECK(p.startOverhead == Approx(40e-6));
  CHECK(p.spread == Approx(0.15));
  REQUIRE(p.spreadByTime.size() == 2);
  CHECK(p.spreadByTime[1].time == Approx(2e-3));
  CHECK(p.spreadByTime[1].spread == Approx(0.04));
  CHECK(p.spreadByFamily.at("elementwise") == Approx(0.4));
  CHECK(p.threadScaling.at("conv") == Approx(1.9));
  CHECK_FALSE(p.copiesOnDevice);
  CHECK(p.linkCopies.size() == 1);
  CHECK(p.hostCopiesAll.size() == 2);
  CHECK(p.linkCopiesAll.empty());
  CHECK(p.cacheBytes == 32 << 20);
  CHECK(p.passDifference == Approx(0.04));
  CHECK(p.passDifferenceMax == Approx(0.9));
  REQUIRE(p.table("matmul") != nullptr);
  CHECK(p.table("matmul")->alone.size() == 2);
  CHECK(p.table("matmul")->all[1].seconds == 3e-2);
  CHECK(p.table("elementwise")->all.empty());
  CHECK(p.table("conv") == nullptr);
  // A kernel measured apart from its family costs with its own table.
  CHECK(p.tableFor("sigmoid") == p.table("sigmoid"));
  CHECK(p.table("sigmoid")->alone[0].seconds == 2e-7);
  CHECK(p.tableFor("linear") == p.table("matmul"));
  CHECK(p.tableFor("tanh") == nullptr); // no activation table
  CHECK(p.tableFor("my_rmsnorm") == nullptr);

  const json::Document doc = json::Document::parse(SourceFile("t.json", toJson(t).dump()));
  CHECK(targetFromJson(json::Value(doc)) == t);
  CHECK(loadTargetYaml(SourceFile("again.yaml", toYaml(t))) == t);
}

TEST_CASE("toYaml: built-in targets read back equal") {
  for (const std::string& name : builtinTargetNames()) {
    INFO(name);
    const Target t = loadTarget(name);
    CHECK(loadTargetYaml(SourceFile("again.yaml", toYaml(t))) == t);
  }
}

TEST_CASE("bad profiles: located errors, exit 1") {
  const Failure family = badProfile(R"(profile:
  backend: cpu
  devices: 2
  task_overhead: 1us
  kernels: {matmull: {size: flops, alone: [[1, 1]]}}
)");
  CHECK(family.code == ExitCode::InvalidInput);
  CHECK(family.location == "t.yaml:9:13");
  // The families, then every standard kernel in the family table's order.
  CHECK(
      family.message.rfind(
          "unknown key \"matmull\" in profile.kernels (expected one of: matmul, conv, "
          "conv_weights, elementwise, activation, reduction, normalization, copy, transpose, "
          "linear, linear_act, attention, "
          "attention_masked, attention_heads, attention_heads_masked, attention_heads_qkv, "
          "attention_heads_qkv_masked, attention_heads_seq_first, attention_heads_qkv_seq_first, "
          "conv2d, conv2d_act, conv2d_grouped, conv2d_grouped_act, add, sub, mul, div, relu, neg, "
          "cast, "
          "sqrt, "
          "reciprocal, abs, clip, "
          "add_scalar, mul_scalar, rsub_scalar, rdiv_scalar, div_scalar, where, ",
          0) == 0);
  for (const char* k : {" maximum,", " logical_not,", " prelu,", " gelu,", " pow_scalar,",
                        " atanh,", " celu,", " maxpool2d,", " reshape,"}) {
    CHECK(family.message.find(k) != std::string::npos);
  }
  CHECK(family.message.size() > 7);
  CHECK(family.message.substr(family.message.size() - 7) == "gather)");
  CHECK(badProfile("profile:\n  backend: cpu\n  devices: 2\n  task_overhead: 1us\n  kernels:\n"
                   "    sigmoid: {size: flops, alone: [[1, 1]]}\n")
            .message ==
        "profile.kernels.sigmoid.size must be bytes for activation kernels, got \"flops\"");

  CHECK(badProfile("profile:\n  backend: cpu\n  devices: 2\n  task_overhead: 1us\n  kernels:\n"
                   "    matmul: {size: bytes, alone: [[1, 1]]}\n")
            .message ==
        "profile.kernels.matmul.size must be flops for matmul kernels, got \"bytes\"");
  CHECK(badProfile("profile:\n  backend: cpu\n  devices: 2\n  task_overhead: 1us\n  kernels:\n"
                   "    matmul: {size: flops, alone: [[8, 1], [4, 2]]}\n")
            .message == "profile.kernels.matmul.alone[1][0]: sizes must increase, but \"4\" "
                        "follows 8");
  CHECK(badProfile("profile:\n  backend: cpu\n  devices: 2\n  task_overhead: 1us\n  kernels:\n"
                   "    matmul: {size: flops, alone: [[8, 1, 3]]}\n")
            .message ==
        "profile.kernels.matmul.alone[0]: expected [size, seconds], a list of 2 numbers, got 3");
  CHECK(badProfile("profile:\n  backend: cpu\n  devices: 2\n  task_overhead: 1us\n  kernels:\n"
                   "    matmul: {size: flops, alone: [[8, -1]]}\n")
            .message == "profile.kernels.matmul.alone[0][1] must be greater than 0, got \"-1\"");
  CHECK(badProfile("profile:\n  backend: cpu\n  devices: 2\n  task_overhead: 1us\n  kernels:\n"
                   "    matmul: {size: flops, alone: [[8, fast]]}\n")
            .message == "profile.kernels.matmul.alone[0][1]: bad number \"fast\"");
  CHECK(badProfile("profile:\n  backend: cpu\n  devices: 2\n  task_overhead: 1us\n  kernels:\n"
                   "    matmul: {size: flops, alone: []}\n")
            .message == "profile.kernels.matmul.alone: expected at least one [size, seconds] pair");
  CHECK(badProfile("profile:\n  backend: tpu\n  devices: 2\n  task_overhead: 1us\n  kernels: {}\n")
            .message == "profile.backend must be cpu or cuda, got \"tpu\"");
  CHECK(badProfile("profile:\n  backend: cpu\n  devices: 2\n  kernels: {}\n").message ==
        "profile: missing required key \"task_overhead\"");
  CHECK(badProfile("profile:\n  backend: cpu\n  devices: 2\n  task_overhead: 1us\n  kernels:\n"
                   "    matmul: {size: flops, alone: fast}\n")
            .message == "profile.kernels.matmul.alone: expected a list, got string");
  CHECK(badProfile("profile:\n  backend: cpu\n  devices: 2\n  task_overhead: 1us\n"
                   "  copies: {on_device: sometimes}\n  kernels: {}\n")
            .message == "profile.copies.on_device: expected true or false, got \"sometimes\"");
  CHECK(targetText("profile:\n  backend: cpu\n  devices: 2\n  task_overhead: 1us\n  kernels: {}\n")
            .profile->copiesOnDevice); // Tapestry's executors copy on the destination's worker
  const std::string head = "profile:\n  backend: cpu\n  devices: 2\n  task_overhead: 1us\n";
  const Failure order = badProfile(head + "  spread_by_time: [[1e-3, 0.1], [1e-4, 0.2]]\n");
  CHECK(order.message == "profile.spread_by_time[1][0]: times must increase, but \"1e-4\" follows "
                         "0.001");
  CHECK(order.location == "t.yaml:9:34"); // the second time
  CHECK(badProfile(head + "  spread_by_time: [[1e-3, -0.1]]\n").message ==
        "profile.spread_by_time[0][1] must not be negative, got \"-0.1\"");
  CHECK(badProfile(head + "  spread_by_time: [[0, 0.1]]\n").message ==
        "profile.spread_by_time[0][0] must be greater than 0, got \"0\"");
  CHECK(badProfile(head + "  spread_by_time: [[1e-3]]\n").message ==
        "profile.spread_by_time[0]: expected [seconds, spread], a list of 2 numbers, got 1");
  CHECK(badProfile(head + "  spread_by_time: []\n").message ==
        "profile.spread_by_time: expected at least one [seconds, spread] pair");
  CHECK(badProfile(head + "  pass_difference: -0.1\n").message ==
        "profile.pass_difference must not be negative, got \"-0.1\"");
  CHECK(badProfile(head + "  last_level_cache: 0B\n").message ==
        "profile.last_level_cache must be greater than 0, got \"0B\"");
  CHECK(badProfile(head + "  last_level_cache: 32MHz\n").message.find("last_level_cache") !=
        std::string::npos);
  CHECK(badProfile(head + "  spread_by_family: {matmul: -1}\n").message ==
        "profile.spread_by_family.matmul must not be negative, got \"-1\"");
  CHECK(badProfile(head + "  spread_by_family: {gemm: 0.1}\n")
            .message.rfind("unknown key \"gemm\" in profile.spread_by_family (expected one of: "
                           "matmul, conv, ",
                           0) == 0);
}

TEST_CASE("the spread by size: interpolated in log(time), the ends held, else the one spread") {
  Profile p;
  p.spread = 0.2;
  CHECK(p.spreadAt(1e-3) == 0.2); // no spread by size: the one spread
  p.spreadByTime = {{1e-5, 0.4}, {1e-3, 0.1}, {1e-1, 0.02}};
  CHECK(p.spreadAt(1e-6) == 0.4); // below the smallest graph: its spread
  CHECK(p.spreadAt(1e-5) == 0.4);
  CHECK(p.spreadAt(1e-4) == Approx(0.25)); // halfway in log(time)
  CHECK(p.spreadAt(1e-3) == Approx(0.1));
  CHECK(p.spreadAt(1e-2) == Approx(0.06));
  CHECK(p.spreadAt(5.0) == 0.02); // above the largest: its spread
  CHECK(p.spreadAt(0) == 0.2);    // no time: the one spread

  // By family: each family's spread weighted by its share of the graph's
  // one-device time; families without one (and kernels of none, "") take
  // the spread by size at the graph's time.
  CHECK(p.spreadFor({}, 1e-3) == Approx(0.1)); // no times: spreadAt
  CHECK(p.spreadFor({{"matmul", 3e-3}, {"elementwise", 1e-3}}, 4e-3) ==
        Approx(p.spreadAt(4e-3))); // no spread by family yet
  p.spreadByFamily = {{"matmul", 0.02}, {"elementwise", 0.5}};
  CHECK(p.spreadFor({{"matmul", 3e-3}, {"elementwise", 1e-3}}, 4e-3) ==
        Approx((3 * 0.02 + 1 * 0.5) / 4));
  CHECK(p.spreadFor({{"matmul", 1e-3}, {"", 1e-3}, {"copy", 0.0}}, 1e-3) ==
        Approx((0.02 + 0.1) / 2));
}

TEST_CASE("a stream floor is in proportion to size below its smallest point") {
  const ProfileTable t{WorkMeasure::Bytes, {{100, 2}, {400, 4}}, {{100, 3}, {400, 6}}};
  CHECK(t.time(50, 0) == 2);         // a kernel's table: its latency
  CHECK(t.streamTime(50, 0) == 1);   // a floor: the smallest point's rate
  CHECK(t.streamTime(50, 1) == 1.5); // with every device busy, the `all` rate
  CHECK(t.streamTime(200, 0) == Approx(t.time(200, 0)));
  CHECK(t.streamTime(800, 1) == Approx(12)); // above: in proportion, as time()
}

TEST_CASE("the floor of a FLOPs-measured kernel: conv_weights for convolutions") {
  Profile p;
  p.kernels["matmul"] = ProfileTable{WorkMeasure::Flops, {{1, 1}}, {}};
  p.kernels["conv"] = ProfileTable{WorkMeasure::Flops, {{1, 1}}, {}};
  p.kernels["elementwise"] = ProfileTable{WorkMeasure::Bytes, {{1, 1}}, {}};
  CHECK(p.floorFor("conv2d") == p.table("elementwise")); // no conv_weights table
  p.kernels["conv_weights"] = ProfileTable{WorkMeasure::Bytes, {{1, 2}}, {}};
  CHECK(p.floorFor("conv2d") == p.table("conv_weights"));
  CHECK(p.floorFor("conv2d_act") == p.table("conv_weights"));
  CHECK(p.floorFor("matmul") == p.table("elementwise"));
  CHECK(p.floorFor("linear") == p.table("elementwise"));
  CHECK(p.floorFor("add") == nullptr);             // measured by bytes itself
  CHECK(p.floorFor("my_rmsnorm") == nullptr);      // no family: the roofline, no floor
  CHECK(familyOfKernel("conv2d")->name == "conv"); // conv_weights has no kernels of its own
  CHECK(kernelsOfFamily("conv_weights").empty());
  CHECK(findKernelFamily("conv_weights")->measure == WorkMeasure::Bytes);
}

TEST_CASE("simulator: a convolution that reads many weights runs at the conv_weights rate") {
  // x [1, 2, 2, 2] * w [8, 2, 3, 3] (padding 1) -> y [1, 8, 2, 2]: 2304 FLOP;
  // 32 + 576 + 128 = 736 bytes.
  const graph::ExpandedGraph g = expandText(R"({"tapestry": "graph/v1", "name": "conv",
  "tensors": {"x": {"dtype": "float32", "shape": [1, 2, 2, 2]},
              "w": {"dtype": "float32", "shape": [8, 2, 3, 3]}},
  "operations": [{"name": "conv", "kernel": "conv2d", "params": {"padding": [1, 1]},
                  "inputs": {"input": "x", "weight": "w"}, "outputs": {"result": "y"}}],
  "outputs": ["y"]})");
  Target t = targetText("");
  Profile p;
  p.backend = "cpu";
  p.devices = 2;
  p.kernels["conv"] = ProfileTable{WorkMeasure::Flops, {{2304, 1}}, {}};
  p.kernels["elementwise"] = ProfileTable{WorkMeasure::Bytes, {{736, 0.5}}, {}};
  t.profile = p;
  plan::PlanOptions free;
  free.inputsOn = plan::InputsOn::Free;
  const plan::ShardPlan one = plan::buildPlan(g, 2, plan::singleDeviceChoice(g), free);
  CHECK(plan::summarize(g, one).shards.at(0).bytes == 736);
  // By FLOPs 1 s; streaming its bytes as an elementwise pass, 0.5 s.
  CHECK(simulate(g, t, one).objectives.timeS == 1);
  // Measured on convolutions of many weights: 736 bytes take 4 s (at 1472
  // bytes, 8 s: in proportion below the smallest point).
  t.profile->kernels["conv_weights"] = ProfileTable{WorkMeasure::Bytes, {{1472, 8}}, {}};
  CHECK(simulate(g, t, one).objectives.timeS == 4);
}

TEST_CASE("simulator: constants beyond the last-level cache are read at the memory rate") {
  // x [2, 4] @ w [4, 1000] -> y [2, 1000]: 16000 FLOP; 32 + 16000 + 8000 =
  // 24032 bytes, of which w's 16000 are a constant input.
  const std::string text = R"({"tapestry": "graph/v1", "name": "weights",
  "tensors": {"x": {"dtype": "float32", "shape": [2, 4]},
              "w": {"dtype": "float32", "shape": [4, 1000], "constant": true}},
  "operations": [{"name": "mm", "kernel": "matmul", "inputs": {"X": "x", "W": "w"},
                  "outputs": {"result": "y"}}],
  "outputs": ["y"]})";
  const graph::ExpandedGraph g = expandText(text);
  Target t = targetText("");
  Profile p;
  p.backend = "cpu";
  p.devices = 2;
  p.kernels["matmul"] = ProfileTable{WorkMeasure::Flops, {{16000, 1e-3}}, {}};
  // Streaming 24032 bytes takes 2 ms; past the cache, 1 us per byte.
  p.kernels["elementwise"] = ProfileTable{WorkMeasure::Bytes, {{24032, 2e-3}, {1e6, 1.0}}, {}};
  t.profile = p;
  plan::PlanOptions free;
  free.inputsOn = plan::InputsOn::Free;
  const plan::ShardPlan one = plan::buildPlan(g, 2, plan::singleDeviceChoice(g), free);
  const plan::PlanTasks tasks = plan::summarize(g, one);
  CHECK(tasks.constantBytes == 16000);
  CHECK(tasks.shards.at(0).constant == 16000);
  // No cache size: the bytes floor (2 ms) over the FLOPs (1 ms).
  CHECK(simulate(g, t, one).objectives.timeS == Approx(2e-3));
  // 16000 bytes of constants outgrow an 8000-byte cache: read at 1 us a byte.
  t.profile->cacheBytes = 8000;
  CHECK(simulate(g, t, one).objectives.timeS == Approx(16000 * 1e-6));
  // Split by w's columns, each device reads half of them, at once.
  plan::PlanChoice halves = plan::singleDeviceChoice(g);
  halves.ops[0] = plan::OpChoice{{1, 2, 1}, {0, 1}};
  const plan::ShardPlan split = plan::buildPlan(g, 2, halves, free);
  CHECK(plan::summarize(g, split).shards.at(1).constant == 8000);
  ChoiceSimulator evaluator(g, t, free); // the search's path counts them alike
  CHECK(evaluator.builder().tasks(halves) == plan::summarize(g, split));
  CHECK(simulate(g, t, split).objectives.timeS == Approx(8000 * 1e-6));
  // Constants that fit the cache, or a table that never left it: no floor.
  t.profile->cacheBytes = 16000;
  CHECK(simulate(g, t, one).objectives.timeS == Approx(2e-3));
  t.profile->cacheBytes = 8000;
  t.profile->kernels["elementwise"].alone = {{24032, 2e-3}};
  CHECK(simulate(g, t, one).objectives.timeS == Approx(2e-3));
  // A weight that is not constant is not counted.
  t.profile->kernels["elementwise"].alone = {{24032, 2e-3}, {1e6, 1.0}};
  std::string loose = text;
  loose.replace(loose.find(", \"constant\": true"), 18, "");
  const graph::ExpandedGraph h = expandText(loose);
  const plan::ShardPlan both = plan::buildPlan(h, 2, plan::singleDeviceChoice(h), free);
  CHECK(plan::summarize(h, both).constantBytes == 0);
  CHECK(simulate(h, t, both).objectives.timeS == Approx(2e-3));
}

TEST_CASE("simulator: conv2d_act's SiLU is priced at the silu table over its result, its "
          "HardSwish and clip not") {
  // x [1, 2, 4, 4] * w [3, 2, 1, 1] -> y [1, 3, 4, 4]: 96 points of 2 * 2 FLOP
  // (conv2d_act's cost is 2 per index point, 2 channels each): 192 FLOP; the
  // result is 192 bytes, read and written by the SiLU: 384 bytes.
  const std::string text = R"({"tapestry": "graph/v1", "name": "c",
  "tensors": {"x": {"dtype": "float32", "shape": [1, 2, 4, 4]},
              "w": {"dtype": "float32", "shape": [3, 2, 1, 1]}},
  "operations": [{"name": "c", "kernel": "conv2d_act", "params": {"silu": true},
                  "inputs": {"input": "x", "weight": "w"}, "outputs": {"result": "y"}}],
  "outputs": ["y"]})";
  const graph::ExpandedGraph g = expandText(text);
  CHECK(plan::epilogueKernel(g.operations[0]) == "silu");
  Target t = targetText("");
  Profile p;
  p.backend = "cpu";
  p.devices = 1;
  p.kernels["conv"] = ProfileTable{WorkMeasure::Flops, {{192, 1e-3}}, {}};
  p.kernels["silu"] = ProfileTable{WorkMeasure::Bytes, {{384, 2e-3}}, {}};
  t.profile = p;
  plan::PlanOptions free;
  free.inputsOn = plan::InputsOn::Free;
  const plan::ShardPlan one = plan::buildPlan(g, 1, plan::singleDeviceChoice(g), free);
  CHECK(simulate(g, t, one).objectives.timeS == Approx(3e-3)); // conv 1 ms + SiLU 2 ms
  for (const char* other : {R"("hard_swish": true)", R"("min": 0.0)"}) {
    std::string changed = text;
    changed.replace(changed.find(R"("silu": true)"), 12, other);
    const graph::ExpandedGraph h = expandText(changed);
    INFO(other);
    CHECK(plan::epilogueKernel(h.operations[0]).empty());
    const plan::ShardPlan plan = plan::buildPlan(h, 1, plan::singleDeviceChoice(h), free);
    CHECK(simulate(h, t, plan).objectives.timeS == Approx(1e-3));
  }
}

TEST_CASE("simulator: linear_act's GELU is priced at the gelu table over its result") {
  // x [4, 8] . w [8, 16] + b -> y [4, 16]: 64 points of 2*8 + 2 FLOP = 1152
  // FLOP; the result is 256 bytes, read and written by the GELU: 512 bytes.
  const std::string text = R"({"tapestry": "graph/v1", "name": "mlp",
  "tensors": {"x": {"dtype": "float32", "shape": [4, 8]},
              "w": {"dtype": "float32", "shape": [8, 16]},
              "b": {"dtype": "float32", "shape": [16]}},
  "operations": [{"name": "up", "kernel": "linear_act", "params": {"gelu": true},
                  "inputs": {"X": "x", "W": "w", "bias": "b"}, "outputs": {"result": "y"}}],
  "outputs": ["y"]})";
  const graph::ExpandedGraph g = expandText(text);
  CHECK(plan::epilogueKernel(g.operations[0]) == "gelu");
  Target t = targetText("");
  Profile p;
  p.backend = "cpu";
  p.devices = 2;
  p.kernels["matmul"] = ProfileTable{WorkMeasure::Flops, {{1152, 1e-3}}, {}};
  p.kernels["gelu"] = ProfileTable{WorkMeasure::Bytes, {{512, 4e-3}}, {}};
  t.profile = p;
  plan::PlanOptions free;
  free.inputsOn = plan::InputsOn::Free;
  const plan::ShardPlan one = plan::buildPlan(g, 2, plan::singleDeviceChoice(g), free);
  CHECK(simulate(g, t, one).objectives.timeS == Approx(5e-3)); // product 1 ms + GELU 4 ms
  // Split by rows on 2 devices: the search's evaluator and the plan agree.
  plan::PlanChoice halves = plan::singleDeviceChoice(g);
  halves.ops[0] = plan::OpChoice{{2, 1}, {0, 1}};
  const plan::ShardPlan split = plan::buildPlan(g, 2, halves, free);
  ChoiceSimulator evaluator(g, t, free); // the search's path prices it alike
  CHECK(evaluator.builder().tasks(halves) == plan::summarize(g, split));
  CHECK(evaluator.evaluate(halves).timeS == Approx(simulate(g, t, split).objectives.timeS));
  // Without the GELU, or without a gelu table: the product alone.
  t.profile->kernels.erase("gelu");
  CHECK(simulate(g, t, one).objectives.timeS == Approx(1e-3));
  std::string plain = text;
  plain.replace(plain.find(R"("gelu": true)"), 12, R"("min": 0.0)");
  const graph::ExpandedGraph h = expandText(plain);
  CHECK(plan::epilogueKernel(h.operations[0]).empty());
  // GELU's tanh approximation: priced at gelu_tanh's table (its family's here).
  std::string tanhGelu = text;
  tanhGelu.replace(tanhGelu.find(R"("gelu": true)"), 12, R"("gelu_tanh": true)");
  CHECK(plan::epilogueKernel(expandText(tanhGelu).operations[0]) == "gelu_tanh");
  t.profile->kernels["gelu"] = ProfileTable{WorkMeasure::Bytes, {{512, 4e-3}}, {}};
  const plan::ShardPlan relu = plan::buildPlan(h, 2, plan::singleDeviceChoice(h), free);
  CHECK(simulate(h, t, relu).objectives.timeS == Approx(1e-3));
}

TEST_CASE("simulator: a composed fuse(P, C) is P's family, then a pass of C per consumer") {
  // x [4, 8] @ w [8, 16] -> [4, 16]: 512 points of 2 FLOP (tanh's and the
  // add's per-point share rounds to 0); the result is 256 bytes, so each
  // pass over it reads and writes 512.
  auto graphOf = [](const std::string& kernel, const std::string& more) {
    return expandText(R"({"tapestry": "graph/v1", "name": "fused",
    "tensors": {"x": {"dtype": "float32", "shape": [4, 8]},
                "w": {"dtype": "float32", "shape": [8, 16]},
                "b": {"dtype": "float32", "shape": [16]}},
    "operations": [{"name": "mm", "kernel": ")" +
                      kernel + R"(", "inputs": {"X": "x", "W": "w")" + more +
                      R"(}, "outputs": {"result": "y"}}],
    "outputs": ["y"]})");
  };
  const graph::ExpandedGraph g = graphOf("fuse(matmul, tanh)", "");
  CHECK(plan::epilogueKernel(g.operations[0]) == "tanh");
  CHECK(g.operations[0].application.flops == 1024);
  Target t = targetText("");
  Profile p;
  p.backend = "cpu";
  p.devices = 2;
  p.kernels["matmul"] = ProfileTable{WorkMeasure::Flops, {{1024, 1e-3}}, {}};
  p.kernels["tanh"] = ProfileTable{WorkMeasure::Bytes, {{512, 4e-3}}, {}};
  t.profile = p;
  plan::PlanOptions free;
  free.inputsOn = plan::InputsOn::Free;
  const plan::ShardPlan one = plan::buildPlan(g, 2, plan::singleDeviceChoice(g), free);
  CHECK(simulate(g, t, one).objectives.timeS == Approx(5e-3)); // product 1 ms + tanh 4 ms
  // Nested: the bias add and the tanh are two passes (both at tanh's table).
  const graph::ExpandedGraph h = graphOf("fuse(fuse(matmul, add.A), tanh)", R"(, "add_B": "b")");
  CHECK(plan::epilogueKernel(h.operations[0]) == "tanh");
  const plan::ShardPlan nested = plan::buildPlan(h, 2, plan::singleDeviceChoice(h), free);
  CHECK(simulate(h, t, nested).objectives.timeS == Approx(9e-3));
  ChoiceSimulator evaluator(h, t, free); // the search's path prices it alike
  CHECK(evaluator.evaluate(plan::singleDeviceChoice(h)).timeS == Approx(9e-3));
}

TEST_CASE("simulator: a batched product is priced per product on a CPU profile") {
  // x [2, 3, 4, 8] @ w [2, 3, 8, 5]: index [2, 3, 4, 5, 8], 6 products of
  // 2*4*5*8 = 320 FLOP, 1920 in all. The CPU backend makes one gemm call per
  // product, so a CPU profile prices 6 calls of 320 FLOP.
  auto graphOf = [](const std::string& w) {
    return expandText(R"({"tapestry": "graph/v1", "name": "bmm",
    "tensors": {"x": {"dtype": "float32", "shape": [2, 3, 4, 8]},
                "w": {"dtype": "float32", "shape": )" +
                      w + R"(}},
    "operations": [{"name": "mm", "kernel": "matmul", "inputs": {"X": "x", "W": "w"},
                    "outputs": {"result": "y"}}],
    "outputs": ["y"]})");
  };
  const graph::ExpandedGraph g = graphOf("[2, 3, 8, 5]");
  CHECK(plan::productDims(g.operations[0]) == std::vector<std::uint32_t>{0, 1});
  Target t = targetText("");
  Profile p;
  p.backend = "cpu";
  p.devices = 2;
  p.kernels["matmul"] = ProfileTable{WorkMeasure::Flops, {{320, 1e-3}, {1920, 2e-3}}, {}};
  t.profile = p;
  plan::PlanOptions free;
  free.inputsOn = plan::InputsOn::Free;
  const plan::ShardPlan one = plan::buildPlan(g, 2, plan::singleDeviceChoice(g), free);
  REQUIRE(one.ops[0].shards.size() == 1);
  CHECK(one.ops[0].shards[0].products == 6);
  CHECK(simulate(g, t, one).objectives.timeS == Approx(6e-3)); // 6 calls of 1 ms
  // Cut along the first batch dim: 3 products a shard; the search's path agrees.
  plan::PlanChoice halves = plan::singleDeviceChoice(g);
  halves.ops[0] = plan::OpChoice{{2, 1, 1, 1, 1}, {0, 1}};
  const plan::ShardPlan split = plan::buildPlan(g, 2, halves, free);
  CHECK(split.ops[0].shards[0].products == 3);
  CHECK(split.ops[0].shards[1].products == 3);
  ChoiceSimulator evaluator(g, t, free);
  CHECK(evaluator.builder().tasks(halves) == plan::summarize(g, split));
  CHECK(evaluator.evaluate(halves).timeS == Approx(simulate(g, t, split).objectives.timeS));
  // Another backend's profile (cuBLASLt runs a batch as one call): one product.
  t.profile->backend = "cuda";
  CHECK(simulate(g, t, one).objectives.timeS == Approx(2e-3));
  t.profile->backend = "cpu";
  // A batch dim W does not have joins X's rows: w [3, 8, 5] is 3 products.
  const graph::ExpandedGraph h = graphOf("[3, 8, 5]");
  CHECK(plan::productDims(h.operations[0]) == std::vector<std::uint32_t>{1});
  const plan::ShardPlan three = plan::buildPlan(h, 2, plan::singleDeviceChoice(h), free);
  CHECK(three.ops[0].shards[0].products == 3);
  // And w [8, 5], the same matrix for every batch point: one product.
  const graph::ExpandedGraph flat = graphOf("[8, 5]");
  CHECK(plan::productDims(flat.operations[0]).empty());
  const plan::ShardPlan single = plan::buildPlan(flat, 2, plan::singleDeviceChoice(flat), free);
  CHECK(single.ops[0].shards[0].products == 1);
  CHECK(simulate(flat, t, single).objectives.timeS == Approx(2e-3));
}

TEST_CASE("simulator: a profiled family replaces the roofline, others keep it") {
  // x [8, 4] @ w [4, 6] -> h (384 FLOP); relu(h) -> y (no relu table: roofline).
  const graph::ExpandedGraph g = expandText(R"({"tapestry": "graph/v1", "name": "mm_relu",
  "tensors": {"x": {"dtype": "float32", "shape": [8, 4]}, "w": {"dtype": "float32", "shape": [4, 6]}},
  "operations": [
    {"name": "mm", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "h"}},
    {"name": "act", "kernel": "relu", "inputs": {"input": "h"}, "outputs": {"result": "y"}}],
  "outputs": ["y"]})");
  Target t = targetText("");
  Profile p;
  p.backend = "cpu";
  p.devices = 2;
  p.taskOverhead = 0.25;
  p.startOverhead = 4;
  // matmul: 384 FLOP alone takes 2 s; 192 FLOP with every device busy 1.5 s.
  p.kernels["matmul"] =
      ProfileTable{WorkMeasure::Flops, {{192, 1}, {384, 2}}, {{192, 1.5}, {384, 3}}};
  t.profile = p;
  plan::PlanOptions free;
  free.inputsOn = plan::InputsOn::Free;

  const plan::PlanChoice single = plan::singleDeviceChoice(g);
  const Simulation one = simulate(g, t, plan::buildPlan(g, 2, single, free));
  // mm: 2 + 0.25; relu: max(48 / 96, 384 / 256) = 1.5, + 0.25 (the task overhead, not launch).
  CHECK(one.shards[0][0].end == 2.25);
  CHECK(one.shards[1][0].start == 2.25);
  CHECK(one.shards[1][0].end == 4.0);
  CHECK(one.objectives.timeS == 4.0); // one device: no start overhead

  // Rows split in two on two devices: each mm shard is 192 FLOP at "all" = 1.5 s.
  plan::PlanChoice split;
  split.ops = {plan::OpChoice{{2, 1, 1}, {0, 1}}, plan::OpChoice{{2, 1}, {0, 1}}};
  const Simulation two = simulate(g, t, plan::buildPlan(g, 2, split, free));
  CHECK(two.shards[0][0].end == 1.75);
  CHECK(two.shards[0][1].end == 1.75);
  // relu halves: max(24 / 96, 192 / 256) + 0.25 = 1; makespan 2.75 + 4 start.
  CHECK(two.shards[1][1].end == 2.75);
  CHECK(two.objectives.timeS == 6.75);

  // With an elementwise table, no FLOPs-measured shard runs faster than
  // streaming its bytes: mm reads x and w and writes h, (32 + 24 + 48) * 4 =
  // 416 B, at 1 s per 104 B (alone) = 4 s, above its 2 s by FLOPs.
  t.profile->kernels["elementwise"] = ProfileTable{WorkMeasure::Bytes, {{104, 1}, {208, 2}}, {}};
  const Simulation streamed = simulate(g, t, plan::buildPlan(g, 2, single, free));
  CHECK(streamed.shards[0][0].end == Approx(4.25));
  // relu is elementwise itself now: 384 B of table time (3.69 s) + 0.25.
  CHECK(streamed.shards[1][0].end - streamed.shards[1][0].start == Approx(384.0 / 104 + 0.25));

  // The search's evaluator, reused across plans, looks the tables up once and
  // agrees with simulate on each.
  ChoiceSimulator evaluator(g, t, free);
  for (const plan::PlanChoice* c :
       std::initializer_list<const plan::PlanChoice*>{&single, &split, &single, &split}) {
    CHECK(evaluator.evaluate(*c) == simulate(g, t, plan::buildPlan(g, 2, *c, free)).objectives);
  }

  // Without the profile: the roofline and launch overhead as before.
  t.profile.reset();
  const Simulation roof = simulate(g, t, plan::buildPlan(g, 2, single, free));
  CHECK(roof.shards[0][0].end == 4.5); // 384 / 96 + 0.5
}

TEST_CASE(
    "simulator: a product's W that is not constant is copied on every call past its square's") {
  // x [1, 64] @ w [64, 64]: 8192 FLOP, the square of 16^3 points (a [16, 16]
  // W of 1 KiB); w is 16 KiB, so 15 KiB past the square's, copied (read and
  // written) at the copy table's 30 KiB: 2 s.
  auto graph = [](bool constant) {
    return expandText(std::string(R"({"tapestry": "graph/v1", "name": "mm",
    "tensors": {"x": {"dtype": "float32", "shape": [1, 64]},
                "w": {"dtype": "float32", "shape": [64, 64])") +
                      (constant ? R"(, "constant": true)" : "") + R"(}},
    "operations": [
      {"name": "mm", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "y"}}],
    "outputs": ["y"]})");
  };
  const graph::ExpandedGraph g = graph(false);
  Target t = targetText("");
  Profile p;
  p.backend = "cpu";
  p.devices = 2;
  p.taskOverhead = 0.25;
  p.kernels["matmul"] = ProfileTable{WorkMeasure::Flops, {{4096, 1}, {8192, 2}}, {}};
  p.kernels["copy"] = ProfileTable{WorkMeasure::Bytes, {{15360, 1}, {30720, 2}}, {}};
  t.profile = p;
  plan::PlanOptions free;
  free.inputsOn = plan::InputsOn::Free;
  const plan::PlanChoice single = plan::singleDeviceChoice(g);
  const plan::ShardPlan one = plan::buildPlan(g, 2, single, free);
  CHECK(one.ops[0].shards.at(0).repacked == 16384); // w only: X is not a packed port
  CHECK(plan::summarize(g, one).shards.at(0).repacked == 16384);
  const Simulation copied = simulate(g, t, one);
  CHECK(copied.shards[0][0].end - copied.shards[0][0].start == Approx(2 + 2 + 0.25));

  // Columns split in two: each shard 4096 FLOP (the square of 16^3 / 2,
  // 645 bytes of W) reads 8 KiB of w, 7547 bytes past it: 15094 copied, 1 s
  // (held flat below the table's smallest point).
  plan::PlanChoice columns;
  columns.ops = {plan::OpChoice{{1, 1, 2}, {0, 1}}};
  const plan::ShardPlan halves = plan::buildPlan(g, 2, columns, free);
  CHECK(halves.ops[0].shards.at(1).repacked == 8192);
  const Simulation split = simulate(g, t, halves);
  CHECK(split.shards[0][1].end - split.shards[0][1].start == Approx(1 + 1 + 0.25));
  ChoiceSimulator evaluator(g, t, free);
  CHECK(evaluator.builder().tasks(columns) == plan::summarize(g, halves));
  CHECK(evaluator.evaluate(single) == copied.objectives);
  CHECK(evaluator.evaluate(columns) == split.objectives);

  // A constant w is packed once: nothing is copied per call.
  const graph::ExpandedGraph c = graph(true);
  const plan::ShardPlan packed = plan::buildPlan(c, 2, plan::singleDeviceChoice(c), free);
  CHECK(packed.ops[0].shards.at(0).repacked == 0);
  const Simulation once = simulate(c, t, packed);
  CHECK(once.shards[0][0].end - once.shards[0][0].start == Approx(2 + 0.25));

  // Only the CPU backend copies (cuBLASLt reads W in place), and only with a
  // copy table.
  t.profile->backend = "cuda";
  const Simulation cuda = simulate(g, t, one);
  CHECK(cuda.shards[0][0].end - cuda.shards[0][0].start == Approx(2 + 0.25));
  t.profile->backend = "cpu";
  t.profile->kernels.erase("copy");
  const Simulation noTable = simulate(g, t, one);
  CHECK(noTable.shards[0][0].end - noTable.shards[0][0].start == Approx(2 + 0.25));
}

TEST_CASE("simulator: with copies.on_device a transfer holds its destination device") {
  // mm(x, w) -> h; add(h, b) -> y, every input on the host. b's copy can run
  // during mm on a link of its own (copy engines), or only after mm on the
  // device whose worker makes it (Tapestry's executors).
  const graph::ExpandedGraph g = expandText(R"({"tapestry": "graph/v1", "name": "mm_add",
  "tensors": {"x": {"dtype": "float32", "shape": [8, 4]}, "w": {"dtype": "float32", "shape": [4, 6]},
              "b": {"dtype": "float32", "shape": [8, 6]}},
  "operations": [
    {"name": "mm", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "h"}},
    {"name": "add", "kernel": "add", "inputs": {"A": "h", "B": "b"}, "outputs": {"result": "y"}}],
  "outputs": ["y"]})");
  Target t = targetText("");
  Profile p;
  p.backend = "cpu";
  p.devices = 2;
  p.taskOverhead = 0.25;
  p.kernels["matmul"] = ProfileTable{WorkMeasure::Flops, {{384, 100}}, {}}; // a long product
  const plan::ShardPlan sp = plan::buildPlan(g, 2, plan::singleDeviceChoice(g), {});
  std::size_t b = sp.transfers.size();
  for (std::size_t i = 0; i < sp.transfers.size(); ++i) {
    if (g.tensors[sp.transfers[i].tensor].name == "b") {
      b = i;
    }
  }
  REQUIRE(b < sp.transfers.size());

  p.copiesOnDevice = false;
  t.profile = p;
  const Simulation overlap = simulate(g, t, sp);
  const Interval mm = overlap.shards[0][0];
  const double copy = overlap.transfers[b].end - overlap.transfers[b].start;
  CHECK(overlap.transfers[b].end < mm.end); // b arrives during the product
  CHECK(overlap.shards[1][0].start == mm.end);

  p.copiesOnDevice = true;
  t.profile = p;
  const Simulation held = simulate(g, t, sp);
  CHECK(held.shards[0][0].end == mm.end); // x and w came first either way
  CHECK(held.transfers[b].start == mm.end);
  CHECK(held.transfers[b].end == mm.end + copy);
  CHECK(held.shards[1][0].start == mm.end + copy);
  CHECK(held.objectives.timeS == overlap.objectives.timeS + copy);
}

TEST_CASE("saved calibrations: keys by machine, paths under the XDG cache") {
  MachineInfo cpu;
  cpu.cpuCores = 16;
  cpu.cpuModel = "AMD EPYC 7B13 64-Core Processor";
  CHECK(calibrationKey(cpu) == "cpu-amd-epyc-7b13-64-core-processor-16cores");
  cpu.cpuModel = "";
  CHECK(calibrationKey(cpu) == "cpu-unknown-16cores");
  MachineInfo gpu;
  gpu.gpus = {{"NVIDIA H100 80GB HBM3", 80}, {"NVIDIA H100 80GB HBM3", 80}};
  CHECK(calibrationKey(gpu) == "gpu-nvidia-h100-80gb-hbm3-x2");

  ::setenv("XDG_CACHE_HOME", "/nonexistent-tapestry-cache", 1);
  CHECK(calibrationPath(gpu) ==
        "/nonexistent-tapestry-cache/tapestry/calibration/gpu-nvidia-h100-80gb-hbm3-x2.yaml");
  CHECK(savedCalibration(gpu).empty());
  CHECK(loadLocalTarget().calibration.empty());
}
