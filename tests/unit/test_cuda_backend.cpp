// GPU tests of the CUDA backend (ctest label `cuda`): every testdata graph and
// plan, and a sweep of every kernel over each dtype, run on the GPU under many
// plans (one device; 2 and 4 plan devices, which become streams on one GPU or
// GPUs of their own; split reduction dims; random cuts and placements) and
// compared with the CPU backend's unsharded result within SPEC §9's
// tolerances; user kernels run from their bodies on device blocks; `run --check --backend cuda` on
// every testdata file; region copies between host and GPU over strided views; kernel errors.
//
// Not a Catch2 test: without a usable GPU it prints why and exits 77, which
// ctest reports as Skipped (SKIP_RETURN_CODE).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/cuda_probe.hpp"
#include "backends/executor.hpp"
#include "backends/reference.hpp"
#include "backends/tensor_io.hpp"
#include "core/cost/simulator.hpp"
#include "core/cost/target.hpp"
#include "core/diag/error.hpp"
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
using plan::OpChoice;
using plan::PlanChoice;

namespace {

int failures = 0;
int checks = 0;

void expect(bool ok, const std::string& what) {
  ++checks;
  if (!ok) {
    ++failures;
    std::cout << "FAILED: " << what << "\n";
  }
}

// ---- comparisons (plan choices from tests/unit/fixtures.hpp)

// Runs the plan on the GPU and compares every output with the CPU backend's
// unsharded result.
// With inputsOnGpu the graph inputs start in the memory of plan device 0 (as
// bench places them), so resident inputs on the same GPU share it.
void runAndCompare(const std::string& label, const graph::ExpandedGraph& g, int devices,
                   const PlanChoice& choice, plan::InputsOn inputsOn = plan::InputsOn::Host,
                   bool inputsOnGpu = false, const std::vector<int>& relayGroups = {}) {
  try {
    const plan::ShardPlan p =
        plan::buildPlan(g, devices, choice, plan::PlanOptions{inputsOn, relayGroups});
    const cost::Simulation sim = cost::simulate(g, roomyCpuTarget(devices), p);
    const TensorBuffers inputs = drawInputs(g, 11);
    CudaOptions options;
    options.planDevices = devices;
    CudaBackend gpu(options);
    TensorBuffers onGpu;
    for (const auto& [name, buffer] : inputs) {
      Buffer copy = gpu.allocate(buffer.dtype(), buffer.region(), 0);
      gpu.copyRegion(buffer.view(), copy.view(), buffer.region());
      onGpu.emplace(name, std::move(copy));
    }
    const Execution run = execute(g, p, gpu, inputsOnGpu ? onGpu : inputs, {}, &sim);
    CpuBackend cpu(1);
    // The GPU's result against the CPU's unsharded one (the baseline of the bound).
    const CheckReference reference = unshardedReference(cpu, g, inputs);
    for (const OutputCheck& c : compareOutputs(g, run.outputs, reference)) {
      std::ostringstream what;
      what << label << " on " << devices << " plan devices: output " << c.tensor << " ("
           << dtypeName(c.dtype) << ") " << describeCheck(c);
      expect(c.ok, what.str());
    }
  } catch (const std::exception& e) {
    expect(false, label + " on " + std::to_string(devices) + " plan devices threw: " + e.what());
  }
}

// The unsharded graph on the GPU (whole-tensor views) against the CPU.
void unshardedCompare(const std::string& label, const graph::ExpandedGraph& g) {
  runAndCompare(label + " (single device)", g, 1, plan::singleDeviceChoice(g));
}

void manyPlans(const std::string& label, const graph::ExpandedGraph& g) {
  std::mt19937 rng(static_cast<std::mt19937::result_type>(label.size() * 7919));
  unshardedCompare(label, g);
  runAndCompare(label + " data parallel", g, 2, dataParallel(g, 2, 2));
  runAndCompare(label + " data parallel", g, 4, dataParallel(g, 4, 4));
  runAndCompare(label + " split reductions", g, 3, reductionSplit(g, 3));
  runAndCompare(label + " random", g, 2, randomChoice(g, 2, rng), plan::InputsOn::Free);
  runAndCompare(label + " random", g, 4, randomChoice(g, 4, rng));
  runAndCompare(label + " data parallel, inputs on the GPU", g, 4, dataParallel(g, 4, 4),
                plan::InputsOn::Free, true);
  // Inputs sent to one plan device and forwarded to the others (relay groups).
  runAndCompare(label + " data parallel, inputs forwarded", g, 4, dataParallel(g, 4, 4),
                plan::InputsOn::Host, false, {0, 0, 1, 1});
}

// Every float kernel in one graph, for one dtype (linear_act: linear's product,
// then the residual, the GELU (exact, or its tanh approximation) and the clip
// in place; with and without a bias; the tanh GELU alone is cuBLASLt's
// epilogue in 16-bit types, GELU_BIAS or GELU, where the shard's bias is
// 16-byte aligned, and the residual alone cuBLASLt's C, beta = 1).
std::string sweepGraph(const std::string& dt) {
  return R"({"tapestry": "graph/v1", "name": "sweep_)" + dt + R"(",
  "tensors": {"x": {"dtype": "DT", "shape": [4, 16, 40]}, "w": {"dtype": "DT", "shape": [4, 40, 24]},
              "w2": {"dtype": "DT", "shape": [24, 20]}, "b2": {"dtype": "DT", "shape": [20]},
              "g": {"dtype": "DT", "shape": [20]}, "bb": {"dtype": "DT", "shape": [20]}},
  "operations": [
    {"name": "mm", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "h"}},
    {"name": "lin", "kernel": "linear", "inputs": {"X": "h", "W": "w2", "bias": "b2"}, "outputs": {"result": "l"}},
    {"name": "act", "kernel": "gelu", "inputs": {"input": "l"}, "outputs": {"result": "a1"}},
    {"name": "th", "kernel": "tanh", "inputs": {"input": "a1"}, "outputs": {"result": "a2"}},
    {"name": "sg", "kernel": "sigmoid", "inputs": {"input": "a2"}, "outputs": {"result": "a3"}},
    {"name": "ng", "kernel": "neg", "inputs": {"input": "a3"}, "outputs": {"result": "a4"}},
    {"name": "rl", "kernel": "relu", "inputs": {"input": "l"}, "outputs": {"result": "a5"}},
    {"name": "ad", "kernel": "add", "inputs": {"A": "a1", "B": "a5"}, "outputs": {"result": "a6"}},
    {"name": "sb", "kernel": "sub", "inputs": {"A": "a6", "B": "a4"}, "outputs": {"result": "a7"}},
    {"name": "ml", "kernel": "mul", "inputs": {"A": "a7", "B": "a3"}, "outputs": {"result": "a8"}},
    {"name": "ln", "kernel": "layernorm", "inputs": {"input": "a8", "gamma": "g", "beta": "bb"}, "outputs": {"result": "n1"}},
    {"name": "rn", "kernel": "rmsnorm", "inputs": {"input": "a8", "gamma": "g"}, "outputs": {"result": "n2"}},
    {"name": "si", "kernel": "silu", "inputs": {"input": "a8"}, "outputs": {"result": "n3"}},
    {"name": "ls", "kernel": "linear_act", "params": {"silu": true}, "inputs": {"X": "h", "W": "w2", "bias": "b2"}, "outputs": {"result": "f3"}},
    {"name": "lnb", "kernel": "linear_act", "params": {"silu": true}, "inputs": {"X": "h", "W": "w2"}, "outputs": {"result": "f4"}},
    {"name": "lrb", "kernel": "linear_act", "inputs": {"X": "h", "W": "w2", "residual": "a5"}, "outputs": {"result": "f5"}},
    {"name": "sm", "kernel": "softmax", "params": {"axis": -1}, "inputs": {"input": "n1"}, "outputs": {"result": "p"}},
    {"name": "ex", "kernel": "exp", "inputs": {"input": "n1"}, "outputs": {"result": "e"}},
    {"name": "su", "kernel": "sum", "params": {"axis": 1}, "inputs": {"input": "e"}, "outputs": {"result": "s1"}},
    {"name": "me", "kernel": "mean", "params": {"axis": 2}, "inputs": {"input": "p"}, "outputs": {"result": "s2"}},
    {"name": "mx", "kernel": "max", "params": {"axis": 0}, "inputs": {"input": "n1"}, "outputs": {"result": "s3"}},
    {"name": "tr", "kernel": "transpose", "params": {"perm": [0, 2, 1]}, "inputs": {"input": "n1"}, "outputs": {"result": "tt"}},
    {"name": "ca", "kernel": "cast", "params": {"dtype": "OTHER"}, "inputs": {"input": "tt"}, "outputs": {"result": "c"}},
    {"name": "dv", "kernel": "div", "inputs": {"A": "a8", "B": "e"}, "outputs": {"result": "d"}},
    {"name": "la", "kernel": "linear_act", "params": {"gelu": true, "min": -0.1, "max": 2}, "inputs": {"X": "h", "W": "w2", "bias": "b2", "residual": "a5"}, "outputs": {"result": "f"}},
    {"name": "gt", "kernel": "gelu_tanh", "inputs": {"input": "a8"}, "outputs": {"result": "g1"}},
    {"name": "lt", "kernel": "linear_act", "params": {"gelu_tanh": true}, "inputs": {"X": "h", "W": "w2", "bias": "b2"}, "outputs": {"result": "f2"}},
    {"name": "ltn", "kernel": "linear_act", "params": {"gelu_tanh": true}, "inputs": {"X": "h", "W": "w2"}, "outputs": {"result": "f6"}},
    {"name": "lbr", "kernel": "linear_act", "inputs": {"X": "h", "W": "w2", "bias": "b2", "residual": "a5"}, "outputs": {"result": "f7"}}],
  "outputs": ["p", "s1", "s2", "s3", "c", "d", "f", "g1", "f2", "n2", "n3", "f3", "f4", "f5", "f6", "f7"]})";
}

std::string replaceAll(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// conv2d with its optional bias (groups == 1 and depthwise; conv2d_grouped
// with 2 groups), whose shards add the bias only at the start of C (or a
// group's channels), KH and KW; and conv2d_act (relu after
// a residual add, ReLU6 depthwise without one; SiLU, and HardSwish
// depthwise), whose shards hold the whole sum and add bias, residual, the
// activation and the clip after conv2d's kernel.
std::string convBiasGraph(const std::string& dt) {
  return R"({"tapestry": "graph/v1", "name": "conv_bias_)" + dt + R"(",
  "tensors": {"x": {"dtype": "DT", "shape": [2, 8, 9, 9]}, "w": {"dtype": "DT", "shape": [8, 8, 3, 3]},
              "b": {"dtype": "DT", "shape": [8]}, "dw": {"dtype": "DT", "shape": [8, 1, 3, 3]},
              "db": {"dtype": "DT", "shape": [8]}, "gw": {"dtype": "DT", "shape": [8, 4, 3, 3]}},
  "operations": [
    {"name": "conv", "kernel": "conv2d", "params": {"padding": [1, 1]}, "inputs": {"input": "x", "weight": "w", "bias": "b"}, "outputs": {"result": "h"}},
    {"name": "dwconv", "kernel": "conv2d", "params": {"padding": [1, 1], "stride": [2, 2], "groups": 8}, "inputs": {"input": "h", "weight": "dw", "bias": "db"}, "outputs": {"result": "y"}},
    {"name": "fused", "kernel": "conv2d_act", "params": {"padding": [1, 1], "min": 0}, "inputs": {"input": "x", "weight": "w", "bias": "b", "residual": "h"}, "outputs": {"result": "f"}},
    {"name": "dwfused", "kernel": "conv2d_act", "params": {"padding": [1, 1], "stride": [2, 2], "groups": 8, "min": 0, "max": 6}, "inputs": {"input": "f", "weight": "dw"}, "outputs": {"result": "z"}},
    {"name": "gconv", "kernel": "conv2d_grouped", "params": {"padding": [1, 1], "groups": 2}, "inputs": {"input": "x", "weight": "gw", "bias": "b"}, "outputs": {"result": "gy"}},
    {"name": "silufused", "kernel": "conv2d_act", "params": {"padding": [1, 1], "silu": true}, "inputs": {"input": "x", "weight": "w", "bias": "b"}, "outputs": {"result": "s"}},
    {"name": "dwswish", "kernel": "conv2d_act", "params": {"padding": [1, 1], "groups": 8, "hard_swish": true}, "inputs": {"input": "s", "weight": "dw", "bias": "db"}, "outputs": {"result": "hs"}}],
  "outputs": ["y", "z", "gy", "hs"]})";
}

const char* kIntegers = R"({"tapestry": "graph/v1", "name": "integers",
  "tensors": {"x": {"dtype": "int32", "shape": [6, 7]}, "w": {"dtype": "int32", "shape": [7, 5]}},
  "operations": [
    {"name": "mm", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "h"}},
    {"name": "ad", "kernel": "add", "inputs": {"A": "h", "B": "h"}, "outputs": {"result": "h2"}},
    {"name": "ng", "kernel": "neg", "inputs": {"input": "h2"}, "outputs": {"result": "h3"}},
    {"name": "rl", "kernel": "relu", "inputs": {"input": "h3"}, "outputs": {"result": "h4"}},
    {"name": "mx", "kernel": "max", "params": {"axis": 0}, "inputs": {"input": "h2"}, "outputs": {"result": "m"}},
    {"name": "su", "kernel": "sum", "params": {"axis": 1}, "inputs": {"input": "h3"}, "outputs": {"result": "s"}},
    {"name": "c64", "kernel": "cast", "params": {"dtype": "int64"}, "inputs": {"input": "h4"}, "outputs": {"result": "c"}},
    {"name": "cf", "kernel": "cast", "params": {"dtype": "float32"}, "inputs": {"input": "h2"}, "outputs": {"result": "f"}}],
  "outputs": ["m", "s", "c", "f"]})";

// bool tensors: where (native) over a float and an int dtype, a bool transpose
// (copies), casts to and from bool, a bool output.
const char* kMasked = R"({"tapestry": "graph/v1", "name": "masked",
  "tensors": {"mask": {"dtype": "bool", "shape": [8, 16]}, "x": {"dtype": "float16", "shape": [2, 8, 16]},
              "fill": {"dtype": "float16", "shape": [1]}, "n": {"dtype": "int64", "shape": [16]},
              "k": {"dtype": "int64", "shape": [1]}},
  "operations": [
    {"name": "w", "kernel": "where", "inputs": {"condition": "mask", "X": "x", "Y": "fill"}, "outputs": {"result": "y"}},
    {"name": "wi", "kernel": "where", "inputs": {"condition": "mask", "X": "n", "Y": "k"}, "outputs": {"result": "yi"}},
    {"name": "t", "kernel": "transpose", "params": {"perm": [1, 0]}, "inputs": {"input": "mask"}, "outputs": {"result": "mt"}},
    {"name": "nz", "kernel": "cast", "params": {"dtype": "bool"}, "inputs": {"input": "y"}, "outputs": {"result": "b"}},
    {"name": "bf", "kernel": "cast", "params": {"dtype": "float32"}, "inputs": {"input": "mt"}, "outputs": {"result": "f"}}],
  "outputs": ["y", "yi", "b", "f"]})";

// Kernels with a body and no native kernel (the user kernels of
// testdata/metakernels/): the CUDA backend runs them through the body
// evaluator on device blocks (backends/cuda/cuda_body.hpp), the CPU backend in
// float64; draft_matmul_k's k is split by the split-reductions plan.
const char* kUserKernels = R"({"tapestry": "graph/v1", "name": "bodies",
  "tensors": {"x": {"dtype": "DT", "shape": [4, 8, 16]}, "w": {"dtype": "DT", "shape": [4, 16, 5]},
              "g": {"dtype": "DT", "shape": [16]}, "r": {"dtype": "DT", "shape": [6, 9]}},
  "operations": [
    {"name": "norm", "kernel": "my_rmsnorm", "inputs": {"input": "x", "gamma": "g"}, "outputs": {"result": "n"}},
    {"name": "mk", "kernel": "draft_matmul_k", "inputs": {"X": "n", "W": "w"}, "outputs": {"result": "m"}},
    {"name": "md", "kernel": "draft_matmul", "inputs": {"X": "n", "W": "w"}, "outputs": {"result": "m2"}},
    {"name": "sc", "kernel": "scale", "inputs": {"input": "m"}, "outputs": {"result": "s"}},
    {"name": "rs", "kernel": "rowsum", "inputs": {"input": "r"}, "outputs": {"result": "t"}}],
  "outputs": ["n", "m2", "s", "t"]})";

graph::ExpandedGraph expandUser(const std::string& text) {
  const std::string dir = std::string(TAPESTRY_TESTDATA_DIR) + "/metakernels/";
  static const metakernel::MetakernelLibrary library = metakernel::MetakernelLibrary::load(
      {dir + "my_rmsnorm.yaml", dir + "matmul_draft.yaml", dir + "user_ops.yaml"});
  json::Document doc = json::Document::parse(SourceFile("bodies.json", text));
  return graph::expand(graph::decodeGraph(json::Value(doc)), library);
}

// Host -> GPU -> GPU -> host copies over strided sub-regions give the elements
// back in place.
void stridedCopies() {
  try {
    CudaOptions options;
    options.planDevices = 2;
    CudaBackend gpu(options);
    const ZRange whole = ZRange::fromShape(ZPoint(std::vector<std::int64_t>{6, 10}));
    Buffer host = Buffer::host(DType::Float32, whole);
    for (std::size_t i = 0; i < host.elements<float>().size(); ++i) {
      host.elements<float>()[i] = static_cast<float>(i);
    }
    const ZRange columns(ZPoint(std::vector<std::int64_t>{1, 3}),
                         ZPoint(std::vector<std::int64_t>{5, 7}));
    Buffer d0 = gpu.allocate(DType::Float32, whole, 0);
    Buffer d1 = gpu.allocate(DType::Float32, columns, 1);
    gpu.copyRegion(host.view(), d0.view(), whole);     // contiguous upload
    gpu.copyRegion(d0.view(), d1.view(), columns);     // strided, device to device
    Buffer back = Buffer::host(DType::Float32, whole); // zeros
    gpu.copyRegion(d1.view(), back.view(), columns);   // strided download
    gpu.combine(Combine::Sum, d0.view(), d1.view(), columns);
    Buffer doubled = Buffer::host(DType::Float32, whole);
    gpu.copyRegion(d0.view(), doubled.view(), whole);
    gpu.synchronize();
    bool ok = true;
    for (std::int64_t r = 0; r < 6; ++r) {
      for (std::int64_t c = 0; c < 10; ++c) {
        const float v = static_cast<float>(r * 10 + c);
        const bool inside = r >= 1 && r < 5 && c >= 3 && c < 7;
        ok = ok && back.elements<float>()[static_cast<std::size_t>(r * 10 + c)] == (inside ? v : 0);
        ok = ok && doubled.elements<float>()[static_cast<std::size_t>(r * 10 + c)] ==
                       (inside ? 2 * v : v);
      }
    }
    expect(ok, "strided region copies and combine between host and plan devices");
  } catch (const std::exception& e) {
    expect(false, std::string("strided copies threw: ") + e.what());
  }
}

// An embedding index outside the table is an input error naming it.
void embeddingError() {
  const graph::ExpandedGraph g = expandText(R"({"tapestry": "graph/v1", "name": "emb",
    "tensors": {"t": {"dtype": "float32", "shape": [5, 3]}, "i": {"dtype": "int64", "shape": [4]}},
    "operations": [{"name": "lookup", "kernel": "embedding", "inputs": {"table": "t", "indices": "i"},
                    "outputs": {"result": "r"}}],
    "outputs": ["r"]})");
  TensorBuffers inputs = drawInputs(g, 1);
  Buffer& indices = inputs.at("i");
  const std::int64_t values[4] = {0, 4, 9, 2};
  std::copy(values, values + 4, indices.elements<std::int64_t>().begin());
  try {
    CudaBackend gpu;
    execute(g, plan::buildPlan(g, 1, plan::singleDeviceChoice(g)), gpu, inputs);
    expect(false, "an out-of-range embedding index is an error");
  } catch (const Error& e) {
    expect(std::string(e.what()).find("indices[2] is 9, outside the table's 5 rows") !=
               std::string::npos,
           std::string("embedding error message: ") + e.what());
  }
}

void runCommands() {
  for (const char* dir : {"graphs", "plans"}) {
    for (const auto& entry :
         std::filesystem::directory_iterator(std::string(TAPESTRY_TESTDATA_DIR) + "/" + dir)) {
      if (entry.path().extension() != ".json") {
        continue;
      }
      RunConfig config;
      config.planPath = entry.path().string();
      config.backend = "cuda";
      config.check = true;
      config.quiet = true;
      std::ostringstream out;
      std::ostringstream err;
      int code = 1;
      try {
        code = runCommand(config, out, err);
      } catch (const std::exception& e) {
        err << e.what();
      }
      expect(code == 0, "run --check --backend cuda " + entry.path().string() + ": exit " +
                            std::to_string(code) + " " + err.str());
    }
  }
}

} // namespace

int main() {
  const cuda::Probe probe = cuda::probe();
  if (!probe.available) {
    std::cout << "skipped: " << probe.reason << "\n";
    return 77;
  }
  for (const cuda::DeviceInfo& d : probe.devices) {
    std::cout << "GPU " << d.ordinal << ": " << d.name << " (sm_" << d.computeMajor
              << d.computeMinor << ")\n";
  }
  try {
    CudaBackend gpu;
    CpuBackend cpu;
    expect(gpu.kernelNames() == cpu.kernelNames(), "the CUDA backend has every CPU kernel");
  } catch (const std::exception& e) {
    std::cout << "cannot start the CUDA backend: " << e.what() << "\n";
    return 1;
  }
  stridedCopies();
  embeddingError();
  for (const std::string name :
       {"tiny.json", "mlp.json", "convnet.json", "concat_split_embedding.json",
        "transformer_block.json", "mobilenet_block.json"}) {
    manyPlans(name,
              graph::loadAndExpand(std::string(TAPESTRY_TESTDATA_DIR) + "/graphs/" + name, lib()));
  }
  for (const std::string dt : {"float32", "float64", "float16", "bfloat16"}) {
    std::string text = replaceAll(sweepGraph(dt), "\"DT\"", "\"" + dt + "\"");
    text = replaceAll(text, "OTHER", dt == "float32" ? "float64" : "float32");
    manyPlans("sweep " + dt, expandText(text));
  }
  for (const std::string dt : {"float32", "bfloat16"}) {
    manyPlans("conv bias " + dt,
              expandText(replaceAll(convBiasGraph(dt), "\"DT\"", "\"" + dt + "\"")));
  }
  manyPlans("integers", expandText(kIntegers));
  manyPlans("masked (bool)", expandText(kMasked));
  for (const std::string dt : {"float32", "float64", "bfloat16"}) {
    manyPlans("bodies " + dt, expandUser(replaceAll(kUserKernels, "\"DT\"", "\"" + dt + "\"")));
  }
  runCommands();
  std::cout << checks - failures << " of " << checks << " checks passed\n";
  return failures == 0 ? 0 : 1;
}
