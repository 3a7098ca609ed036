// attention, attention_masked and their heads forms attention_heads*,
// which read [b, s, heads*d] tensors (the *_seq_first forms [s, b, heads*d])
// in place (metakernels/attention.yaml): one query row per index point. A
// shard walks its points through the IPFs to the row of Q, the row of the
// result, its batch's K and V, and (masked) its row of the mask; per row it
// forms the scores q . K[:, t] for every t (a sum of rows of K weighted by q,
// so the inner loop runs along K's rows), divides them, masks them, takes a
// stable softmax and sums the rows of V weighted by it.
// The [..., s, t] scores of the unfused chain are never stored: one row of t
// floats of scratch per kernel. float32 rows compute in float (the softmax
// through vector_math.hpp), the other dtypes in Num<T>::C.
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <omp.h>
#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include <cblas.h>

#include "backends/cpu/gemm_engine.hpp"
#include "backends/cpu/kernel_util.hpp"
#include "backends/cpu/run_loop.hpp"
#include "backends/cpu/team.hpp"
#include "backends/cpu/vector_math.hpp"
#include "core/diag/error.hpp"

namespace tapestry::backend::cpu {

namespace {

// Operands of the walk: Q, K, V, the result, and the mask (or the additive
// bias) when there is one.
enum Operand : std::size_t { kQ, kK, kV, kOut, kMask };

// What the scores get besides the division: nothing, a bool mask and its
// fill (attention_masked*), or an additive float bias [s, t] (the optional
// `bias` of attention and its heads forms: an exported float attn_mask).
enum class Extra { None, Mask, Bias };

// Subnormal floats flushed to zero, in results (FTZ) and operands (DAZ), on
// the calling thread while it lives (x86's MXCSR; elsewhere nothing). A
// softmax of scores that spread by more than ~87 (large activations, a
// random model's) makes subnormal probabilities: the exp that makes them,
// the scaling by 1 / sum and the product with V then take microcode assists
// on every such element (a [128, 4, 768] sequence-first attention: 5.8 ms
// against 0.55 ms on small activations). What they add is below 1e-38 of
// their row's sum; the float64 reference keeps them and agrees to its bound.
class FlushSubnormals {
public:
#if defined(__SSE2__)
  FlushSubnormals() : saved_(_mm_getcsr()) {
    _mm_setcsr(saved_ | 0x8040u);
  }
  ~FlushSubnormals() {
    _mm_setcsr(saved_);
  }
#else
  FlushSubnormals() {}
#endif
  FlushSubnormals(const FlushSubnormals&) = delete;
  FlushSubnormals& operator=(const FlushSubnormals&) = delete;

private:
#if defined(__SSE2__)
  unsigned saved_;
#endif
};

template <class T, Extra X> class Attention final : public PreparedKernel {
public:
  using C = typename Num<T>::C;
  static constexpr bool Masked = X == Extra::Mask;
  static constexpr bool Biased = X == Extra::Bias;
  static constexpr std::size_t N = X == Extra::None ? 4 : 5;

  explicit Attention(const KernelCall& call)
      : d_(intBinding(call.op, "d")), t_(intBinding(call.op, "t")), e_(intBinding(call.op, "e")),
        divisor_(static_cast<C>(floatParam(call.op, "divisor"))),
        scores_(static_cast<std::size_t>(t_)), acc_(static_cast<std::size_t>(e_)),
        softmax_(vectorKernels().softmax) {
    const TensorView& q = call.inputs[0][0];
    const TensorView& k = call.inputs[1][0];
    const TensorView& v = call.inputs[2][0];
    const TensorView& out = call.outputs[0][0];
    std::array<const TensorView*, N> views{};
    std::array<const IndexProjection*, N> ipfs{};
    views[kQ] = &q;
    views[kK] = &k;
    views[kV] = &v;
    views[kOut] = &out;
    for (std::size_t p = 0; p < 3; ++p) {
      ipfs[p] = &inputIpf(call, p);
    }
    ipfs[kOut] = &outputIpf(call, 0);
    const std::size_t r = q.strides.size();
    qd_ = q.strides[r - 1];
    ve_ = v.strides.back();
    oe_ = out.strides[r - 1];
    if (call.op.kernel.rfind("attention_heads", 0) == 0) {
      // [b, s|t, heads*d] (attention_heads_qkv: [b, s, 3*heads*d]), or
      // [s|t, b, heads*d] for the *_seq_first forms: K's keys are rows, a
      // head's d along the last dim.
      const std::size_t rows = call.op.kernel.ends_with("_seq_first") ? 0 : 1;
      kd_ = k.strides[2];
      kt_ = k.strides[rows];
      vt_ = v.strides[rows];
    } else {
      // K is [..., d, t], or [..., t, d] (keys as rows) with transpose_k; K's
      // and V's batch dims may be fewer than Q's (they broadcast).
      const bool keysAsRows = intBinding(call.op, "transpose_k") != 0;
      const std::size_t rk = k.strides.size();
      kd_ = k.strides[keysAsRows ? rk - 1 : rk - 2];
      kt_ = k.strides[keysAsRows ? rk - 2 : rk - 1];
      vt_ = v.strides[v.strides.size() - 2];
    }
    if constexpr (Masked) {
      const TensorView& mask = call.inputs[3][0];
      views[kMask] = &mask;
      ipfs[kMask] = &inputIpf(call, 3);
      mt_ = intBinding(call.op, "mt") == 1 ? 0 : mask.strides.back();
    }
    if constexpr (Biased) {
      const TensorView& bias = call.inputs[3][0];
      views[kMask] = &bias;
      ipfs[kMask] = &inputIpf(call, 3);
      mt_ = bias.strides.back();
    }
    loop_ = ipfLoop<N>(call, views, ipfs);
    block_.resize(static_cast<std::size_t>(std::max<std::int64_t>(loop_.length(), 1) * t_));
    // A run of query rows of one batch (K and V fixed along it) with rows
    // laid out for BLAS: the scores of the run in one product, the rows
    // normalized, the result in another product.
    blocked_ = std::is_same_v<T, float> && loop_.length() > 1 && loop_.stride(kK) == 0 &&
               loop_.stride(kV) == 0 && qd_ == 1 && (kt_ == 1 || kd_ == 1) && ve_ == 1 && oe_ == 1;
    if constexpr (std::is_same_v<T, float>) {
      prepareBlocks();
    }
  }

  void run(const KernelCall& call) override {
    const FlushSubnormals flush;
    std::array<std::byte*, N> data{};
    for (std::size_t p = 0; p < 3; ++p) {
      data[p] = call.inputs[p][0].data;
    }
    data[kOut] = call.outputs[0][0].data;
    C fill = 0;
    if constexpr (Masked) {
      data[kMask] = call.inputs[3][0].data;
      fill = Num<T>::load(*reinterpret_cast<const T*>(call.inputs[4][0].data));
    }
    if constexpr (Biased) {
      data[kMask] = call.inputs[3][0].data;
    }
    const std::int64_t len = loop_.length();
    std::array<std::int64_t, N> step{};
    for (std::size_t i = 0; i < N; ++i) {
      step[i] = loop_.stride(i);
    }
    if constexpr (std::is_same_v<T, float>) {
      if (!engines_.empty()) { // made only for blocked runs of kTeamFlops or more
        teamBlocks(data, len, step, fill);
        return;
      }
    }
    loop_.forEach(data, [&](const auto& at) {
      if constexpr (std::is_same_v<T, float>) {
        if (blocked_) {
          block(at, len, step, fill);
          return;
        }
      }
      rowsOf(at, len, step, fill);
    });
  }

private:
  // One thread's two products of a run of query rows, each a one-thread
  // oneDNN matmul made once: scores = Q K (len x t) and result = P V
  // (len x e), and its scores scratch.
  struct BlockEngines {
    std::unique_ptr<GemmEngine> scores, out;
    std::vector<float> scratch;
  };

  // The blocked path's engines, one set per thread of the team, where every
  // run has the same geometry (runs of `len` rows, K and V fixed along them).
  // OpenBLAS's sgemm on the calling thread would wake its own threads for
  // every run: on a 2-core VM a GPT-2 block's attention (d768, s128: 24 runs
  // of [128, 64] x [64, 128]) took 4.8 ms that way against 0.8 ms on one.
  void prepareBlocks() {
    const std::int64_t len = loop_.length();
    if (!blocked_ || !loop_.rangeable() || flops(len) < kTeamFlops) {
      return;
    }
    std::array<std::int64_t, N> step{};
    for (std::size_t i = 0; i < N; ++i) {
      step[i] = loop_.stride(i);
    }
    GemmGeometry qk;
    qk.M = len;
    qk.N = t_;
    qk.K = d_;
    qk.rsA = step[kQ];
    qk.csA = 1;
    qk.rsB = kd_;
    qk.csB = kt_;
    qk.rsC = t_;
    qk.csC = 1;
    GemmGeometry pv;
    pv.M = len;
    pv.N = e_;
    pv.K = t_;
    pv.rsA = t_;
    pv.csA = 1;
    pv.rsB = vt_;
    pv.csB = 1;
    pv.rsC = step[kOut];
    pv.csC = 1;
    const int threads = std::max(1, CpuBackend::kernelThreads());
    for (int k = 0; k < threads; ++k) {
      BlockEngines b;
      b.scores = makeDnnlGemm(DType::Float32, qk, WeightUse::InPlace, 1);
      b.out = makeDnnlGemm(DType::Float32, pv, WeightUse::InPlace, 1);
      if (!b.scores || !b.out) {
        engines_.clear();
        return;
      }
      b.scratch.resize(static_cast<std::size_t>(len * t_));
      engines_.push_back(std::move(b));
    }
  }

  // The shard's attention FLOPs: 4·rows·t·d (two products).
  double flops(std::int64_t len) const {
    return 4.0 * static_cast<double>(loop_.runCount() * len * t_ * d_);
  }

  // Every run of the loop through the engines, for attention of kTeamFlops or
  // more: on the team when there are runs enough (each thread over whole
  // runs, with its own engines), else run by run on the calling thread.
  // Below that OpenBLAS runs the products on the calling thread alone, and a
  // oneDNN call costs more (a GPT-2 block of 8 tokens: 17 -> 24 us).
  void teamBlocks(const typename RunLoop<N>::Pointers& data, std::int64_t len,
                  const std::array<std::int64_t, N>& step, C fill) {
    const std::int64_t runs = loop_.runCount();
    const int threads =
        runs >= 2 ? std::min(static_cast<int>(engines_.size()), CpuBackend::kernelThreads()) : 1;
    auto rows = [&](std::int64_t lo, std::int64_t hi, BlockEngines& b) {
      loop_.forRange(data, lo, hi, [&](const auto& at, std::int64_t m) {
        if (m != len) { // shares are whole runs, so forRange's pieces are too
          throw InternalError("attention: a piece of " + std::to_string(m) +
                              " query rows where the engines take runs of " + std::to_string(len));
        }
        engineBlock(at, len, step, fill, b);
      });
    };
    if (threads <= 1) {
      rows(0, runs * len, engines_.front());
      return;
    }
    overTeam(threads, runs * len, len, [&](std::int64_t lo, std::int64_t hi) {
      const FlushSubnormals flush; // each team thread's own MXCSR
      rows(lo, hi, engines_[static_cast<std::size_t>(omp_get_thread_num())]);
    });
  }

  template <class At>
  void rowsOf(const At& at, std::int64_t m, const std::array<std::int64_t, N>& step, C fill) {
    for (std::int64_t r = 0; r < m; ++r) {
      const T* q = reinterpret_cast<const T*>(at[kQ]) + r * step[kQ];
      const T* k = reinterpret_cast<const T*>(at[kK]) + r * step[kK];
      const T* v = reinterpret_cast<const T*>(at[kV]) + r * step[kV];
      T* y = reinterpret_cast<T*>(at[kOut]) + r * step[kOut];
      const std::byte* extra = nullptr;
      if constexpr (X != Extra::None) {
        extra = at[kMask] +
                r * step[kMask] * static_cast<std::int64_t>(Masked ? sizeof(Bool) : sizeof(T));
      }
      row(q, k, v, extra, fill, y);
    }
  }

  // The scores of a run's rows divided, masked and normalized in place.
  template <class At>
  void normalizeRows(const At& at, float* scores, std::int64_t len,
                     const std::array<std::int64_t, N>& step, C fill) {
    const std::int64_t t = t_;
    for (std::int64_t r = 0; r < len; ++r) {
      float* s = scores + r * t;
      for (std::int64_t i = 0; i < t; ++i) {
        s[i] /= divisor_;
      }
      if constexpr (Masked) {
        const Bool* m = reinterpret_cast<const Bool*>(at[kMask]) + r * step[kMask];
        for (std::int64_t i = 0; i < t; ++i) {
          if (m[i * mt_].bits != 0) {
            s[i] = fill;
          }
        }
      }
      if constexpr (Biased) {
        const T* b = reinterpret_cast<const T*>(at[kMask]) + r * step[kMask];
        for (std::int64_t i = 0; i < t; ++i) {
          s[i] += Num<T>::load(b[i * mt_]);
        }
      }
      softmax_(s, s, t);
    }
  }

  template <class At>
  void engineBlock(const At& at, std::int64_t len, const std::array<std::int64_t, N>& step, C fill,
                   BlockEngines& b) {
    float* scores = b.scratch.data();
    b.scores->run(at[kQ], at[kK], reinterpret_cast<std::byte*>(scores), nullptr);
    normalizeRows(at, scores, len, step, fill);
    b.out->run(reinterpret_cast<const std::byte*>(scores), at[kV], at[kOut], nullptr);
  }

  template <class At>
  void block(const At& at, std::int64_t len, const std::array<std::int64_t, N>& step, C fill) {
    float* scores = block_.data();
    const std::int64_t t = t_;
    const auto* q = reinterpret_cast<const float*>(at[kQ]);
    const auto* k = reinterpret_cast<const float*>(at[kK]);
    const auto* v = reinterpret_cast<const float*>(at[kV]);
    auto* y = reinterpret_cast<float*>(at[kOut]);
    // K is [d, t] with t contiguous (the exported layout), or [t, d] with d
    // contiguous (attention_heads or transpose_k: keys as rows).
    const bool keysAsRows = kt_ != 1;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, keysAsRows ? CblasTrans : CblasNoTrans, toBlasInt(len),
                toBlasInt(t), toBlasInt(d_), 1.0f, q, toBlasInt(step[kQ]), k,
                toBlasInt(keysAsRows ? kt_ : kd_), 0.0f, scores, toBlasInt(t));
    normalizeRows(at, scores, len, step, fill);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, toBlasInt(len), toBlasInt(e_),
                toBlasInt(t), 1.0f, scores, toBlasInt(t), v, toBlasInt(vt_), 0.0f, y,
                toBlasInt(step[kOut]));
  }

  // float32 with K's and V's rows contiguous (as exported): the inner loops
  // run along contiguous rows with no aliasing, which the compiler
  // vectorizes.
  void rowContiguous(const float* q, const float* k, const float* v, const std::byte* extra,
                     float fill, float* y) {
    float* __restrict s = scores_.data();
    const std::int64_t t = t_;
    const std::int64_t e = e_;
    for (std::int64_t i = 0; i < t; ++i) {
      s[i] = 0;
    }
    for (std::int64_t j = 0; j < d_; ++j) {
      const float qj = q[j * qd_];
      const float* __restrict kj = k + j * kd_;
      for (std::int64_t i = 0; i < t; ++i) {
        s[i] += qj * kj[i];
      }
    }
    for (std::int64_t i = 0; i < t; ++i) {
      s[i] /= divisor_;
    }
    if constexpr (Masked) {
      const auto* m = reinterpret_cast<const Bool*>(extra);
      for (std::int64_t i = 0; i < t; ++i) {
        if (m[i * mt_].bits != 0) {
          s[i] = fill;
        }
      }
    }
    if constexpr (Biased) {
      const auto* b = reinterpret_cast<const float*>(extra);
      for (std::int64_t i = 0; i < t; ++i) {
        s[i] += b[i * mt_];
      }
    }
    softmax_(s, s, t);
    float* __restrict acc = acc_.data();
    for (std::int64_t c = 0; c < e; ++c) {
      acc[c] = 0;
    }
    for (std::int64_t i = 0; i < t; ++i) {
      const float p = s[i];
      const float* __restrict vi = v + i * vt_;
      for (std::int64_t c = 0; c < e; ++c) {
        acc[c] += p * vi[c];
      }
    }
    for (std::int64_t c = 0; c < e; ++c) {
      y[c * oe_] = acc[c];
    }
  }

  void row(const T* q, const T* k, const T* v, const std::byte* extra, C fill, T* y) {
    if constexpr (std::is_same_v<T, float>) {
      if (kt_ == 1 && ve_ == 1) {
        rowContiguous(q, k, v, extra, fill, y);
        return;
      }
    }
    C* s = scores_.data();
    const std::int64_t t = t_;
    std::fill(s, s + t, C(0));
    for (std::int64_t j = 0; j < d_; ++j) {
      const C qj = Num<T>::load(q[j * qd_]);
      const T* kj = k + j * kd_;
      for (std::int64_t i = 0; i < t; ++i) {
        s[i] += qj * Num<T>::load(kj[i * kt_]);
      }
    }
    for (std::int64_t i = 0; i < t; ++i) {
      s[i] /= divisor_;
      if constexpr (Masked) {
        if (reinterpret_cast<const Bool*>(extra)[i * mt_].bits != 0) {
          s[i] = fill;
        }
      }
      if constexpr (Biased) {
        s[i] += Num<T>::load(reinterpret_cast<const T*>(extra)[i * mt_]);
      }
    }
    if constexpr (std::is_same_v<C, float>) {
      softmax_(s, s, t);
    } else {
      C most = -std::numeric_limits<C>::infinity();
      for (std::int64_t i = 0; i < t; ++i) {
        most = (s[i] > most || std::isnan(s[i])) ? s[i] : most;
      }
      C total = 0;
      for (std::int64_t i = 0; i < t; ++i) {
        s[i] = std::exp(s[i] - most);
        total += s[i];
      }
      for (std::int64_t i = 0; i < t; ++i) {
        s[i] /= total;
      }
    }
    C* acc = acc_.data();
    std::fill(acc, acc + e_, C(0));
    for (std::int64_t i = 0; i < t; ++i) {
      const C p = s[i];
      const T* vi = v + i * vt_;
      for (std::int64_t c = 0; c < e_; ++c) {
        acc[c] += p * Num<T>::load(vi[c * ve_]);
      }
    }
    for (std::int64_t c = 0; c < e_; ++c) {
      y[c * oe_] = Num<T>::store(acc[c]);
    }
  }

  std::int64_t d_, t_, e_;
  C divisor_;
  std::int64_t qd_ = 0, kd_ = 0, kt_ = 0, vt_ = 0, ve_ = 0, oe_ = 0, mt_ = 0; // strides
  RunLoop<N> loop_;
  std::vector<C> scores_, acc_;       // scratch of run()
  std::vector<float> block_;          // a run's scores, [run length, t] (the BLAS path)
  bool blocked_ = false;              // float32 runs of rows for two products each
  std::vector<BlockEngines> engines_; // the oneDNN path's, one per team thread (or none)
  // The attention FLOPs (4·rows·t·d) from which its runs go on the team.
  static constexpr double kTeamFlops = 4.0e6;
  void (*softmax_)(const float*, float*, std::int64_t);
};

template <class T> using PlainAttention = Attention<T, Extra::None>;
template <class T> using MaskedAttention = Attention<T, Extra::Mask>;
template <class T> using BiasedAttention = Attention<T, Extra::Bias>;

// attention and its heads forms, with their optional bias or without it.
std::unique_ptr<PreparedKernel> prepareAttention(const KernelCall& call) {
  const bool biased = call.inputs.size() > 3 && !call.inputs[3].empty();
  return biased ? prepareFloat<BiasedAttention>(call) : prepareFloat<PlainAttention>(call);
}

} // namespace

void registerAttentionKernels(CpuRegistry& registry) {
  for (const char* name : {"attention", "attention_heads", "attention_heads_qkv",
                           "attention_heads_seq_first", "attention_heads_qkv_seq_first"}) {
    registry.add(name, &runPrepared<&prepareAttention>, &prepareAttention);
  }
  for (const char* name :
       {"attention_masked", "attention_heads_masked", "attention_heads_qkv_masked"}) {
    registry.add(name, &runPrepared<&prepareFloat<MaskedAttention>>,
                 &prepareFloat<MaskedAttention>);
  }
}

} // namespace tapestry::backend::cpu
