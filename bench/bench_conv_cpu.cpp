// Tapestry's conv2d kernel against oneDNN's own best, layer by layer (issue 32):
// for each convolution of ResNet-18 (batch 1, 3 x 64 x 64 images; the shapes
// `tapestry import testdata/onnx/resnet18.onnx` gives), or of every conv2d of
// a graph file (--graph), one call of
//   - tapestry: the CPU backend's prepared conv2d kernel on whole-tensor views
//     of channels-last activations (the weight and bias constant inputs), as
//     the executor runs an unsplit operation between other convolutions
//     (Executor::chooseLayouts);
//   - plain, nhwc, blocked: the same kernel on row-major NCHW activations (a
//     convolution that reads a graph input or writes a graph output), in each
//     layout it may ask oneDNN for (backends/cpu/conv.hpp; a second pass);
//   - onednn: a oneDNN convolution with the layouts it prefers for src,
//     weights and dst (blocked), weights and input reordered once outside the
//     timing: the floor for this convolution on this machine;
// all with the same OpenMP team (--threads, default 2), each pass interleaved
// with onednn's calls, the median of --repeat calls each. Prints per-layer
// times, the ratio tapestry / onednn (target: every layer within 1.3x) and the
// totals. Then (without --graph) the pools of ResNet-18 and MobileNetV2 and two
// batchnorms: the registry's kernel against the loops (pools) or oneDNN's
// batch normalization (batchnorm), which is how pool.cpp and batchnorm.cpp
// chose what they run.
//
//   bench_conv_cpu [--threads T] [--repeat R] [--graph GRAPH.json]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/cpu/conv.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/onednn.hpp"
#include "backends/cpu/pool.hpp"
#include "backends/tensor_io.hpp"
#include "bench/bench_util.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/loader.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"

using namespace tapestry;
using bench::median;
using namespace tapestry::backend;

namespace {

// One convolution: input [1, C, H, W], weight [O, C/groups, KH, KW], bias [O].
struct Layer {
  std::string name;
  std::vector<std::int64_t> input, weight;
  std::int64_t stride, padding, groups;
};

// ResNet-18's convolutions at batch 1 on 64 x 64 images, in graph order.
std::vector<Layer> resnet18() {
  std::vector<Layer> out = {{"conv1", {1, 3, 64, 64}, {64, 3, 7, 7}, 2, 3, 1}};
  auto block = [&](const std::string& name, std::int64_t c, std::int64_t o, std::int64_t hw,
                   bool down) {
    const std::int64_t s = down ? 2 : 1;
    const std::int64_t h2 = hw / s;
    out.push_back({name + ".conv1", {1, c, hw, hw}, {o, c, 3, 3}, s, 1, 1});
    out.push_back({name + ".conv2", {1, o, h2, h2}, {o, o, 3, 3}, 1, 1, 1});
    if (down) {
      out.push_back({name + ".downsample", {1, c, hw, hw}, {o, c, 1, 1}, 2, 0, 1});
    }
  };
  block("layer1.0", 64, 64, 16, false);
  block("layer1.1", 64, 64, 16, false);
  block("layer2.0", 64, 128, 16, true);
  block("layer2.1", 128, 128, 8, false);
  block("layer3.0", 128, 256, 8, true);
  block("layer3.1", 256, 256, 4, false);
  block("layer4.0", 256, 512, 4, true);
  block("layer4.1", 512, 512, 2, false);
  return out;
}

// Every conv2d of a graph file whose params are symmetric (batch as given).
std::vector<Layer> graphLayers(const std::string& path,
                               const metakernel::MetakernelLibrary& library) {
  const graph::ExpandedGraph g = graph::loadAndExpand(path, library);
  std::vector<Layer> out;
  for (const graph::Operation& op : g.operations) {
    if (op.kernel != "conv2d") {
      continue;
    }
    const metakernel::Application& app = op.application;
    out.push_back({op.name, app.inputs[0].tensors[0].shape, app.inputs[1].tensors[0].shape,
                   intBinding(op, "sh"), intBinding(op, "ph"),
                   app.params["groups"].get<std::int64_t>()});
  }
  return out;
}

std::string shapeText(const std::vector<std::int64_t>& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    out += (i ? "x" : "") + std::to_string(s[i]);
  }
  return out;
}

graph::ExpandedGraph layerGraph(const Layer& l, const metakernel::MetakernelLibrary& library) {
  auto shape = [](const std::vector<std::int64_t>& s) {
    std::string out = "[";
    for (std::size_t i = 0; i < s.size(); ++i) {
      out += (i ? ", " : "") + std::to_string(s[i]);
    }
    return out + "]";
  };
  const std::string p = std::to_string(l.padding), s = std::to_string(l.stride);
  const std::string text =
      R"({"tapestry": "graph/v1", "name": "layer", "tensors": {"x": {"dtype": "float32", "shape": )" +
      shape(l.input) + R"(}, "w": {"dtype": "float32", "shape": )" + shape(l.weight) +
      R"(, "constant": true}, "b": {"dtype": "float32", "shape": [)" + std::to_string(l.weight[0]) +
      R"(], "constant": true}}, "operations": [{"name": "conv", "kernel": "conv2d", "params": {"stride": [)" +
      s + ", " + s + R"(], "padding": [)" + p + ", " + p + R"(], "groups": )" +
      std::to_string(l.groups) +
      R"(}, "inputs": {"input": "x", "weight": "w", "bias": "b"}, "outputs": {"result": "y"}}]})";
  const json::Document doc = json::Document::parse(SourceFile("layer.json", text));
  return graph::expand(graph::decodeGraph(json::Value(doc)), library);
}

// oneDNN's own best for the layer: blocked layouts it picks, weights and the
// input reordered once (untimed); run() times the convolution alone.
class OnednnBest {
public:
  OnednnBest(const Layer& l, const TensorBuffers& in, int threads) {
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    cpu::onednn::useThreads(threads);
    const dnnl::engine& engine = cpu::onednn::cpuEngine();
    stream_ = dnnl::stream(engine);
    const std::int64_t O = l.weight[0], KH = l.weight[2], KW = l.weight[3];
    const std::int64_t OH = (l.input[2] + 2 * l.padding - KH) / l.stride + 1;
    const std::int64_t OW = (l.input[3] + 2 * l.padding - KW) / l.stride + 1;
    const dnnl::memory::dims src = l.input, dst = {l.input[0], O, OH, OW};
    const dnnl::memory::dims wdims =
        l.groups == 1 ? dnnl::memory::dims(l.weight)
                      : dnnl::memory::dims{l.groups, O / l.groups, l.weight[1], KH, KW};
    const dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
        dnnl::memory::desc(src, dt::f32, tag::any), dnnl::memory::desc(wdims, dt::f32, tag::any),
        dnnl::memory::desc({O}, dt::f32, tag::x), dnnl::memory::desc(dst, dt::f32, tag::any),
        {l.stride, l.stride}, {0, 0}, {l.padding, l.padding}, {l.padding, l.padding});
    const dnnl::convolution_forward::primitive_desc pd(desc, cpu::onednn::userScratchpad(), engine);
    impl_ = pd.impl_info_str();
    auto packed = [&](const dnnl::memory::desc& plainDesc, const Buffer& b,
                      const dnnl::memory::desc& want) {
      dnnl::memory plain(plainDesc, engine, b.data());
      dnnl::memory out(want, engine);
      cpu::onednn::reorderStep(plain, out).run(stream_);
      return out;
    };
    const dnnl::memory srcMem =
        packed(dnnl::memory::desc(src, dt::f32, tag::nchw), in.at("x"), pd.src_desc());
    const dnnl::memory wMem =
        packed(dnnl::memory::desc(wdims, dt::f32, l.groups == 1 ? tag::oihw : tag::goihw),
               in.at("w"), pd.weights_desc());
    const dnnl::memory bMem(dnnl::memory::desc({O}, dt::f32, tag::x), engine, in.at("b").data());
    const dnnl::memory dstMem(pd.dst_desc(), engine);
    conv_ = cpu::onednn::Step(dnnl::convolution_forward(pd), pd);
    conv_.arg(DNNL_ARG_SRC, srcMem);
    conv_.arg(DNNL_ARG_WEIGHTS, wMem);
    conv_.arg(DNNL_ARG_BIAS, bMem);
    conv_.arg(DNNL_ARG_DST, dstMem);
  }
  double run() const {
    const double start = Backend::now();
    conv_.run(stream_);
    return Backend::now() - start;
  }
  const std::string& implementation() const { return impl_; }

private:
  dnnl::stream stream_;
  cpu::onednn::Step conv_;
  std::string impl_;
};

// One-operation graph "y = KERNEL(x[, ...])" for the pooling and batchnorm table.
graph::ExpandedGraph oneOp(const std::string& kernel, const std::vector<std::int64_t>& shape,
                           const std::string& params,
                           const metakernel::MetakernelLibrary& library) {
  std::string dims;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    dims += (i ? ", " : "") + std::to_string(shape[i]);
  }
  std::string tensors = R"("x": {"dtype": "float32", "shape": [)" + dims + "]}";
  std::string inputs = R"("input": "x")";
  if (kernel == "batchnorm") {
    for (const char* v : {"scale", "bias", "mean", "var"}) {
      tensors += std::string(R"(, ")") + v + R"(": {"dtype": "float32", "shape": [)" +
                 std::to_string(shape[1]) + R"(], "constant": true})";
      inputs += std::string(R"(, ")") + v + R"(": ")" + v + R"(")";
    }
  }
  const std::string text = R"({"tapestry": "graph/v1", "name": "op", "tensors": {)" + tensors +
                           R"(}, "operations": [{"name": "op", "kernel": ")" + kernel +
                           R"(", "params": )" + params + R"(, "inputs": {)" + inputs +
                           R"(}, "outputs": {"result": "y"}}]})";
  const json::Document doc = json::Document::parse(SourceFile("op.json", text));
  return graph::expand(graph::decodeGraph(json::Value(doc)), library);
}

// The pools of ResNet-18 and MobileNetV2 (batch 1, 64 x 64 images) and two
// batchnorms: the registry's kernel against the loops (pools) or oneDNN's
// batch normalization on plain NCHW (batchnorm), interleaved, medians.
void poolsAndBatchnorm(int threads, int repeat, const metakernel::MetakernelLibrary& library) {
  struct Case {
    const char* kernel;
    std::vector<std::int64_t> shape;
    const char* params;
    const char* what;
  };
  const std::vector<Case> cases = {
      {"maxpool2d",
       {1, 64, 32, 32},
       R"({"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1]})",
       "ResNet-18 maxpool"},
      {"global_avgpool", {1, 512, 2, 2}, "{}", "ResNet-18 global_avgpool"},
      {"global_avgpool", {1, 1280, 2, 2}, "{}", "MobileNetV2 global_avgpool"},
      {"batchnorm", {1, 64, 16, 16}, "{}", "batchnorm"},
      {"batchnorm", {1, 64, 32, 32}, "{}", "batchnorm"},
  };
  std::printf("\npooling and batchnorm float32, %d threads, median of %d interleaved calls (us)\n",
              threads, repeat);
  std::printf("%-28s %-16s %9s %9s %7s  %s\n", "operation", "input", "tapestry", "other", "ratio",
              "tapestry runs / other is");
  CpuBackend backend(1);
  for (const Case& c : cases) {
    const graph::ExpandedGraph g = oneOp(c.kernel, c.shape, c.params, library);
    const graph::Operation& op = g.operations[0];
    const TensorBuffers in = drawInputs(g, 1);
    if (std::string(c.kernel) == "batchnorm") { // var > 0
      for (float& v : in.at("var").elements<float>()) {
        v = std::abs(v) + 0.5f;
      }
    }
    std::vector<PortViews> inViews;
    for (const graph::PortTensors& port : op.inputs) {
      PortViews pv;
      for (std::size_t t : port.tensors) {
        pv.push_back(in.at(g.tensors[t].name).view());
      }
      inViews.push_back(pv);
    }
    Buffer out = Buffer::host(DType::Float32, op.application.outputs[0].tensors[0].shape);
    const std::vector<PortViews> outViews = {{out.view()}};
    const KernelCall call{op, op.application.index, inViews, outViews, 0};
    std::unique_ptr<PreparedKernel> mine = backend.prepareKernel(call);
    std::string runs = "loops";
    if (const auto* pool = dynamic_cast<const cpu::PreparedPool*>(mine.get())) {
      runs = pool->implementation();
    }
    // The other side: the loops for a pool, oneDNN for batchnorm.
    std::unique_ptr<PreparedKernel> loops;
    cpu::onednn::Step bnorm;
    dnnl::stream stream(cpu::onednn::cpuEngine());
    std::string other;
    if (std::string(c.kernel) == "batchnorm") {
      using dt = dnnl::memory::data_type;
      using tag = dnnl::memory::format_tag;
      cpu::onednn::useThreads(threads);
      const dnnl::engine& engine = cpu::onednn::cpuEngine();
      const dnnl::memory::desc x(c.shape, dt::f32, tag::nchw);
      const dnnl::memory::desc v({c.shape[1]}, dt::f32, tag::x);
      const dnnl::batch_normalization_forward::desc desc(
          dnnl::prop_kind::forward_inference, x, 1e-5f,
          dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
              dnnl::normalization_flags::use_shift);
      const dnnl::batch_normalization_forward::primitive_desc pd(
          desc, cpu::onednn::userScratchpad(), engine);
      bnorm = cpu::onednn::Step(dnnl::batch_normalization_forward(pd), pd);
      bnorm.arg(DNNL_ARG_SRC, dnnl::memory(x, engine, in.at("x").data()));
      bnorm.arg(DNNL_ARG_DST, dnnl::memory(x, engine));
      bnorm.arg(DNNL_ARG_SCALE, dnnl::memory(v, engine, in.at("scale").data()));
      bnorm.arg(DNNL_ARG_SHIFT, dnnl::memory(v, engine, in.at("bias").data()));
      bnorm.arg(DNNL_ARG_MEAN, dnnl::memory(v, engine, in.at("mean").data()));
      bnorm.arg(DNNL_ARG_VARIANCE, dnnl::memory(v, engine, in.at("var").data()));
      other = std::string("onednn ") + pd.impl_info_str();
    } else {
      loops = cpu::preparePool(call, cpu::PoolImplementation::Loops);
      other = "loops";
    }
    std::vector<double> a, b;
    for (int r = -3; r < repeat; ++r) {
      double start = Backend::now();
      mine->run(call);
      const double ta = Backend::now() - start;
      start = Backend::now();
      if (loops) {
        loops->run(call);
      } else {
        bnorm.run(stream);
      }
      const double tb = Backend::now() - start;
      if (r >= 0) {
        a.push_back(ta);
        b.push_back(tb);
      }
    }
    std::printf("%-28s %-16s %9.1f %9.1f %7.2f  %s / %s\n", c.what, shapeText(c.shape).c_str(),
                median(a) * 1e6, median(b) * 1e6, median(a) / median(b), runs.c_str(),
                other.c_str());
  }
}
} // namespace

// A benchmark's main is its whole procedure (flags, measurements, the report
// table), read top to bottom; it is longer than 120 lines on purpose.
int main(int argc, char** argv) {
  int threads = 2;
  int repeat = 200;
  std::string graphPath;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--threads") {
      threads = std::atoi(argv[i + 1]);
    } else if (flag == "--repeat") {
      repeat = std::atoi(argv[i + 1]);
    } else if (flag == "--graph") {
      graphPath = argv[i + 1];
    } else {
      std::fprintf(stderr, "usage: bench_conv_cpu [--threads T] [--repeat R] [--graph G.json]\n");
      return 2;
    }
  }
  try {
    const metakernel::MetakernelLibrary library = metakernel::MetakernelLibrary::standard();
    const std::vector<Layer> layers =
        graphPath.empty() ? resnet18() : graphLayers(graphPath, library);
    CpuBackend::setBlasThreads(threads); // kernelThreads(): the kernels' OpenMP team
    CpuBackend backend(1);
    const cpu::ConvLayout layouts[3] = {cpu::ConvLayout::Plain, cpu::ConvLayout::Nhwc,
                                        cpu::ConvLayout::Blocked};
    std::printf("conv2d float32, %s, %d threads, median of %d interleaved calls (us)\n",
                graphPath.empty() ? "ResNet-18 at 1x3x64x64" : graphPath.c_str(), threads, repeat);
    std::printf("%-22s %-16s %-16s %9s %9s %9s %9s %9s %7s  %s\n", "layer", "input", "weight",
                "tapestry", "plain", "nhwc", "blocked", "onednn", "ratio", "implementation");
    double total[6] = {}; // tapestry, plain, nhwc, blocked, onednn (pass 1, pass 2)
    double worst = 0;
    for (const Layer& l : layers) {
      const graph::ExpandedGraph g = layerGraph(l, library);
      const graph::Operation& op = g.operations[0];
      const TensorBuffers in = drawInputs(g, 1);
      std::vector<PortViews> inViews;
      for (const graph::PortTensors& port : op.inputs) {
        PortViews pv;
        for (std::size_t t : port.tensors) {
          TensorView v = in.at(g.tensors[t].name).view();
          v.constant = g.tensors[t].constant;
          pv.push_back(v);
        }
        inViews.push_back(pv);
      }
      Buffer out = Buffer::host(DType::Float32, op.application.outputs[0].tensors[0].shape);
      const std::vector<PortViews> outViews = {{out.view()}};
      const KernelCall call{op, op.application.index, inViews, outViews, 0};
      // The executor's layout between convolutions: both activations nhwc.
      auto channelsLast = [&](const Buffer& rows) {
        const std::vector<std::int64_t> shape = rows.region().shape().vector();
        Buffer b = backend.allocate(DType::Float32, rows.region(), 0)
                       .withStrides(channelsLastStrides(shape));
        backend.copyRegion(rows.view(), b.view(), rows.region());
        return b;
      };
      const Buffer inLast = channelsLast(in.at("x"));
      const Buffer outLast = channelsLast(out);
      std::vector<PortViews> lastIn = inViews;
      lastIn[0][0] = inLast.view();
      const std::vector<PortViews> lastOut = {{outLast.view()}};
      const KernelCall lastCall{op, op.application.index, lastIn, lastOut, 0};
      std::unique_ptr<PreparedKernel> prepared = backend.prepareKernel(lastCall);
      const std::string implementation =
          dynamic_cast<const cpu::PreparedConv&>(*prepared).implementation();
      std::vector<std::unique_ptr<cpu::PreparedConv>> variants;
      for (cpu::ConvLayout layout : layouts) {
        variants.push_back(cpu::prepareConv2d(call, layout));
      }
      const OnednnBest best(l, in, threads);
      auto timed = [&](PreparedKernel& k) {
        const double start = Backend::now();
        k.run(&k == prepared.get() ? lastCall : call);
        return Backend::now() - start;
      };
      // Two passes, each interleaved with oneDNN's own: tapestry's kernel,
      // then the three layouts (fewer buffers in the caches at a time).
      double m[5];
      double best1 = 0, best2 = 0;
      auto pass = [&](const std::vector<PreparedKernel*>& kernels, double* medians,
                      double& bestMedian) {
        std::vector<std::vector<double>> times(kernels.size() + 1);
        for (int r = -3; r < repeat; ++r) { // 3 warm-ups: weights packed, caches warm
          for (std::size_t k = 0; k < kernels.size(); ++k) {
            const double t = timed(*kernels[k]);
            if (r >= 0) {
              times[k].push_back(t);
            }
          }
          const double t = best.run();
          if (r >= 0) {
            times.back().push_back(t);
          }
        }
        for (std::size_t k = 0; k < kernels.size(); ++k) {
          medians[k] = median(times[k]);
        }
        bestMedian = median(times.back());
      };
      pass({prepared.get()}, &m[0], best1);
      pass({variants[0].get(), variants[1].get(), variants[2].get()}, &m[1], best2);
      m[4] = best1;
      for (int k = 0; k < 4; ++k) {
        total[k] += m[k];
      }
      total[4] += best1;
      total[5] += best2;
      const double ratio = m[0] / m[4];
      worst = std::max(worst, ratio);
      std::printf("%-22s %-16s %-16s %9.1f %9.1f %9.1f %9.1f %9.1f %7.2f  %s (onednn: %s)\n",
                  l.name.c_str(), shapeText(l.input).c_str(), shapeText(l.weight).c_str(),
                  m[0] * 1e6, m[1] * 1e6, m[2] * 1e6, m[3] * 1e6, m[4] * 1e6, ratio,
                  implementation.c_str(), best.implementation().c_str());
    }
    std::printf("%-56s %9.1f %9.1f %9.1f %9.1f %9.1f %7.2f\n", "total", total[0] * 1e6,
                total[1] * 1e6, total[2] * 1e6, total[3] * 1e6, total[4] * 1e6,
                total[0] / total[4]);
    std::printf("layouts against onednn (total, its pass-2 time %.1f us): plain %.2f, nhwc %.2f, "
                "blocked %.2f\n",
                total[5] * 1e6, total[1] / total[5], total[2] / total[5], total[3] / total[5]);
    std::printf("worst layer tapestry/onednn: %.2f (target <= 1.3: %s)\n", worst,
                worst <= 1.3 ? "met" : "NOT met");
    if (graphPath.empty()) {
      poolsAndBatchnorm(threads, repeat, library);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_conv_cpu: %s\n", e.what());
    return 1;
  }
  return 0;
}
