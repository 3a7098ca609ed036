// softmax, layernorm and rmsnorm (batchnorm: batchnorm.cpp). All leave the
// normalized axis out of the index space, so every index point owns one whole
// row (SPEC §4.3, docs/metakernels-design.md): a shard walks its points
// through the IPFs to each row's first element and normalizes the row along
// the view's axis stride. All are numerically stable (softmax subtracts the
// row max; layernorm takes two passes) and prepared once per call
// (run_loop.hpp); float32 rows run through vector_math.hpp.
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "backends/cpu/kernel_util.hpp"
#include "backends/cpu/run_loop.hpp"
#include "backends/cpu/team.hpp"
#include "backends/cpu/vector_math.hpp"

namespace tapestry::backend::cpu {

namespace {

// A row of n floats at stride sx into f(row, out), which computes a
// contiguous row in place or into y; strided rows go through `scratch`.
template <class F>
void contiguousRow(const float* x, std::int64_t sx, float* y, std::int64_t sy, std::int64_t n,
                   float* scratch, F&& f) {
  if (sx == 1 && sy == 1) {
    f(x, y);
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    scratch[i] = x[i * sx];
  }
  f(scratch, scratch);
  for (std::int64_t i = 0; i < n; ++i) {
    y[i * sy] = scratch[i];
  }
}

// The rows of a shard: its index points (the axis is not an index dim), each
// walked through the IPFs to its row's first input and output element; the
// row itself runs along the views' strides of the axis.
struct Rows {
  RunLoop<2> loop;
  std::int64_t sx = 0; // input and output strides along the axis
  std::int64_t sy = 0;

  Rows(const KernelCall& call, std::size_t axis) {
    const TensorView& in = call.inputs[0][0];
    const TensorView& out = call.outputs[0][0];
    loop = ipfLoop<2>(call, {&in, &out}, {&inputIpf(call, 0), &outputIpf(call, 0)});
    sx = in.strides[axis];
    sy = out.strides[axis];
  }
  // f(x, y) per row.
  template <class T, class F> void forEach(const KernelCall& call, F&& f) const {
    const std::int64_t len = loop.length();
    const std::int64_t s0 = loop.stride(0);
    const std::int64_t s1 = loop.stride(1);
    loop.forEach({call.inputs[0][0].data, call.outputs[0][0].data}, [&](const auto& at) {
      const T* x = reinterpret_cast<const T*>(at[0]);
      T* y = reinterpret_cast<T*>(at[1]);
      for (std::int64_t r = 0; r < len; ++r) {
        f(x + r * s0, y + r * s1);
      }
    });
  }
  std::int64_t count() const { return loop.runCount() * loop.length(); }
  // On the kernel threads' team (team.hpp), where the float32 rows of n make
  // enough elements and `scratch` holds a row for each thread: f(in, out)
  // per row as contiguousRow calls it, each thread over its share of the
  // rows with its own scratch row. False (nothing run) otherwise.
  template <class F>
  bool onTeam(const KernelCall& call, std::int64_t n, std::vector<float>& scratch, F&& f) const {
    const int threads = loop.rangeable() && count() > 1 ? teamThreads(count() * n) : 1;
    const bool inPlace = sx == 1 && sy == 1;
    if (threads < 2 || (!inPlace && static_cast<std::int64_t>(scratch.size()) < threads * n)) {
      return false;
    }
    const std::int64_t s0 = loop.stride(0);
    const std::int64_t s1 = loop.stride(1);
    overTeam(threads, count(), 1, [&](std::int64_t lo, std::int64_t hi) {
      float* row = scratch.data() + omp_get_thread_num() * n;
      loop.forRange({call.inputs[0][0].data, call.outputs[0][0].data}, lo, hi,
                    [&](const auto& at, std::int64_t m) {
                      const float* x = reinterpret_cast<const float*>(at[0]);
                      float* y = reinterpret_cast<float*>(at[1]);
                      for (std::int64_t r = 0; r < m; ++r) {
                        contiguousRow(x + r * s0, sx, y + r * s1, sy, n, row, f);
                      }
                    });
    });
    return true;
  }
};

// Scratch rows of n for the calling thread and each other thread of its team.
template <class C> std::vector<C> scratchRows(std::int64_t n) {
  return std::vector<C>(static_cast<std::size_t>(n * std::max(1, CpuBackend::kernelThreads())));
}

// softmax: numerically stable (the row max is subtracted). float32 rows go
// through vector_math.hpp's softmax; the other dtypes compute in Num<T>::C.
template <class T> class Softmax final : public PreparedKernel {
public:
  using C = typename Num<T>::C;
  explicit Softmax(const KernelCall& call)
      : rows_(call, static_cast<std::size_t>(intBinding(call.op, "ax"))),
        n_(intBinding(call.op, "n")), row_(scratchRows<C>(n_)), softmax_(vectorKernels().softmax) {}

  void run(const KernelCall& call) override {
    const std::int64_t n = n_;
    if constexpr (std::is_same_v<T, float>) {
      if (rows_.onTeam(call, n, row_, [&](const float* in, float* out) { softmax_(in, out, n); })) {
        return;
      }
    }
    C* row = row_.data();
    rows_.forEach<T>(call, [&](const T* x, T* y) {
      if constexpr (std::is_same_v<T, float>) {
        contiguousRow(x, rows_.sx, y, rows_.sy, n, row,
                      [&](const float* in, float* out) { softmax_(in, out, n); });
      } else {
        C m = -std::numeric_limits<C>::infinity();
        for (std::int64_t i = 0; i < n; ++i) {
          const C v = Num<T>::load(x[i * rows_.sx]);
          row[i] = v;
          m = (v > m || std::isnan(v)) ? v : m;
        }
        C total = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          row[i] = std::exp(row[i] - m);
          total += row[i];
        }
        for (std::int64_t i = 0; i < n; ++i) {
          y[i * rows_.sy] = Num<T>::store(row[i] / total);
        }
      }
    });
  }

private:
  Rows rows_;
  std::int64_t n_;
  std::vector<C> row_; // scratch of run(): a row per thread of its team
  void (*softmax_)(const float*, float*, std::int64_t);
};

// layernorm (Centred) and rmsnorm over the last axis. float32 rows go
// through vector_math.hpp's layernorm or rmsnorm (moments in float, 4
// vectors wide); the other dtypes take the passes in double (rmsnorm: the
// mean of squares, then the scaled row).
template <class T, bool Centred> class RowNorm final : public PreparedKernel {
public:
  using C = typename Num<T>::C;
  static constexpr std::size_t kParams = Centred ? 2 : 1; // gamma (and beta)
  explicit RowNorm(const KernelCall& call)
      : rows_(call, call.inputs[0][0].strides.size() - 1), d_(intBinding(call.op, "d")),
        eps_(floatParam(call.op, "eps")), row_(scratchRows<Row>(d_)),
        layernorm_(vectorKernels().layernorm), rmsnorm_(vectorKernels().rmsnorm) {
    // gamma and beta: element i of each view, [d] from 0.
    for (std::size_t p = 0; p < kParams; ++p) {
      const TensorView& v = call.inputs[1 + p][0];
      const std::int64_t zero = 0;
      params_[p] = {(v.at<T>(std::span(&zero, 1)) - reinterpret_cast<T*>(v.data)), v.strides[0]};
      copies_[p].resize(static_cast<std::size_t>(d_));
    }
  }

  void run(const KernelCall& call) override {
    const std::int64_t d = d_;
    // gamma and beta as contiguous rows of C: in place where they are, else
    // copied (every run: their data may change).
    std::array<const C*, 2> gb{};
    for (std::size_t p = 0; p < kParams; ++p) {
      const T* v = reinterpret_cast<const T*>(call.inputs[1 + p][0].data) + params_[p].offset;
      if constexpr (std::is_same_v<T, C>) {
        if (params_[p].stride == 1) {
          gb[p] = v;
          continue;
        }
      }
      C* to = copies_[p].data();
      for (std::int64_t i = 0; i < d; ++i) {
        to[i] = Num<T>::load(v[i * params_[p].stride]);
      }
      gb[p] = to;
    }
    const C* gamma = gb[0];
    const C* beta = gb[1];
    if constexpr (std::is_same_v<T, float>) {
      const float eps = static_cast<float>(eps_);
      auto norm = [&](const float* in, float* out) {
        if constexpr (Centred) {
          layernorm_(in, out, d, gamma, beta, eps);
        } else {
          rmsnorm_(in, out, d, gamma, eps);
        }
      };
      if (rows_.onTeam(call, d, row_, norm)) {
        return;
      }
      rows_.forEach<T>(call, [&](const T* x, T* y) {
        contiguousRow(x, rows_.sx, y, rows_.sy, d, row_.data(), norm);
      });
    } else {
      rows_.forEach<T>(call, [&](const T* x, T* y) {
        double* row = row_.data();
        double sum = 0;
        for (std::int64_t i = 0; i < d; ++i) {
          const double v = static_cast<double>(Num<T>::load(x[i * rows_.sx]));
          row[i] = v;
          sum += v;
        }
        const double mean = Centred ? sum / static_cast<double>(d) : 0.0;
        double sq = 0;
        for (std::int64_t i = 0; i < d; ++i) {
          const double c = row[i] - mean;
          sq += c * c;
        }
        const double inv = 1.0 / std::sqrt(sq / static_cast<double>(d) + eps_);
        for (std::int64_t i = 0; i < d; ++i) {
          const C norm = static_cast<C>((row[i] - mean) * inv);
          if constexpr (Centred) {
            y[i * rows_.sy] = Num<T>::store(norm * gamma[i] + beta[i]);
          } else {
            y[i * rows_.sy] = Num<T>::store(norm * gamma[i]);
          }
        }
      });
    }
  }

private:
  struct Param {
    std::int64_t offset; // elements from the view's data pointer to element 0
    std::int64_t stride;
  };
  Rows rows_;
  std::int64_t d_;
  double eps_;
  std::array<Param, 2> params_{};
  std::array<std::vector<C>, 2> copies_; // scratch of run(): gamma and beta
  // float32 rows are float (the vector kernels'); the rest double.
  using Row = std::conditional_t<std::is_same_v<T, float>, float, double>;
  std::vector<Row> row_; // scratch of run(): a row per thread of its team
  void (*layernorm_)(const float*, float*, std::int64_t, const float*, const float*, float);
  void (*rmsnorm_)(const float*, float*, std::int64_t, const float*, float);
};

template <class T> using Layernorm = RowNorm<T, true>;
template <class T> using Rmsnorm = RowNorm<T, false>;

} // namespace

void registerNormalizationKernels(CpuRegistry& registry) {
  registry.add("softmax", &runPrepared<&prepareFloat<Softmax>>, &prepareFloat<Softmax>);
  registry.add("layernorm", &runPrepared<&prepareFloat<Layernorm>>, &prepareFloat<Layernorm>);
  registry.add("rmsnorm", &runPrepared<&prepareFloat<Rmsnorm>>, &prepareFloat<Rmsnorm>);
}

} // namespace tapestry::backend::cpu
