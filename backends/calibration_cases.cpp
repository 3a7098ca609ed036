// The calibration's measurement cases (backends/calibration_cases.hpp).
#include "backends/calibration_cases.hpp"

#include <cmath>
#include <memory>
#include <utility>

#include "core/graph/loader.hpp"
#include "core/json/json.hpp"

namespace tapestry::backend {

namespace {

using Lib = metakernel::MetakernelLibrary;

// A calibration graph from its graph/v1 text, expanded through the library.
graph::ExpandedGraph expandText(const metakernel::MetakernelLibrary& library,
                                const std::string& kernel, const std::string& text) {
  auto document = std::make_shared<const json::Document>(
      json::Document::parse(SourceFile("<calibrate " + kernel + ">", text)));
  graph::Graph g = graph::decodeGraph(json::Value(*document));
  g.document = document;
  return graph::expand(g, library);
}

std::string shapeText(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    out += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  }
  return out + "]";
}

} // namespace

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

std::string tensorText(const std::string& name, const std::vector<std::int64_t>& shape) {
  return "\"" + name + "\": {\"dtype\": \"float32\", \"shape\": " + shapeText(shape) + "}";
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

namespace {

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

// relu -> conv2d 1x1 -> maxpool2d 3x3, stride 2, padding 1 (named "op") ->
// conv2d 1x1 (constant weights): ResNet's stem pool, between convolutions,
// so that it reads and writes channels-last activations as in a model (a
// pool next to a graph output stays row-major, and so does all it is linked
// to through kernels that take either layout).
graph::ExpandedGraph poolGraph(const metakernel::MetakernelLibrary& library,
                               const std::vector<std::int64_t>& input) {
  const std::int64_t c = input.at(1);
  const std::string weight =
      R"({"dtype": "float32", "shape": )" + shapeText({c, c, 1, 1}) + R"(, "constant": true})";
  const std::string text =
      R"({"tapestry": "graph/v1", "name": "calibrate_maxpool2d", "tensors": {)" +
      tensorText("x", input) + R"(, "w": )" + weight + R"(, "v": )" + weight +
      R"(}, "operations": [
        {"name": "in", "kernel": "relu", "inputs": {"input": "x"}, "outputs": {"result": "h"}},
        {"name": "conv", "kernel": "conv2d", "inputs": {"input": "h", "weight": "w"},
         "outputs": {"result": "c"}},
        {"name": "op", "kernel": "maxpool2d",
         "params": {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1]},
         "inputs": {"input": "c"}, "outputs": {"result": "p"}},
        {"name": "out", "kernel": "conv2d", "inputs": {"input": "p", "weight": "v"},
         "outputs": {"result": "y"}}],
      "outputs": ["y"]})";
  return expandText(library, "maxpool2d", text);
}

// relu -> `count` convolutions of the same input, each 3x3 (padding 1) with
// weights of `weight`'s shape of its own (constant), each followed by a relu;
// the middle one is named "op". Their weights together outgrow the caches,
// so each convolution reads its weights from memory, as in a model of many
// weights.
graph::ExpandedGraph convFanGraph(const metakernel::MetakernelLibrary& library,
                                  const std::vector<std::int64_t>& input,
                                  const std::vector<std::int64_t>& weight, int count) {
  std::string tensors = tensorText("x", input);
  std::string ops =
      R"({"name": "in", "kernel": "relu", "inputs": {"input": "x"}, "outputs": {"result": "h"}})";
  std::string outputs;
  for (int i = 0; i < count; ++i) {
    const std::string n = std::to_string(i);
    tensors += R"(, "w)" + n + R"(": {"dtype": "float32", "shape": )" + shapeText(weight) +
               R"(, "constant": true})";
    ops += R"(, {"name": ")" + (i == count / 2 ? std::string("op") : "conv" + n) +
           R"(", "kernel": "conv2d", "params": {"padding": [1, 1]}, "inputs": {"input": "h", )" +
           R"("weight": "w)" + n + R"("}, "outputs": {"result": "c)" + n + R"("}}, )" +
           R"({"name": "out)" + n + R"(", "kernel": "relu", "inputs": {"input": "c)" + n +
           R"("}, "outputs": {"result": "y)" + n + R"("}})";
    outputs += (i > 0 ? ", \"y" : "\"y") + n + "\"";
  }
  const std::string text =
      std::string(R"({"tapestry": "graph/v1", "name": "calibrate_conv2d_weights", )") +
      R"("tensors": {)" + tensors + R"(}, "operations": [)" + ops + R"(], "outputs": [)" + outputs +
      "]}";
  return expandText(library, "conv2d", text);
}

// The FLOPs-bound families: matrix products and convolutions, and the
// convolutions' floor.
void addProductCases(std::vector<FamilyCase>& cases, double threadsFrom) {
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
  // The conv family's floor: 3x3 convolutions of C to C channels on a 2x2
  // image (ResNet's last stage on a small image), whose time goes to reading
  // their weights (2.4 to 21 MB) rather than to their FLOPs. Read from
  // memory, not from a cache: the models that have such convolutions
  // (ResNet-18's 47 MB of weights, ResNet-50's 100 MB) outgrow the caches and
  // read every weight anew on each run, so each case runs enough such
  // convolutions side by side for 64 MiB of weights (measured alone in a
  // warm cache, the 512-channel one took 124 us on one device; in ResNet-18,
  // and side by side, 200-330 us). `all` splits the output channels, one
  // block of the weights per device, as a plan splits such a convolution.
  // Measured by the shard's bytes.
  cases.push_back({"conv_weights", "conv2d",
                   [](const Lib& lib, int step, int copies) {
                     static const std::int64_t channels[] = {256, 384, 512, 768};
                     const std::int64_t c = channels[step];
                     constexpr double kWeightBytes = 64.0 * 1024 * 1024;
                     const int count = static_cast<int>(
                         std::ceil(kWeightBytes / static_cast<double>(c * c * 9 * 4)));
                     return convFanGraph(lib, {1, c, 2, 2}, {copies * c, c, 3, 3}, count);
                   },
                   4, false, 1, 1});
}

// The memory-bound families, on rows of 1024 float32s (4 KiB): 1 .. 16384 rows.
void addMemoryCases(std::vector<FamilyCase>& cases) {
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
  // The max pool reads a 3x3 window per output and scans its input for NaNs:
  // it ran 10x slower than `sum` over the same bytes (ResNet-18's, 64
  // channels of 32x32: 27 us against 2 us as a reduction). Channels last, 64
  // channels of 8x8 to 128x128.
  cases.push_back({"reduction", "maxpool2d",
                   [](const Lib& lib, int step, int copies) {
                     const std::int64_t side = std::int64_t{8} << step;
                     return poolGraph(lib, {copies, 64, side, side});
                   },
                   5, true});
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
}

} // namespace

std::vector<FamilyCase> familyCases(double threadsFrom) {
  std::vector<FamilyCase> cases;
  addProductCases(cases, threadsFrom);
  addMemoryCases(cases);
  return cases;
}

} // namespace tapestry::backend
