// Writes the plan files scripts/gpu-measure.sh times on a GPU: an N x N x N
// matmul of one dtype split into P shards along m, one per plan device (which
// the CUDA backend runs as P streams on one GPU, or on P GPUs), and the same
// matmul unsplit on one device. Both are simulated on the given target so
// that `tapestry bench` can report predicted against measured time. Inputs
// start on the devices (inputs_on free), as bench --backend cuda places them.
//
//   bench_plans_cuda TARGET_P.yaml TARGET_1.yaml OUT_DIR [--size N]
//                    [--dtype bfloat16] [--parts P]
//
// Writes OUT_DIR/matmul_split.json and OUT_DIR/matmul_single.json.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "core/cost/plan_file.hpp"
#include "core/cost/simulator.hpp"
#include "core/cost/target.hpp"
#include "core/diag/error.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/loader.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"
#include "core/plan/plan.hpp"

using namespace tapestry;

namespace {

graph::ExpandedGraph matmulGraph(std::int64_t n, const std::string& dtype,
                                 const metakernel::MetakernelLibrary& library) {
  const std::string size = std::to_string(n);
  const std::string shape = "[" + size + ", " + size + "]";
  const std::string text = R"({"tapestry": "graph/v1", "name": "matmul_)" + size + "_" + dtype +
                           R"(", "tensors": {"x": {"dtype": ")" + dtype + R"(", "shape": )" +
                           shape + R"(}, "w": {"dtype": ")" + dtype + R"(", "shape": )" + shape +
                           R"(}}, "operations": [{"name": "mm", "kernel": "matmul",
    "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "y"}}], "outputs": ["y"]})";
  json::Document doc = json::Document::parse(SourceFile("matmul.json", text));
  return graph::expand(graph::decodeGraph(json::Value(doc)), library);
}

void writePlanFile(const std::string& path, const graph::ExpandedGraph& g,
                   const cost::Target& target, int devices, const plan::PlanChoice& choice) {
  plan::PlanOptions options;
  options.inputsOn = plan::InputsOn::Free;
  const plan::ShardPlan p = plan::buildPlan(g, devices, choice, options);
  const cost::Simulation sim = cost::simulate(g, target, p);
  std::ofstream out(path);
  out << plan::writePlan(g, target, p, sim);
  if (!out) {
    throw Error("cannot write " + path);
  }
  std::cout << "wrote " << path << " (predicted " << sim.objectives.timeS * 1e3 << " ms)\n";
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: bench_plans_cuda TARGET_P.yaml TARGET_1.yaml OUT_DIR [--size N] "
                 "[--dtype D] [--parts P]\n";
    return 2;
  }
  std::int64_t n = 8192;
  std::string dtype = "bfloat16";
  int parts = 4;
  for (int i = 4; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--size") {
      n = std::atoll(argv[i + 1]);
    } else if (flag == "--dtype") {
      dtype = argv[i + 1];
    } else if (flag == "--parts") {
      parts = std::atoi(argv[i + 1]);
    } else {
      std::cerr << "unknown flag " << flag << "\n";
      return 2;
    }
  }
  try {
    const metakernel::MetakernelLibrary library = metakernel::MetakernelLibrary::standard();
    const graph::ExpandedGraph g = matmulGraph(n, dtype, library);
    const cost::Target splitTarget = cost::loadTarget(argv[1]);
    const cost::Target singleTarget = cost::loadTarget(argv[2]);
    const std::string dir = argv[3];

    plan::PlanChoice split;
    std::vector<int> devices;
    for (int d = 0; d < parts; ++d) {
      devices.push_back(d);
    }
    split.ops.push_back(plan::OpChoice{{parts, 1, 1}, devices});
    writePlanFile(dir + "/matmul_split.json", g, splitTarget, parts, split);
    writePlanFile(dir + "/matmul_single.json", g, singleTarget, 1, plan::singleDeviceChoice(g));
  } catch (const Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
