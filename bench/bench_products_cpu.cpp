// Which library should run a matrix product of a given shape on this CPU:
// OpenBLAS (cblas_sgemm, W as stored, transposed or not) against oneDNN's
// matmul (plain strided weights, and weights reordered once into the blocked
// layout oneDNN picks, as for a constant W) and oneDNN's inner product, on
// the shapes of the testdata models (CNN classifiers, the transformer layers'
// projections and attention products, mlp3) and on a large square one, with 1
// and 2 threads; and the CPU backend's own engine for the product (variant
// "tapestry": makeGemmEngine with weights packed as for a constant W, split
// into parts on helper threads when large enough, at CpuBackend's thread
// count). Each case times every variant interleaved, round after round,
// and prints the median time per call of each and its ratio to OpenBLAS.
// bfloat16 (oneDNN only, where the CPU has it) is timed against float32 sgemm.
//
//   bench_products_cpu [--rounds R] [--threads T,...] [--only CASE] [--variant NAME] [--bf16]
//
// What the CPU backend chose from these figures: docs/cpu-products.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/gemm_engine.hpp"
#include "bench/bench_util.hpp"

using tapestry::bench::median;

namespace {

using dims = dnnl::memory::dims;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Case {
  const char* name;
  int batch; // products of one batch (attention); W per batch element when > 1
  int m, k, n;
  bool transW; // W stored [n, k] (Gemm transB, PyTorch Linear)
};

// Fills with values in [-1, 1).
void fill(std::vector<float>& v, unsigned seed) {
  std::uint32_t s = seed * 2654435761u + 1;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / static_cast<float>(1 << 23) - 1.0f;
  }
}

// One way to run a case: prepare once (outside timing), then call.
struct Variant {
  std::string name;
  std::function<void()> call;
};

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// Times the variants of one case interleaved: `rounds` rounds, each calling
// every variant `inner` times after 5 ms idle; per variant the median and the least per-call time.
std::vector<std::pair<double, double>> timeVariants(const std::vector<Variant>& vs, int rounds,
                                                    int inner) {
  std::vector<std::vector<double>> t(vs.size());
  for (const Variant& v : vs) { // warm-up
    for (int i = 0; i < 3; ++i) {
      v.call();
    }
  }
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t i = 0; i < vs.size(); ++i) {
      // Idle threads of the variant before (OpenMP's team, OpenBLAS's pool)
      // spin on for a while after it; let them fall asleep first.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      const double start = now();
      for (int j = 0; j < inner; ++j) {
        vs[i].call();
      }
      t[i].push_back((now() - start) / inner);
    }
  }
  std::vector<std::pair<double, double>> out;
  for (auto& x : t) {
    out.emplace_back(median(x), *std::min_element(x.begin(), x.end()));
  }
  return out;
}

} // namespace

// A benchmark's main is its whole procedure (flags, cases, the variants of each,
// the table), read top to bottom; it is longer than 120 lines on purpose.
int main(int argc, char** argv) {
  int rounds = 15;
  std::vector<int> threadCounts = {1, 2};
  std::string only;
  bool bf16 = false;
  std::string variant; // only variants whose name contains this
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (flag == "--threads" && i + 1 < argc) {
      threadCounts.clear();
      std::string list = argv[++i];
      for (std::size_t p = 0; p < list.size();) {
        threadCounts.push_back(std::atoi(list.c_str() + p));
        const std::size_t comma = list.find(',', p);
        p = comma == std::string::npos ? list.size() : comma + 1;
      }
    } else if (flag == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (flag == "--variant" && i + 1 < argc) {
      variant = argv[++i];
    } else if (flag == "--bf16") {
      bf16 = true;
    } else {
      std::fprintf(stderr, "usage: bench_products_cpu [--rounds R] [--threads T,...] "
                           "[--only SUBSTRING] [--variant SUBSTRING] [--bf16]\n");
      return 2;
    }
  }
  const std::vector<Case> cases = {
      {"resnet18_fc", 1, 1, 512, 1000, true},
      {"resnet50_fc", 1, 1, 2048, 1000, true},
      {"mobilenet_fc", 1, 1, 1280, 1000, true},
      {"bert_qkv", 1, 16, 64, 192, false},
      {"bert_proj", 1, 16, 64, 64, false},
      {"bert_ffn1", 1, 16, 64, 256, false},
      {"bert_ffn2", 1, 16, 256, 64, false},
      {"gpt2_qkv", 1, 16, 32, 96, false},
      {"gpt2_ffn1", 1, 16, 32, 128, false},
      {"attn_scores", 8, 8, 16, 8, true},
      {"attn_values", 8, 8, 8, 16, false},
      {"mlp3_fc1", 1, 4, 16, 64, true},
      {"mlp3_fc2", 1, 4, 64, 64, true},
      // Where a second thread starts to pay (productThreads' size rule).
      {"square_64", 1, 64, 64, 64, false},
      {"square_96", 1, 96, 96, 96, false},
      {"square_128", 1, 128, 128, 128, false},
      {"square_160", 1, 160, 160, 160, false},
      {"square_256", 1, 256, 256, 256, false},
      {"rows64_fc", 1, 64, 512, 128, true},
      {"square_512", 1, 512, 512, 512, false},
      {"square_2048", 1, 2048, 2048, 2048, false},
      // a LLaMA-like layer's projections (d 1024, hidden 2752, 128 tokens),
      // W stored [n, k] as PyTorch's Linear keeps it
      {"llama_proj", 1, 128, 1024, 1024, true},
      {"llama_gate", 1, 128, 1024, 2752, true},
      {"llama_down", 1, 128, 2752, 1024, true},
  };
  // As the backend runs: its constructor stops OpenBLAS's pool threads from
  // spinning for 0.1 s after each product (cpu_backend.cpp).
  const tapestry::backend::CpuBackend backend(2);
  (void)backend;
  dnnl::stream stream(engine());
  std::printf("%-13s %3s %-12s %10s %7s %10s %7s\n", "case", "thr", "variant", "median us",
              "x blas", "min us", "x blas");
  for (int threads : threadCounts) {
    openblas_set_num_threads(threads);
    omp_set_num_threads(threads);
    for (const Case& c : cases) {
      if (!only.empty() && std::string(c.name).find(only) == std::string::npos) {
        continue;
      }
      const int B = c.batch, M = c.m, K = c.k, N = c.n;
      std::vector<float> x(static_cast<std::size_t>(B) * M * K);
      std::vector<float> w(static_cast<std::size_t>(B) * K * N);
      std::vector<float> y(static_cast<std::size_t>(B) * M * N);
      fill(x, 1);
      fill(w, 2);
      const double flops = 2.0 * B * M * N * K;
      const int inner = std::max(1, static_cast<int>(2e7 / std::max(flops, 1.0)));
      std::vector<Variant> vs;
      // OpenBLAS: one sgemm per batch element.
      vs.push_back({"openblas", [&] {
                      for (int b = 0; b < B; ++b) {
                        cblas_sgemm(CblasRowMajor, CblasNoTrans,
                                    c.transW ? CblasTrans : CblasNoTrans, M, N, K, 1.0f,
                                    x.data() + b * M * K, K, w.data() + b * K * N, c.transW ? K : N,
                                    0.0f, y.data() + b * M * N, N);
                      }
                    }});
      // The CPU backend's engine, as a prepared matmul/linear runs it.
      tapestry::backend::CpuBackend::setBlasThreads(threads);
      tapestry::backend::GemmGeometry g;
      g.batch = B;
      g.M = M;
      g.N = N;
      g.K = K;
      g.rsA = K;
      g.csA = 1;
      g.bsA = M * K;
      g.rsB = c.transW ? 1 : N;
      g.csB = c.transW ? K : 1;
      g.bsB = K * N;
      g.rsC = N;
      g.csC = 1;
      g.bsC = M * N;
      const std::unique_ptr<tapestry::backend::cpu::GemmEngine> ours =
          tapestry::backend::cpu::makeGemmEngine(tapestry::backend::DType::Float32, g,
                                                 B == 1
                                                     ? tapestry::backend::cpu::WeightUse::Packed
                                                     : tapestry::backend::cpu::WeightUse::InPlace);
      vs.push_back({"tapestry", [&] {
                      ours->run(reinterpret_cast<const std::byte*>(x.data()),
                                reinterpret_cast<const std::byte*>(w.data()),
                                reinterpret_cast<std::byte*>(y.data()), nullptr);
                    }});
      // oneDNN's own team of `threads` (the backend's engine set this thread's to 1).
      omp_set_num_threads(threads);
      // oneDNN matmul, weights as stored (strides), primitive made once.
      const dims xd = B == 1 ? dims{M, K} : dims{B, M, K};
      const dims wd = B == 1 ? dims{K, N} : dims{B, K, N};
      const dims yd = B == 1 ? dims{M, N} : dims{B, M, N};
      const dims ws = B == 1 ? (c.transW ? dims{1, K} : dims{N, 1})
                             : (c.transW ? dims{K * N, 1, K} : dims{K * N, N, 1});
      const dnnl::memory::desc xmd(xd, dt::f32, B == 1 ? tag::ab : tag::abc);
      const dnnl::memory::desc wmd(wd, dt::f32, ws);
      const dnnl::memory::desc ymd(yd, dt::f32, B == 1 ? tag::ab : tag::abc);
      dnnl::memory xm(xmd, engine(), x.data());
      dnnl::memory wm(wmd, engine(), w.data());
      dnnl::memory ym(ymd, engine(), y.data());
      dnnl::matmul plain(dnnl::matmul::primitive_desc(dnnl::matmul::desc(xmd, wmd, ymd), engine()));
      std::vector<dnnl_exec_arg_t> args = {
          {DNNL_ARG_SRC, xm.get()}, {DNNL_ARG_WEIGHTS, wm.get()}, {DNNL_ARG_DST, ym.get()}};
      vs.push_back({"dnnl_plain", [&] {
                      omp_set_num_threads(threads); // the backend's engine sets 1
                      dnnl_primitive_execute(plain.get(), stream.get(), 3, args.data());
                      stream.wait();
                    }});
      // oneDNN matmul, weights reordered once into its own layout (constant W).
      const dnnl::memory::desc wany(wd, dt::f32, tag::any);
      dnnl::matmul::primitive_desc packedPd(dnnl::matmul::desc(xmd, wany, ymd), engine());
      dnnl::memory wpacked(packedPd.weights_desc(), engine());
      dnnl::reorder(wm, wpacked).execute(stream, wm, wpacked);
      stream.wait();
      dnnl::matmul packed(packedPd);
      std::vector<dnnl_exec_arg_t> pargs = {
          {DNNL_ARG_SRC, xm.get()}, {DNNL_ARG_WEIGHTS, wpacked.get()}, {DNNL_ARG_DST, ym.get()}};
      vs.push_back({"dnnl_packed", [&] {
                      omp_set_num_threads(threads);
                      dnnl_primitive_execute(packed.get(), stream.get(), 3, pargs.data());
                      stream.wait();
                    }});
      // oneDNN inner product (2-D only): weights [N, K] in its own layout.
      dnnl::memory ipw;
      dnnl::inner_product_forward ip;
      std::vector<dnnl_exec_arg_t> iargs;
      if (B == 1) {
        const dnnl::memory::desc iwany({N, K}, dt::f32, tag::any);
        dnnl::inner_product_forward::primitive_desc ipd(
            dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_inference, xmd, iwany, ymd),
            engine());
        const dnnl::memory::desc wOI({N, K}, dt::f32, c.transW ? dims{K, 1} : dims{1, N});
        dnnl::memory wsrc(wOI, engine(), w.data());
        ipw = dnnl::memory(ipd.weights_desc(), engine());
        dnnl::reorder(wsrc, ipw).execute(stream, wsrc, ipw);
        stream.wait();
        ip = dnnl::inner_product_forward(ipd);
        iargs = {{DNNL_ARG_SRC, xm.get()}, {DNNL_ARG_WEIGHTS, ipw.get()}, {DNNL_ARG_DST, ym.get()}};
        vs.push_back({"dnnl_inner", [&] {
                        omp_set_num_threads(threads);
                        dnnl_primitive_execute(ip.get(), stream.get(), 3, iargs.data());
                        stream.wait();
                      }});
      }
      // bfloat16 through oneDNN (weights packed once), against float32 sgemm.
      std::vector<std::uint16_t> xb(x.size()), wb(w.size()), yb(y.size());
      dnnl::memory xbm, wbm, ybm;
      dnnl::matmul bfm;
      std::vector<dnnl_exec_arg_t> bargs;
      if (bf16) {
        const dnnl::memory::desc xbd(xd, dt::bf16, B == 1 ? tag::ab : tag::abc);
        const dnnl::memory::desc ybd(yd, dt::bf16, B == 1 ? tag::ab : tag::abc);
        const dnnl::memory::desc wbany(wd, dt::bf16, tag::any);
        dnnl::matmul::primitive_desc bpd(dnnl::matmul::desc(xbd, wbany, ybd), engine());
        xbm = dnnl::memory(xbd, engine(), xb.data());
        ybm = dnnl::memory(ybd, engine(), yb.data());
        wbm = dnnl::memory(bpd.weights_desc(), engine());
        dnnl::reorder(wm, wbm).execute(stream, wm, wbm);
        stream.wait();
        bfm = dnnl::matmul(bpd);
        bargs = {
            {DNNL_ARG_SRC, xbm.get()}, {DNNL_ARG_WEIGHTS, wbm.get()}, {DNNL_ARG_DST, ybm.get()}};
        vs.push_back({"dnnl_bf16", [&] {
                        omp_set_num_threads(threads);
                        dnnl_primitive_execute(bfm.get(), stream.get(), 3, bargs.data());
                        stream.wait();
                      }});
      }
      if (!variant.empty()) { // the baseline (first) stays for the ratios
        vs.erase(std::remove_if(
                     vs.begin() + 1, vs.end(),
                     [&](const Variant& v) { return v.name.find(variant) == std::string::npos; }),
                 vs.end());
      }
      const std::vector<std::pair<double, double>> t = timeVariants(vs, rounds, inner);
      for (std::size_t i = 0; i < vs.size(); ++i) {
        std::printf("%-13s %3d %-12s %10.2f %7.2f %10.2f %7.2f\n", c.name, threads,
                    vs[i].name.c_str(), t[i].first * 1e6, t[0].first / t[i].first,
                    t[i].second * 1e6, t[0].second / t[i].second);
      }
    }
  }
  return 0;
}
