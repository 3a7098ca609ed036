// Matrix products: matmul (batched, k a reduction dim: a shard with part of k
// writes a partial product) and linear (X·W + bias, whole k per point), as
// prepared kernels. prepare reduces a shard to one strided gemm (batched where
// the batch dims allow) plus a list of outer batch offsets (planProduct,
// backends/products.hpp, which the CUDA backend shares) and makes the gemm's
// engine once (gemm_engine.hpp: oneDNN, OpenBLAS, loops); run only walks the
// offsets. transpose_x / transpose_w need no code of their own: the IPFs read
// the swapped dims, so the strides along m, n and k are what the walks give,
// and oneDNN and BLAS read a swapped operand as a transposed layout in place.
#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <cblas.h>

#include "backends/cpu/conv_epilogue.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/cpu_isa.hpp"
#include "backends/cpu/gemm_engine.hpp"
#include "backends/cpu/kernel_util.hpp"
#include "backends/cpu/run_loop.hpp"
#include "backends/cpu/team.hpp"
#include "backends/cpu/vector_math.hpp"
#include "backends/products.hpp"
#include "core/diag/error.hpp"

namespace tapestry::backend::cpu {

// Measured with bench_products_cpu (the backend's engine, 1 against 2
// threads, on the 2-core VM of docs/cpu-products.md): a second thread pays
// only from about 64 MFLOP (square 512: 1.35 -> 0.96 ms, 2048: 91 -> 44-55
// ms). Below that, waking the second thread's core costs 50-300 us here (a
// halted virtual CPU), more than the split saves (square 128: 21 -> 44 us; a
// classifier's [1, 2048] x [2048, 1000]: 166 -> 124 us only while the
// thread was awake, and a model runs it once after 45 ms of convolutions).
// Measured with the parts on helper threads, before they ran on the team.
int productThreads(const GemmGeometry& g) {
  const int threads = CpuBackend::kernelThreads();
  return threads <= 1 || g.flops() < kParallelFlops ? 1 : threads;
}

namespace {

// ---------------------------------------------------------------- BLAS engine

void gemmCall(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, std::int64_t M, std::int64_t N,
              std::int64_t K, const float* A, std::int64_t lda, const float* B, std::int64_t ldb,
              float beta, float* C, std::int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, toBlasInt(M), toBlasInt(N), toBlasInt(K), 1.0f, A,
              toBlasInt(lda), B, toBlasInt(ldb), beta, C, toBlasInt(ldc));
}
void gemmCall(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, std::int64_t M, std::int64_t N,
              std::int64_t K, const double* A, std::int64_t lda, const double* B, std::int64_t ldb,
              double beta, double* C, std::int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, toBlasInt(M), toBlasInt(N), toBlasInt(K), 1.0, A,
              toBlasInt(lda), B, toBlasInt(ldb), beta, C, toBlasInt(ldc));
}

// A strided rows x cols block into dense row-major `out`, converted to F.
template <class F, class T>
void gather(std::int64_t rows, std::int64_t cols, const T* p, std::int64_t rs, std::int64_t cs,
            F* out) {
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      out[i * cols + j] = static_cast<F>(Num<T>::load(p[i * rs + j * cs]));
    }
  }
}

// float and double through cblas, each operand read in place where one of
// its strides is 1 (a transposed operand is a transpose flag), else gathered
// into scratch made at prepare; an output cblas cannot write in place is
// computed densely and scattered.
template <class F> class BlasEngine final : public GemmEngine {
public:
  explicit BlasEngine(const GemmGeometry& g)
      : g_(g), la_(matrixLayout(g.M, g.K, g.rsA, g.csA)), lb_(matrixLayout(g.K, g.N, g.rsB, g.csB)),
        direct_((g.N == 1 || g.csC == 1) && (g.M == 1 || g.rsC >= g.N)) {
    if (!la_) {
      denseA_.resize(static_cast<std::size_t>(g.M * g.K));
    }
    if (!lb_) {
      denseB_.resize(static_cast<std::size_t>(g.K * g.N));
    }
    if (!direct_) {
      denseC_.resize(static_cast<std::size_t>(g.M * g.N));
    }
  }

  void run(const std::byte* a, const std::byte* b, std::byte* c, const std::byte* bias) override {
    const auto* A = reinterpret_cast<const F*>(a);
    const auto* B = reinterpret_cast<const F*>(b);
    auto* C = reinterpret_cast<F*>(c);
    for (std::int64_t i = 0; i < g_.batch; ++i) {
      one(A + i * g_.bsA, B + i * g_.bsB, C + i * g_.bsC, reinterpret_cast<const F*>(bias));
    }
  }

  std::string name() const override {
    return std::string("openblas ") + (std::is_same_v<F, float> ? "sgemm" : "dgemm");
  }

private:
  void one(const F* A, const F* B, F* C, const F* bias) {
    const std::int64_t M = g_.M, N = g_.N, K = g_.K;
    MatrixLayout la = la_.value_or(MatrixLayout{false, std::max<std::int64_t>(K, 1)});
    MatrixLayout lb = lb_.value_or(MatrixLayout{false, std::max<std::int64_t>(N, 1)});
    if (!la_) {
      gather(M, K, A, g_.rsA, g_.csA, denseA_.data());
      A = denseA_.data();
    }
    if (!lb_) {
      gather(K, N, B, g_.rsB, g_.csB, denseB_.data());
      B = denseB_.data();
    }
    F* out = direct_ ? C : denseC_.data();
    const std::int64_t ldc = !direct_ ? N : (M == 1 ? N : g_.rsC);
    const std::int64_t outCs = direct_ && N != 1 ? g_.csC : 1;
    if (bias != nullptr || K == 0) {
      for (std::int64_t i = 0; i < M; ++i) {
        for (std::int64_t j = 0; j < N; ++j) {
          out[i * ldc + j * outCs] = bias != nullptr ? bias[j * g_.biasStride] : F(0);
        }
      }
    }
    if (K > 0) {
      gemmCall(la.transpose ? CblasTrans : CblasNoTrans, lb.transpose ? CblasTrans : CblasNoTrans,
               M, N, K, A, la.ld, B, lb.ld, bias != nullptr ? F(1) : F(0), out, ldc);
    }
    if (!direct_) {
      for (std::int64_t i = 0; i < M; ++i) {
        for (std::int64_t j = 0; j < N; ++j) {
          C[i * g_.rsC + j * g_.csC] = denseC_[static_cast<std::size_t>(i * N + j)];
        }
      }
    }
  }

  GemmGeometry g_;
  std::optional<MatrixLayout> la_, lb_;
  bool direct_;
  std::vector<F> denseA_, denseB_, denseC_;
};

// ---------------------------------------------------------------- 16-bit floats

// float16 (and bfloat16 where oneDNN has no kernel): the operands converted
// into dense float32 scratch, one float32 engine, and the result rounded once
// when stored. A B used in place across runs (WeightUse::Packed) is converted
// only when its data pointer changes.
template <class T> class ConvertEngine final : public GemmEngine {
public:
  ConvertEngine(const GemmGeometry& g, WeightUse weights) : g_(g), weights_(weights) {
    GemmGeometry d;
    d.batch = g.batch;
    d.M = g.M;
    d.N = g.N;
    d.K = g.K;
    d.rsA = g.K;
    d.csA = 1;
    d.rsB = g.N;
    d.csB = 1;
    d.rsC = g.N;
    d.csC = 1;
    d.bsA = g.bsA == 0 ? 0 : g.M * g.K;
    d.bsB = g.bsB == 0 ? 0 : g.K * g.N;
    d.bsC = g.M * g.N;
    d.bias = g.bias;
    d.biasStride = 1;
    a_.resize(static_cast<std::size_t>((d.bsA == 0 ? 1 : g.batch) * g.M * g.K));
    b_.resize(static_cast<std::size_t>((d.bsB == 0 ? 1 : g.batch) * g.K * g.N));
    c_.resize(static_cast<std::size_t>(g.batch * g.M * g.N));
    bias_.resize(static_cast<std::size_t>(g.bias ? g.N : 0));
    inner_ = makeGemmEngine(DType::Float32, d, weights);
  }

  void run(const std::byte* a, const std::byte* b, std::byte* c, const std::byte* bias) override {
    const auto* A = reinterpret_cast<const T*>(a);
    const auto* B = reinterpret_cast<const T*>(b);
    auto* C = reinterpret_cast<T*>(c);
    const std::int64_t batchA = g_.bsA == 0 ? 1 : g_.batch;
    const std::int64_t batchB = g_.bsB == 0 ? 1 : g_.batch;
    for (std::int64_t i = 0; i < batchA; ++i) {
      gather(g_.M, g_.K, A + i * g_.bsA, g_.rsA, g_.csA, a_.data() + i * g_.M * g_.K);
    }
    if (weights_ != WeightUse::Packed || b != convertedFrom_) {
      for (std::int64_t i = 0; i < batchB; ++i) {
        gather(g_.K, g_.N, B + i * g_.bsB, g_.rsB, g_.csB, b_.data() + i * g_.K * g_.N);
      }
      convertedFrom_ = b;
      inner_->weightsChanged();
    }
    if (g_.bias) {
      gather(1, g_.N, reinterpret_cast<const T*>(bias), 0, g_.biasStride, bias_.data());
    }
    inner_->run(reinterpret_cast<const std::byte*>(a_.data()),
                reinterpret_cast<const std::byte*>(b_.data()),
                reinterpret_cast<std::byte*>(c_.data()),
                reinterpret_cast<const std::byte*>(bias_.data()));
    for (std::int64_t i = 0; i < g_.batch; ++i) {
      const float* from = c_.data() + i * g_.M * g_.N;
      T* to = C + i * g_.bsC;
      for (std::int64_t r = 0; r < g_.M; ++r) {
        for (std::int64_t j = 0; j < g_.N; ++j) {
          to[r * g_.rsC + j * g_.csC] = Num<T>::store(from[r * g_.N + j]);
        }
      }
    }
  }

  std::string name() const override { return "float32 blocks, " + inner_->name(); }

private:
  GemmGeometry g_;
  WeightUse weights_;
  std::vector<float> a_, b_, c_, bias_;
  const std::byte* convertedFrom_ = nullptr;
  std::unique_ptr<GemmEngine> inner_;
};

// ---------------------------------------------------------------- integers

// int32 and int64: i-k-j loops into an int64 row, wrapping like the hardware
// (no BLAS multiplies integers). linear rejects integers, so there is no bias.
template <class T> class IntEngine final : public GemmEngine {
public:
  explicit IntEngine(const GemmGeometry& g) : g_(g), row_(static_cast<std::size_t>(g.N)) {}

  void run(const std::byte* a, const std::byte* b, std::byte* c, const std::byte*) override {
    for (std::int64_t i = 0; i < g_.batch; ++i) {
      const T* A = reinterpret_cast<const T*>(a) + i * g_.bsA;
      const T* B = reinterpret_cast<const T*>(b) + i * g_.bsB;
      T* C = reinterpret_cast<T*>(c) + i * g_.bsC;
      for (std::int64_t r = 0; r < g_.M; ++r) {
        std::fill(row_.begin(), row_.end(), std::int64_t{0});
        for (std::int64_t k = 0; k < g_.K; ++k) {
          const std::int64_t x = A[r * g_.rsA + k * g_.csA];
          const T* brow = B + k * g_.rsB;
          for (std::int64_t j = 0; j < g_.N; ++j) {
            row_[static_cast<std::size_t>(j)] =
                wrapAdd(row_[static_cast<std::size_t>(j)], wrapMul(x, brow[j * g_.csB]));
          }
        }
        for (std::int64_t j = 0; j < g_.N; ++j) {
          C[r * g_.rsC + j * g_.csC] = Num<T>::store(row_[static_cast<std::size_t>(j)]);
        }
      }
    }
  }

  std::string name() const override { return "integer loops"; }

private:
  GemmGeometry g_;
  std::vector<std::int64_t> row_;
};

// oneDNN, split into parts on several threads when the product is large
// enough (productThreads); below that, a product that streams at least
// kStreamedB bytes of B (a classifier's weights, read from memory after a
// model's convolutions) runs on the kernel's OpenMP team, the convolutions'
// team, awake between them (docs/cpu-products.md: in the model, ResNet-50's
// classifier 331-368 -> 172-183 us, MobileNetV2's 140-206 -> 88-110 us);
// else one thread.
constexpr double kStreamedB = 1 << 20;

// A product of at most kFewRows rows against at least kLargeB bytes of B
// (decoding-sized batches against large weights) is not split into parts
// along m, which would each stream the whole of B from memory; it runs on
// the team, whose threads divide B's columns (docs/cpu-products.md: 1.05-1.35x
// faster on one device with two threads, [32, 2048] x [2048, 2048] 1.62 ->
// 1.22 ms; with 512 rows or 4 MiB of B the parts are as fast or faster).
constexpr std::int64_t kFewRows = 256;
constexpr double kLargeB = 8 << 20;

std::unique_ptr<GemmEngine> makeOneDnn(DType dtype, const GemmGeometry& g, WeightUse weights,
                                       const GemmActivation& activation) {
  const double bBytes = static_cast<double>((g.bsB != 0 ? g.batch : 1) * g.K * g.N) *
                        static_cast<double>(dtypeSize(dtype));
  const bool streamsB = g.batch * g.M <= kFewRows && bBytes >= kLargeB;
  if (const int parts = productThreads(g); parts > 1 && !streamsB) {
    if (std::unique_ptr<GemmEngine> e = makeSplitGemm(dtype, g, weights, parts, activation)) {
      return e;
    }
  }
  if (const int team = CpuBackend::kernelThreads(); team > 1 && bBytes >= kStreamedB) {
    if (std::unique_ptr<GemmEngine> e = makeDnnlGemm(dtype, g, weights, team, activation)) {
      return e;
    }
  }
  return makeDnnlGemm(dtype, g, weights, 1, activation);
}

} // namespace

namespace {

// One row against a float32 W stored [n, k] (PyTorch's Linear weight, ONNX
// Gemm's transB: a classifier), of kStreamedB bytes or more: each result is a
// dot product of x with one contiguous row of W, the rows shared out over the
// kernel threads' team in order, so that W streams from memory once, front
// to back. oneDNN's packed product of one row read the 8 MB of ResNet-50's
// classifier at 33 GB/s on two threads of the Intel machine (246 us), ONNX
// Runtime's at 40 in the model (docs/cpu-products.md).
class GemvEngine final : public GemmEngine {
public:
  explicit GemvEngine(const GemmGeometry& g) : g_(g), dot_(vectorKernels().dot) {}

  void run(const std::byte* a, const std::byte* b, std::byte* c, const std::byte* bias) override {
    const auto* x = reinterpret_cast<const float*>(a);
    const auto* w = reinterpret_cast<const float*>(b);
    auto* y = reinterpret_cast<float*>(c);
    const auto* bs = reinterpret_cast<const float*>(bias);
    const auto rows = [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t j = lo; j < hi; ++j) {
        const float v = dot_(x, w + j * g_.csB, g_.K);
        y[j * g_.csC] = g_.bias ? v + bs[j * g_.biasStride] : v;
      }
    };
    const int threads = CpuBackend::kernelThreads();
    if (threads <= 1) {
      rows(0, g_.N);
      return;
    }
    overTeam(threads, g_.N, 16, rows);
  }

  std::string name() const override { return "dot products on the team"; }

private:
  GemmGeometry g_;
  float (*dot_)(const float*, const float*, std::int64_t);
};

// At most kMaxPanelRows rows against a constant float32 W of kStreamedB
// bytes or more, where the CPU has AVX-512: W packed once into panels of 16
// columns (VectorKernels::panelProduct), two panels streamed from memory at a
// time, their next lines prefetched, the panel pairs shared out over the
// kernel threads' team. ResNet-50's classifier, [1, 2048] x [2048, 1000]:
// 25 GB/s against the dot products' 18-19 (a standalone test on two threads
// of an Intel Xeon, W from memory, 2026-12-02); the convolutions of few
// pixels run the same kernel (conv_panels.cpp). The caller applies an
// activation.
class PanelEngine final : public GemmEngine {
public:
  explicit PanelEngine(const GemmGeometry& g)
      : g_(g), vk_(&vectorKernels()), ldy_(panelCount(g.N) * kPanelWidth),
        panels_(static_cast<std::size_t>(ldy_ * g.K)), x_(static_cast<std::size_t>(g.M * g.K)),
        y_(static_cast<std::size_t>(g.M * ldy_)) {}

  void run(const std::byte* a, const std::byte* b, std::byte* c, const std::byte* bias) override {
    const auto* A = reinterpret_cast<const float*>(a);
    const auto* B = reinterpret_cast<const float*>(b);
    auto* C = reinterpret_cast<float*>(c);
    const auto* bs = reinterpret_cast<const float*>(bias);
    if (b != packedFrom_) {
      packPanels(g_.K, g_.N, panels_.data(),
                 [&](std::int64_t i, std::int64_t j) { return B[i * g_.rsB + j * g_.csB]; });
      packedFrom_ = b;
    }
    const float* x = A;
    std::int64_t ldx = g_.rsA;
    if (g_.csA != 1) { // rows of x gathered contiguous
      for (std::int64_t r = 0; r < g_.M; ++r) {
        for (std::int64_t i = 0; i < g_.K; ++i) {
          x_[static_cast<std::size_t>(r * g_.K + i)] = A[r * g_.rsA + i * g_.csA];
        }
      }
      x = x_.data();
      ldx = g_.K;
    }
    panelProductOnTeam(*vk_, panels_.data(), g_.K, g_.N, x, ldx, g_.M, y_.data(), ldy_);
    for (std::int64_t r = 0; r < g_.M; ++r) {
      const float* y = y_.data() + r * ldy_;
      for (std::int64_t j = 0; j < g_.N; ++j) {
        C[r * g_.rsC + j * g_.csC] = g_.bias ? y[j] + bs[j * g_.biasStride] : y[j];
      }
    }
  }

  void weightsChanged() override { packedFrom_ = nullptr; }

  std::string name() const override { return "panel products on the team"; }

private:
  GemmGeometry g_;
  const VectorKernels* vk_;
  std::int64_t ldy_;
  std::vector<float> panels_, x_, y_;
  const std::byte* packedFrom_ = nullptr; // the W that panels_ holds
};

// Whether PanelEngine runs `g`: float32 on an AVX-512 CPU, at most
// kMaxPanelRows rows, one gemm, a constant W of kStreamedB bytes or more.
bool isPanelProduct(DType dtype, const GemmGeometry& g, WeightUse weights) {
  return dtype == DType::Float32 && activeIsa() == CpuIsa::Avx512 && weights == WeightUse::Packed &&
         g.batch == 1 && g.M <= kMaxPanelRows && g.K > 0 &&
         static_cast<double>(g.K * g.N) * 4.0 >= kStreamedB;
}

// Whether GemvEngine runs `g`: float32, one row, x and each row of W
// contiguous along k, W of kStreamedB bytes or more.
bool isStreamedGemv(DType dtype, const GemmGeometry& g) {
  return dtype == DType::Float32 && g.batch == 1 && g.M == 1 && g.K > 1 && g.csA == 1 &&
         g.rsB == 1 && static_cast<double>(g.K * g.N) * 4.0 >= kStreamedB;
}

} // namespace

bool blasHasAvx512Kernels() {
  static const bool avx512 = [] {
    const char* core = openblas_get_corename();
    const std::string name = core != nullptr ? core : "";
    return name == "SkylakeX" || name == "Cooperlake" || name == "SapphireRapids";
  }();
  return avx512;
}

std::unique_ptr<GemmEngine> makeGemmEngine(DType dtype, const GemmGeometry& g, WeightUse weights,
                                           const GemmActivation& activation) {
  switch (dtype) {
  case DType::Float32:
    if (isPanelProduct(dtype, g, weights)) {
      return std::make_unique<PanelEngine>(g);
    }
    if (isStreamedGemv(dtype, g) && !activation.any()) {
      return std::make_unique<GemvEngine>(g);
    }
    if (weights == WeightUse::InPlace && g.flops() >= kBlasInPlaceFlops &&
        CpuBackend::kernelThreads() == 1 && blasHasAvx512Kernels()) {
      return std::make_unique<BlasEngine<float>>(g);
    }
    if (std::unique_ptr<GemmEngine> e = makeOneDnn(dtype, g, weights, activation)) {
      return e;
    }
    return std::make_unique<BlasEngine<float>>(g);
  case DType::Float64:
    return std::make_unique<BlasEngine<double>>(g);
  case DType::BFloat16:
    if (std::unique_ptr<GemmEngine> e = makeOneDnn(dtype, g, weights, activation)) {
      return e;
    }
    return std::make_unique<ConvertEngine<BFloat16>>(g, weights);
  case DType::Float16:
    return std::make_unique<ConvertEngine<Half>>(g, weights);
  case DType::Int32:
    return std::make_unique<IntEngine<std::int32_t>>(g);
  case DType::Int64:
    return std::make_unique<IntEngine<std::int64_t>>(g);
  case DType::Bool:
    break;
  }
  throw InternalError(std::string("no matrix product engine for ") + dtypeName(dtype));
}

namespace {

// ---------------------------------------------------------------- shards as gemms

// A matmul or linear shard made ready: its plan (offsets in bytes) and engine.
class PreparedProduct final : public PreparedKernel {
public:
  PreparedProduct(const ProductPlan& plan, std::unique_ptr<GemmEngine> engine, std::size_t size)
      : engine_(std::move(engine)), bias_(plan.gemm.bias),
        bias0_(plan.bias0 * static_cast<std::int64_t>(size)) {
    for (const auto& o : plan.outer) {
      outer_.push_back({o[0] * static_cast<std::int64_t>(size),
                        o[1] * static_cast<std::int64_t>(size),
                        o[2] * static_cast<std::int64_t>(size)});
    }
  }

  void run(const KernelCall& call) override {
    const std::byte* x = call.inputs[0][0].data;
    const std::byte* w = call.inputs[1][0].data;
    const std::byte* bias = bias_ ? call.inputs[2][0].data + bias0_ : nullptr;
    std::byte* r = call.outputs[0][0].data;
    for (const auto& o : outer_) {
      engine_->run(x + o[0], w + o[1], r + o[2], bias);
    }
  }

  const GemmEngine& engine() const { return *engine_; }

private:
  std::unique_ptr<GemmEngine> engine_;
  std::vector<std::array<std::int64_t, 3>> outer_;
  bool bias_;
  std::int64_t bias0_;
};

std::unique_ptr<PreparedProduct> prepareProductOf(const KernelCall& call,
                                                  const GemmActivation& activation = {}) {
  const DType dtype = call.outputs[0][0].dtype;
  if (isLinearKernel(call.op.kernel) && !isFloat(dtype)) {
    unsupportedDType(call, dtype);
  }
  const ProductPlan plan = planProduct(call);
  // A constant W read at the same place by every gemm of the shard may be
  // kept in the engine's own layout between runs.
  bool sameW = plan.gemm.batch == 1 || plan.gemm.bsB == 0;
  for (const auto& o : plan.outer) {
    sameW = sameW && o[1] == plan.outer.front()[1];
  }
  const WeightUse weights =
      call.inputs[1][0].constant && sameW ? WeightUse::Packed : WeightUse::InPlace;
  return std::make_unique<PreparedProduct>(
      plan, makeGemmEngine(dtype, plan.gemm, weights, activation), dtypeSize(dtype));
}

std::unique_ptr<PreparedKernel> prepareProduct(const KernelCall& call) {
  return prepareProductOf(call);
}

void productKernel(const KernelCall& call) {
  prepareProductOf(call)->run(call);
}

// linear_act: without a residual, the activation in the product itself where
// its engine can (oneDNN's eltwise post-ops: gelu_erf, relu or clip); else
// the product, then its epilogue as one pass over the shard's
// output box while it is still in cache: y = clip(act(y + residual), min, max),
// act the exact GELU with `gelu`, its tanh approximation with `gelu_tanh`, SiLU with `silu`. The
// pass walks the box
// in memory order and, from kTeamFrom elements, on the kernel threads' team like the elementwise
// kernels (a GPT-2 MLP's [128, 3072] GELU on one thread took 0.3 ms more than
// the separate gelu on the team). float32 runs the vector loops (SLEEF's
// erf), the other dtypes compute each element in their compute type.
class PreparedLinearAct final : public PreparedKernel {
public:
  explicit PreparedLinearAct(const KernelCall& call)
      : residual_(call.hasInput(3)), act_{intBinding(call.op, "gelu") != 0,
                                          floatParam(call.op, "min"), floatParam(call.op, "max"),
                                          intBinding(call.op, "gelu_tanh") != 0,
                                          intBinding(call.op, "silu") != 0},
        product_(prepareProductOf(call, residual_ ? GemmActivation{} : act_)),
        fused_(!residual_ && product_->engine().appliesActivation()), vec_(&vectorKernels()),
        loop_(residual_ ? ipfLoop<2>(call, {&call.inputs[3][0], &call.outputs[0][0]},
                                     {&inputIpf(call, 3), &outputIpf(call, 0)}, true)
                        : ipfLoop<2>(call, {&call.outputs[0][0], &call.outputs[0][0]},
                                     {&outputIpf(call, 0), &outputIpf(call, 0)}, true)) {}

  void run(const KernelCall& call) override {
    product_->run(call);
    if (fused_ || (!residual_ && !act_.any())) {
      return;
    }
    std::byte* out = call.outputs[0][0].data;
    const std::byte* res = residual_ ? call.inputs[3][0].data : out;
    const std::int64_t rs = loop_.stride(0);
    const std::int64_t ys = loop_.stride(1);
    dispatchFloat(call, [&](auto tag) {
      using T = typename decltype(tag)::type;
      forEachPiece(
          loop_, {const_cast<std::byte*>(res), out}, 1, 16, [&](const auto& at, std::int64_t m) {
            epilogue<T>(reinterpret_cast<T*>(at[1]), reinterpret_cast<const T*>(at[0]), m, ys, rs);
          });
    });
  }

  // The product's engine, and "then an epilogue pass" where it is not fused.
  std::string engineName() const {
    const bool pass = !fused_ && (residual_ || act_.any());
    return product_->engine().name() + (pass ? ", then an epilogue pass" : "");
  }

private:
  template <class T>
  void epilogue(T* y, const T* r, std::int64_t n, std::int64_t ys, std::int64_t rs) const {
    if constexpr (std::is_same_v<T, float>) {
      if (ys == 1 && (rs == 1 || !residual_)) {
        if (residual_) {
          vec_->binary[static_cast<int>(VBinary::Add)][static_cast<int>(VScalar::None)](r, y, y, n);
        }
        if (act_.gelu) {
          vec_->unary[static_cast<int>(VUnary::Gelu)](y, y, n, 0.0f, 0.0f);
        }
        if (act_.geluTanh) {
          vec_->unary[static_cast<int>(VUnary::GeluTanh)](y, y, n, 0.0f, 0.0f);
        }
        if (act_.silu) {
          vec_->unary[static_cast<int>(VUnary::Silu)](y, y, n, 0.0f, 0.0f);
        }
        if (act_.clips()) {
          vec_->unary[static_cast<int>(VUnary::Clip)](y, y, n, clipBound<float>(act_.lo),
                                                      clipBound<float>(act_.hi));
        }
        return;
      }
    }
    using C = typename Num<T>::C;
    const C lo = clipBound<C>(act_.lo);
    const C hi = clipBound<C>(act_.hi);
    for (std::int64_t j = 0; j < n; ++j) {
      C v = Num<T>::load(y[j * ys]);
      if (residual_) {
        v += Num<T>::load(r[j * rs]);
      }
      if (act_.gelu) {
        v = geluErf(v);
      }
      if (act_.geluTanh) {
        v = geluTanh(v);
      }
      if (act_.silu) {
        v = silu(v);
      }
      if (act_.clips()) {
        v = ConvEpilogue::clip(v, lo, hi);
      }
      y[j * ys] = Num<T>::store(v);
    }
  }

  bool residual_;
  GemmActivation act_; // gelu, min, max, gelu_tanh and silu
  std::unique_ptr<PreparedProduct> product_;
  bool fused_; // the product's engine applies the activation (no residual)
  const VectorKernels* vec_;
  RunLoop<2> loop_; // the residual (or the output again) and the output over the box
};

std::unique_ptr<PreparedKernel> prepareLinearAct(const KernelCall& call) {
  return std::make_unique<PreparedLinearAct>(call);
}

void linearActKernel(const KernelCall& call) {
  PreparedLinearAct(call).run(call);
}

} // namespace

std::string productEngineName(const KernelCall& call) {
  if (call.op.kernel == "linear_act") {
    return PreparedLinearAct(call).engineName();
  }
  return prepareProductOf(call)->engine().name();
}

void registerMatmulKernels(CpuRegistry& registry) {
  registry.add("matmul", &productKernel, &prepareProduct);
  registry.add("linear", &productKernel, &prepareProduct);
  registry.add("linear_act", &linearActKernel, &prepareLinearAct);
}

void gemmDense(std::int64_t M, std::int64_t N, std::int64_t K, const float* A, const float* B,
               float* C) {
  if (M == 0 || N == 0) {
    return;
  }
  if (K == 0) {
    std::fill_n(C, M * N, 0.0f);
    return;
  }
  gemmCall(CblasNoTrans, CblasNoTrans, M, N, K, A, K, B, N, 0.0f, C, N);
}
void gemmDense(std::int64_t M, std::int64_t N, std::int64_t K, const double* A, const double* B,
               double* C) {
  if (M == 0 || N == 0) {
    return;
  }
  if (K == 0) {
    std::fill_n(C, M * N, 0.0);
    return;
  }
  gemmCall(CblasNoTrans, CblasNoTrans, M, N, K, A, K, B, N, 0.0, C, N);
}

void denseGemm(std::int64_t m, std::int64_t n, std::int64_t k, const double* a, const double* b,
               double* c) {
  gemmDense(m, n, k, a, b, c);
}

} // namespace tapestry::backend::cpu
