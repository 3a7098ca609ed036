// Matrix products: matmul (batched, k a reduction dim: a shard with part of k
// writes a partial product) and linear (X·W + bias, whole k per point). float
// and double call cblas_sgemm/dgemm on the views in place, with leading
// dimensions taken from the view strides; float16 and bfloat16 compute in
// float32 blocks; integers use wrapping loops.
#include <algorithm>
#include <climits>
#include <optional>
#include <vector>

#include <cblas.h>

#include "backends/cpu/kernel_util.hpp"
#include "core/diag/error.hpp"

namespace tapestry::backend::cpu {

namespace {

blasint toBlasInt(std::int64_t v) {
  if (v > static_cast<std::int64_t>(INT_MAX)) {
    throw Error("backend cpu: a matrix dimension of " + std::to_string(v) +
                " is too large for BLAS (at most " + std::to_string(INT_MAX) + ")");
  }
  return static_cast<blasint>(v);
}

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

// A strided rows x cols block copied into a dense row-major one, converted to F.
template <class F, class T>
std::vector<F> denseCopy(std::int64_t rows, std::int64_t cols, const T* p, std::int64_t rs,
                         std::int64_t cs) {
  std::vector<F> out(static_cast<std::size_t>(rows * cols));
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      out[static_cast<std::size_t>(i * cols + j)] =
          static_cast<F>(Num<T>::load(p[i * rs + j * cs]));
    }
  }
  return out;
}

// C = A·B + bias for float/double, in place through cblas.
template <class F>
void blasGemm(std::int64_t M, std::int64_t N, std::int64_t K, const F* A, std::int64_t rsA,
              std::int64_t csA, const F* B, std::int64_t rsB, std::int64_t csB, F* C,
              std::int64_t rsC, std::int64_t csC, const F* bias) {
  if (M == 0 || N == 0) {
    return;
  }
  std::vector<F> denseA;
  std::vector<F> denseB;
  std::optional<MatrixLayout> la = matrixLayout(M, K, rsA, csA);
  if (!la) {
    denseA = denseCopy<F>(M, K, A, rsA, csA);
    A = denseA.data();
    la = MatrixLayout{false, std::max<std::int64_t>(K, 1)};
  }
  std::optional<MatrixLayout> lb = matrixLayout(K, N, rsB, csB);
  if (!lb) {
    denseB = denseCopy<F>(K, N, B, rsB, csB);
    B = denseB.data();
    lb = MatrixLayout{false, std::max<std::int64_t>(N, 1)};
  }
  // C must be row-major with unit columns; otherwise compute densely and scatter.
  const bool direct = (N == 1 || csC == 1) && (M == 1 || rsC >= N);
  std::vector<F> denseC;
  F* out = C;
  std::int64_t ldc = M == 1 ? N : rsC;
  if (!direct) {
    denseC.assign(static_cast<std::size_t>(M * N), F(0));
    out = denseC.data();
    ldc = N;
  }
  const std::int64_t outCs = direct ? (N == 1 ? 1 : csC) : 1;
  if (bias != nullptr) {
    for (std::int64_t i = 0; i < M; ++i) {
      for (std::int64_t j = 0; j < N; ++j) {
        out[i * ldc + j * outCs] = bias[j];
      }
    }
  }
  if (K == 0) {
    if (bias == nullptr) {
      for (std::int64_t i = 0; i < M; ++i) {
        for (std::int64_t j = 0; j < N; ++j) {
          out[i * ldc + j * outCs] = F(0);
        }
      }
    }
  } else {
    gemmCall(la->transpose ? CblasTrans : CblasNoTrans, lb->transpose ? CblasTrans : CblasNoTrans,
             M, N, K, A, la->ld, B, lb->ld, bias != nullptr ? F(1) : F(0), out, ldc);
  }
  if (!direct) {
    for (std::int64_t i = 0; i < M; ++i) {
      for (std::int64_t j = 0; j < N; ++j) {
        C[i * rsC + j * csC] = denseC[static_cast<std::size_t>(i * N + j)];
      }
    }
  }
}

} // namespace

template <class T>
void matmulBlock(std::int64_t M, std::int64_t N, std::int64_t K, const T* A, std::int64_t rsA,
                 std::int64_t csA, const T* B, std::int64_t rsB, std::int64_t csB, T* C,
                 std::int64_t rsC, std::int64_t csC, const typename Num<T>::C* bias) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    blasGemm<T>(M, N, K, A, rsA, csA, B, rsB, csB, C, rsC, csC, bias);
  } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    // Compute in float32 blocks, round once when storing.
    std::vector<float> a = denseCopy<float>(M, K, A, rsA, csA);
    std::vector<float> b = denseCopy<float>(K, N, B, rsB, csB);
    std::vector<float> c(static_cast<std::size_t>(M * N));
    blasGemm<float>(M, N, K, a.data(), K, 1, b.data(), N, 1, c.data(), N, 1, bias);
    for (std::int64_t i = 0; i < M; ++i) {
      for (std::int64_t j = 0; j < N; ++j) {
        C[i * rsC + j * csC] = Num<T>::store(c[static_cast<std::size_t>(i * N + j)]);
      }
    }
  } else {
    // Integers: i-k-j loops into an int64 row, wrapping like the hardware.
    std::vector<std::int64_t> row(static_cast<std::size_t>(N));
    for (std::int64_t i = 0; i < M; ++i) {
      for (std::int64_t j = 0; j < N; ++j) {
        row[static_cast<std::size_t>(j)] = bias != nullptr ? bias[j] : 0;
      }
      for (std::int64_t k = 0; k < K; ++k) {
        const std::int64_t a = A[i * rsA + k * csA];
        const T* brow = B + k * rsB;
        for (std::int64_t j = 0; j < N; ++j) {
          row[static_cast<std::size_t>(j)] =
              wrapAdd(row[static_cast<std::size_t>(j)], wrapMul(a, brow[j * csB]));
        }
      }
      for (std::int64_t j = 0; j < N; ++j) {
        C[i * rsC + j * csC] = Num<T>::store(row[static_cast<std::size_t>(j)]);
      }
    }
  }
}

template void matmulBlock<float>(std::int64_t, std::int64_t, std::int64_t, const float*,
                                 std::int64_t, std::int64_t, const float*, std::int64_t,
                                 std::int64_t, float*, std::int64_t, std::int64_t, const float*);
template void matmulBlock<double>(std::int64_t, std::int64_t, std::int64_t, const double*,
                                  std::int64_t, std::int64_t, const double*, std::int64_t,
                                  std::int64_t, double*, std::int64_t, std::int64_t, const double*);

void gemmDense(std::int64_t M, std::int64_t N, std::int64_t K, const float* A, const float* B,
               float* C) {
  blasGemm<float>(M, N, K, A, K, 1, B, N, 1, C, N, 1, nullptr);
}
void gemmDense(std::int64_t M, std::int64_t N, std::int64_t K, const double* A, const double* B,
               double* C) {
  blasGemm<double>(M, N, K, A, K, 1, B, N, 1, C, N, 1, nullptr);
}

namespace {

// Calls f(batch point) for each point of dims [0, count) of the shard (once for
// count 0), with a scratch vector the caller extends into tensor coordinates.
template <class F> void forEachBatch(const ZRange& index, std::size_t count, F&& f) {
  std::vector<std::int64_t> start(index.start().begin(), index.start().begin() + count);
  std::vector<std::int64_t> end(index.end().begin(), index.end().begin() + count);
  ZRange(ZPoint(start), ZPoint(end)).forEachPoint([&](const ZPoint& b) { f(b.vector()); });
}

std::vector<std::int64_t> join(std::vector<std::int64_t> head,
                               std::initializer_list<std::int64_t> tail) {
  head.insert(head.end(), tail);
  return head;
}

// matmul: index [b..., m, n, k]; X [bx..., m, k], W [bw..., k, n], result
// [b..., m, n], where b is the NumPy broadcast of bx and bw. Each operand's
// corner for a batch point comes from its IPF, which reads element 0 along a
// batch dim the operand lacks or has as 1; its matrix strides are its last two.
template <class T> void matmulTyped(const KernelCall& call) {
  const TensorView& X = call.inputs[0][0];
  const TensorView& W = call.inputs[1][0];
  const TensorView& R = call.outputs[0][0];
  const ZRange& idx = call.index;
  const auto [nb, rx, rw, m0, n0, k0, M, N, K] = matmulShard(call);
  const IndexProjection& xIpf = inputIpf(call, 0);
  const IndexProjection& wIpf = inputIpf(call, 1);
  if (nb > 0 && !idx.isEmpty()) {
    // W broadcast over the shard's batch (x[B, S, D] @ W[D, F]): one product.
    const Walk x = walkThrough(X, xIpf, idx);
    const Walk w = walkThrough(W, wIpf, idx);
    const Walk r = walkThrough(R, outputIpf(call, 0), idx);
    if (const std::optional<MergedRows> rows = mergeMatmulRows(idx, x, w, r)) {
      matmulBlock<T>(rows->rows, N, K, x.ptr<T>(), rows->xRowStride, X.strides[rx + 1], w.ptr<T>(),
                     W.strides[rw], W.strides[rw + 1], r.ptr<T>(), rows->rRowStride,
                     R.strides[nb + 1], nullptr);
      return;
    }
  }
  forEachBatch(idx, nb, [&](const std::vector<std::int64_t>& b) {
    const ZPoint corner(join(b, {m0, n0, k0}));
    const T* a = X.at<T>(xIpf.apply(corner).start().coords());
    const T* w = W.at<T>(wIpf.apply(corner).start().coords());
    T* r = R.at<T>(join(b, {m0, n0}));
    matmulBlock<T>(M, N, K, a, X.strides[rx], X.strides[rx + 1], w, W.strides[rw],
                   W.strides[rw + 1], r, R.strides[nb], R.strides[nb + 1], nullptr);
  });
}

// linear: index [b..., n]; X [b..., k] (whole k), W [k, n], bias [n].
struct Linear {
  template <class T> static void run(const KernelCall& call) {
    using C = typename Num<T>::C;
    const TensorView& X = call.inputs[0][0];
    const TensorView& W = call.inputs[1][0];
    const TensorView& Bias = call.inputs[2][0];
    const TensorView& R = call.outputs[0][0];
    const ZRange& idx = call.index;
    const std::size_t nb = idx.rank() - 1; // batch dims
    const std::int64_t K = intBinding(call.op, "k");
    const std::int64_t n0 = idx.start()[nb];
    const std::int64_t N = idx.extent(nb);
    std::vector<C> bias(static_cast<std::size_t>(N));
    for (std::int64_t j = 0; j < N; ++j) {
      const std::int64_t at = n0 + j;
      bias[static_cast<std::size_t>(j)] = Num<T>::load(*Bias.at<T>(std::span(&at, 1)));
    }
    const T* w = W.at<T>(std::vector<std::int64_t>{0, n0});
    if (nb == 0) {
      const std::int64_t zero = 0;
      const T* a = X.at<T>(std::span(&zero, 1));
      T* r = R.at<T>(std::span(&n0, 1));
      matmulBlock<T>(1, N, K, a, K, X.strides[0], w, W.strides[0], W.strides[1], r, N, R.strides[0],
                     bias.data());
      return;
    }
    // The last batch dim is the rows of one product; the others loop.
    const std::int64_t m0 = idx.start()[nb - 1];
    const std::int64_t M = idx.extent(nb - 1);
    forEachBatch(idx, nb - 1, [&](const std::vector<std::int64_t>& b) {
      const T* a = X.at<T>(join(b, {m0, 0}));
      T* r = R.at<T>(join(b, {m0, n0}));
      matmulBlock<T>(M, N, K, a, X.strides[nb - 1], X.strides[nb], w, W.strides[0], W.strides[1], r,
                     R.strides[nb - 1], R.strides[nb], bias.data());
    });
  }
};

void matmulKernel(const KernelCall& call) {
  dispatch(call.outputs[0][0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    matmulTyped<T>(call);
  });
}

} // namespace

void registerMatmulKernels(CpuRegistry& registry) {
  registry.add("matmul", &matmulKernel);
  registry.add("linear", &floatKernel<Linear>);
}

void denseGemm(std::int64_t m, std::int64_t n, std::int64_t k, const double* a, const double* b,
               double* c) {
  if (m == 0 || n == 0) {
    return;
  }
  if (k == 0) {
    std::fill_n(c, m * n, 0.0);
    return;
  }
  gemmCall(CblasNoTrans, CblasNoTrans, m, n, k, a, k, b, n, 0.0, c, n);
}

} // namespace tapestry::backend::cpu
