// The CPU backend's elementwise, reduction and normalization kernels (issue
// 32): the cost of one prepared run() on small tensors (512 floats: what the
// transformer blocks' small ops are), and the throughput on large ones (1M
// floats), against a plain loop written here (the same formula, float32,
// <cmath> functions, compiled with the build's flags) and, where it has the
// operation, oneDNN's eltwise primitive (created once, run with a ready
// argument map). One process, one thread, the contenders interleaved round by
// round; medians. Prints per-call times and the ratios (ours / other: below 1
// is faster).
//
//   bench_eltwise_cpu [--rounds R] [--filter SUBSTRING]
//
// oneDNN runs with OMP_NUM_THREADS=1 (the program sets it and restarts itself
// when it is unset), so all contenders use one core. TAPESTRY_CPU_ISA picks a
// lower vector level for the backend's kernels.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <unistd.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "backends/backend.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "bench/bench_util.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/loader.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"
#if __has_include("backends/cpu/cpu_isa.hpp")
#include "backends/cpu/cpu_isa.hpp"
#define TAPESTRY_BENCH_HAS_ISA 1
#endif

using namespace tapestry;
using bench::median;
using namespace tapestry::backend;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Seconds per call of f, over `calls` calls.
template <class F> double perCall(F&& f, int calls) {
  const double t0 = now();
  for (int i = 0; i < calls; ++i) {
    f();
  }
  return (now() - t0) / calls;
}

const metakernel::MetakernelLibrary& lib() {
  static const metakernel::MetakernelLibrary library = metakernel::MetakernelLibrary::standard();
  return library;
}

std::string shapeJson(const std::vector<std::int64_t>& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(s[i]);
  }
  return out + "]";
}

struct Tensor {
  std::string name;
  std::vector<std::int64_t> shape;
};

// Inputs are float32 in [-4, 4) (a deterministic sequence), outputs zero.
struct Case {
  std::string label;
  std::string kernel;
  std::vector<Tensor> inputs;
  std::string ports;
  std::string params;
  // The plain loop: ins[i] are the inputs' elements, out the output's.
  std::function<void(const std::vector<const float*>& ins, float* out)> plain;
  std::optional<std::pair<dnnl::algorithm, std::pair<float, float>>> dnnl; // alpha, beta
};

std::int64_t numel(const std::vector<std::int64_t>& s) {
  std::int64_t n = 1;
  for (std::int64_t e : s) {
    n *= e;
  }
  return n;
}

void plainSoftmax(const float* x, float* y, std::int64_t rows, std::int64_t n) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float m = -INFINITY;
    for (std::int64_t i = 0; i < n; ++i) {
      m = std::max(m, xr[i]);
    }
    float total = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      yr[i] = std::exp(xr[i] - m);
      total += yr[i];
    }
    for (std::int64_t i = 0; i < n; ++i) {
      yr[i] /= total;
    }
  }
}

void plainLayernorm(const float* x, const float* g, const float* b, float* y, std::int64_t rows,
                    std::int64_t n) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float sum = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      sum += xr[i];
    }
    const float mean = sum / static_cast<float>(n);
    float sq = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      sq += (xr[i] - mean) * (xr[i] - mean);
    }
    const float inv = 1.0f / std::sqrt(sq / static_cast<float>(n) + 1e-5f);
    for (std::int64_t i = 0; i < n; ++i) {
      yr[i] = (xr[i] - mean) * inv * g[i] + b[i];
    }
  }
}

float gelu(float x) {
  return 0.5f * x * (1.0f + std::erf(x * 0.70710678f));
}

// The row-wise cases: softmax, layernorm and reductions along an axis.
void addRowCases(std::vector<Case>& out) {
  out.push_back(
      {"softmax [4, 128]",
       "softmax",
       {{"x", {4, 128}}},
       R"({"input": "x"})",
       "{}",
       [](const std::vector<const float*>& in, float* y) { plainSoftmax(in[0], y, 4, 128); },
       std::nullopt});
  out.push_back({"layernorm [4, 128]",
                 "layernorm",
                 {{"x", {4, 128}}, {"g", {128}}, {"b", {128}}},
                 R"({"input": "x", "gamma": "g", "beta": "b"})",
                 "{}",
                 [](const std::vector<const float*>& in, float* y) {
                   plainLayernorm(in[0], in[1], in[2], y, 4, 128);
                 },
                 std::nullopt});
  out.push_back({"sum [4, 128] axis -1",
                 "sum",
                 {{"x", {4, 128}}},
                 R"({"input": "x"})",
                 "{}",
                 [](const std::vector<const float*>& in, float* y) {
                   for (std::int64_t r = 0; r < 4; ++r) {
                     float s = 0;
                     for (std::int64_t i = 0; i < 128; ++i) {
                       s += in[0][r * 128 + i];
                     }
                     y[r] = s;
                   }
                 },
                 std::nullopt});
  // Rows of 16: a conv output's rows averaged (testdata/graphs/convnet.json's
  // pool_w), where the cost per row, not per element, is the time.
  out.push_back({"mean [32, 16] axis -1",
                 "mean",
                 {{"x", {32, 16}}},
                 R"({"input": "x"})",
                 "{}",
                 [](const std::vector<const float*>& in, float* y) {
                   for (std::int64_t r = 0; r < 32; ++r) {
                     float s = 0;
                     for (std::int64_t i = 0; i < 16; ++i) {
                       s += in[0][r * 16 + i];
                     }
                     y[r] = s / 16.0f;
                   }
                 },
                 std::nullopt});
  // Down a middle axis: concat_split_embedding.json's pool, the max over 128
  // positions of [8, 128, 192].
  out.push_back({"max [8, 128, 192] axis 1",
                 "max",
                 {{"x", {8, 128, 192}}},
                 R"({"input": "x"})",
                 R"({"axis": 1})",
                 [](const std::vector<const float*>& in, float* y) {
                   for (std::int64_t b = 0; b < 8; ++b) {
                     float* yb = y + b * 192;
                     const float* xb = in[0] + b * 128 * 192;
                     std::copy(xb, xb + 192, yb);
                     for (std::int64_t k = 1; k < 128; ++k) {
                       for (std::int64_t j = 0; j < 192; ++j) {
                         yb[j] = std::max(yb[j], xb[k * 192 + j]);
                       }
                     }
                   }
                 },
                 std::nullopt});
}

std::vector<Case> cases() {
  const std::int64_t small = 512;
  const std::int64_t large = 1 << 20;
  std::vector<Case> out;
  // f is a lambda, so the plain loop calls it inline (no call per element).
  auto unary = [&](const std::string& kernel, std::int64_t n, const std::string& params, auto f,
                   std::optional<std::pair<dnnl::algorithm, std::pair<float, float>>> d) {
    out.push_back({kernel + " [" + std::to_string(n) + "]",
                   kernel,
                   {{"x", {n}}},
                   R"({"input": "x"})",
                   params,
                   [n, f](const std::vector<const float*>& in, float* y) {
                     for (std::int64_t i = 0; i < n; ++i) {
                       y[i] = f(in[0][i]);
                     }
                   },
                   d});
  };
  using A = dnnl::algorithm;
  const std::pair<float, float> none{0.0f, 0.0f};
  unary(
      "relu", small, "{}", [](float x) { return x < 0 ? 0.0f : x; },
      std::make_pair(A::eltwise_relu, none));
  unary(
      "gelu", small, "{}", [](float x) { return gelu(x); },
      std::make_pair(A::eltwise_gelu_erf, none));
  unary(
      "erf", small, "{}", [](float x) { return std::erf(x); }, std::nullopt);
  unary(
      "exp", small, "{}", [](float x) { return std::exp(x); },
      std::make_pair(A::eltwise_exp, none));
  out.push_back({"add [512] + [512]",
                 "add",
                 {{"a", {small}}, {"b", {small}}},
                 R"({"A": "a", "B": "b"})",
                 "{}",
                 [](const std::vector<const float*>& in, float* y) {
                   for (std::int64_t i = 0; i < 512; ++i) {
                     y[i] = in[0][i] + in[1][i];
                   }
                 },
                 std::nullopt});
  out.push_back({"add [4, 128] + [128]",
                 "add",
                 {{"a", {4, 128}}, {"b", {128}}},
                 R"({"A": "a", "B": "b"})",
                 "{}",
                 [](const std::vector<const float*>& in, float* y) {
                   for (std::int64_t r = 0; r < 4; ++r) {
                     for (std::int64_t i = 0; i < 128; ++i) {
                       y[r * 128 + i] = in[0][r * 128 + i] + in[1][i];
                     }
                   }
                 },
                 std::nullopt});
  addRowCases(out);
  unary(
      "clip", large, R"({"min": 0, "max": 6})",
      [](float x) { return std::min(std::max(x, 0.0f), 6.0f); },
      std::make_pair(A::eltwise_clip, std::make_pair(0.0f, 6.0f)));
  unary(
      "erf", large, "{}", [](float x) { return std::erf(x); }, std::nullopt);
  unary(
      "gelu", large, "{}", [](float x) { return gelu(x); },
      std::make_pair(A::eltwise_gelu_erf, none));
  unary(
      "exp", large, "{}", [](float x) { return std::exp(x); },
      std::make_pair(A::eltwise_exp, none));
  unary(
      "tanh", large, "{}", [](float x) { return std::tanh(x); },
      std::make_pair(A::eltwise_tanh, none));
  return out;
}

// Everything one case needs to run: the graph, buffers, the prepared call.
struct Setup {
  graph::ExpandedGraph graph;
  std::vector<Buffer> buffers;
  std::vector<PortViews> ins, outs;
  std::vector<const float*> plainIns;
  Buffer plainOut;
  std::int64_t elements = 0;
};

std::unique_ptr<Setup> setUp(CpuBackend& backend, const Case& c) {
  std::string text = R"({"tapestry": "graph/v1", "name": "b", "tensors": {)";
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    text += (i ? ", " : "") + ("\"" + c.inputs[i].name + R"(": {"dtype": "float32", "shape": )" +
                               shapeJson(c.inputs[i].shape) + "}");
  }
  text += R"(}, "operations": [{"name": "op", "kernel": ")" + c.kernel + R"(", "params": )" +
          c.params + R"(, "inputs": )" + c.ports + "}]}";
  json::Document doc = json::Document::parse(SourceFile("bench.json", text));
  auto s = std::make_unique<Setup>();
  s->graph = graph::expand(graph::decodeGraph(json::Value(doc)), lib());
  s->buffers.reserve(c.inputs.size() + 2);
  for (const Tensor& t : c.inputs) {
    Buffer b = Buffer::host(DType::Float32, t.shape);
    auto e = b.elements<float>();
    for (std::size_t i = 0; i < e.size(); ++i) {
      e[i] = static_cast<float>((i * 7919) % 8000) / 1000.0f - 4.0f;
    }
    s->buffers.push_back(b);
    s->ins.push_back({b.view()});
    s->plainIns.push_back(b.elements<float>().data());
  }
  const auto& result = s->graph.operations[0].application.outputs[0].tensors[0];
  s->buffers.push_back(
      backend.allocate(DType::Float32, ZRange::fromShape(ZPoint(result.shape)), 0));
  s->outs.push_back({s->buffers.back().view()});
  s->plainOut = Buffer::host(DType::Float32, result.shape);
  s->elements = numel(c.inputs[0].shape);
  return s;
}

// oneDNN's eltwise on the case's input and a buffer of its own.
struct Dnnl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::eltwise_forward primitive;
  std::unordered_map<int, dnnl::memory> args;
  Buffer out;

  Dnnl(dnnl::algorithm alg, float alpha, float beta, const float* in, std::int64_t n) {
    const dnnl::memory::desc md({n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
    const dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, alg, md, alpha,
                                           beta);
    primitive = dnnl::eltwise_forward(dnnl::eltwise_forward::primitive_desc(desc, engine));
    out = Buffer::host(DType::Float32, std::vector<std::int64_t>{n});
    args = {{DNNL_ARG_SRC, dnnl::memory(md, engine, const_cast<float*>(in))},
            {DNNL_ARG_DST, dnnl::memory(md, engine, out.data())}};
  }
  void run() {
    primitive.execute(stream, args);
    stream.wait();
  }
};

std::string timeText(double seconds) {
  char buf[32];
  if (seconds < 1e-6) {
    std::snprintf(buf, sizeof buf, "%7.1f ns", seconds * 1e9);
  } else if (seconds < 1e-3) {
    std::snprintf(buf, sizeof buf, "%7.2f us", seconds * 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%7.2f ms", seconds * 1e3);
  }
  return buf;
}

} // namespace

int main(int argc, char** argv) {
  if (std::getenv("OMP_NUM_THREADS") == nullptr) { // oneDNN's OpenMP reads it when it loads
    ::setenv("OMP_NUM_THREADS", "1", 1);
    ::execv("/proc/self/exe", argv);
  }
  int rounds = 15;
  std::string filter;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--filter" && i + 1 < argc) {
      filter = argv[++i];
    } else {
      std::fprintf(stderr, "usage: bench_eltwise_cpu [--rounds R] [--filter SUBSTRING]\n");
      return 2;
    }
  }
  CpuBackend backend(1);
#ifdef TAPESTRY_BENCH_HAS_ISA
  std::printf("vector level: %s (OMP_NUM_THREADS=%s)\n", isaName(activeIsa()),
              std::getenv("OMP_NUM_THREADS"));
#endif
  std::printf("%-22s %11s %11s %11s %11s %9s %9s\n", "case", "prepared", "unprepared", "plain",
              "oneDNN", "ours/plain", "ours/dnnl");
  for (const Case& c : cases()) {
    if (!filter.empty() && c.label.find(filter) == std::string::npos) {
      continue;
    }
    std::unique_ptr<Setup> s = setUp(backend, c);
    const graph::Operation& op = s->graph.operations[0];
    const KernelCall call{op, op.application.index, s->ins, s->outs, 0};
    std::unique_ptr<PreparedKernel> prepared = backend.prepareKernel(call);
    std::unique_ptr<Dnnl> dnnl;
    if (c.dnnl) {
      dnnl = std::make_unique<Dnnl>(c.dnnl->first, c.dnnl->second.first, c.dnnl->second.second,
                                    s->plainIns[0], s->elements);
    }
    // About 2 ms of work per contender per round.
    const double once = perCall([&] { prepared->run(call); }, 3);
    const int calls = std::max(3, static_cast<int>(2e-3 / std::max(once, 1e-9)));
    std::vector<double> ours, unprepared, plain, onednn;
    for (int r = 0; r < rounds; ++r) {
      ours.push_back(perCall([&] { prepared->run(call); }, calls));
      unprepared.push_back(
          perCall([&] { backend.runKernel(op, op.application.index, s->ins, s->outs, 0); }, calls));
      plain.push_back(
          perCall([&] { c.plain(s->plainIns, s->plainOut.elements<float>().data()); }, calls));
      if (dnnl) {
        onednn.push_back(perCall([&] { dnnl->run(); }, calls));
      }
    }
    const double tOurs = median(ours);
    const double tPlain = median(plain);
    const double tDnnl = dnnl ? median(onednn) : 0;
    char dnnlRatio[16] = "-";
    if (dnnl) {
      std::snprintf(dnnlRatio, sizeof dnnlRatio, "%.2f", tOurs / tDnnl);
    }
    std::printf("%-22s %11s %11s %11s %11s %9.2f %9s\n", c.label.c_str(), timeText(tOurs).c_str(),
                timeText(median(unprepared)).c_str(), timeText(tPlain).c_str(),
                dnnl ? timeText(tDnnl).c_str() : "-", tOurs / tPlain, dnnlRatio);
  }
  return 0;
}
