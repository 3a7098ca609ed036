// softmax and layernorm (batchnorm: batchnorm.cpp). Both leave the normalized axis
// out of the index space, so every index point owns one whole row (SPEC §4.3,
// docs/metakernels-design.md): a shard walks its points through the IPFs to
// each row's first element and normalizes the row along the view's axis
// stride. Both are numerically stable (softmax subtracts the row max;
// layernorm uses two passes in double).
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/kernel_util.hpp"

namespace tapestry::backend::cpu {

namespace {

// Calls f(x, sx, y, sy) once per row of the shard: the row's first input and
// output elements and their strides along `axis`.
template <class T, class F> void forEachRow(const KernelCall& call, std::size_t axis, F&& f) {
  const TensorView& inView = call.inputs[0][0];
  const TensorView& outView = call.outputs[0][0];
  const Walk in = walkThrough(inView, inputIpf(call, 0), call.index);
  const Walk out = walkThrough(outView, outputIpf(call, 0), call.index);
  const std::int64_t sx = inView.strides[axis];
  const std::int64_t sy = outView.strides[axis];
  forEachRun<2>(call.index, {&in, &out},
                [&](const std::array<std::int64_t, 2>& off, std::int64_t len,
                    const std::array<std::int64_t, 2>& st) {
                  for (std::int64_t r = 0; r < len; ++r) {
                    f(in.ptr<T>() + off[0] + r * st[0], sx, out.ptr<T>() + off[1] + r * st[1], sy);
                  }
                });
}

struct Softmax {
  template <class T> static void run(const KernelCall& call) {
    using C = typename Num<T>::C;
    const std::size_t ax = static_cast<std::size_t>(intBinding(call.op, "ax"));
    const std::int64_t n = intBinding(call.op, "n");
    std::vector<C> row(static_cast<std::size_t>(n));
    forEachRow<T>(call, ax, [&](const T* x, std::int64_t sx, T* y, std::int64_t sy) {
      C m = -std::numeric_limits<C>::infinity();
      for (std::int64_t i = 0; i < n; ++i) {
        const C v = Num<T>::load(x[i * sx]);
        row[static_cast<std::size_t>(i)] = v;
        m = (v > m || std::isnan(v)) ? v : m;
      }
      C total = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        C& v = row[static_cast<std::size_t>(i)];
        v = std::exp(v - m);
        total += v;
      }
      for (std::int64_t i = 0; i < n; ++i) {
        y[i * sy] = Num<T>::store(row[static_cast<std::size_t>(i)] / total);
      }
    });
  }
};

struct Layernorm {
  template <class T> static void run(const KernelCall& call) {
    using C = typename Num<T>::C;
    const std::int64_t d = intBinding(call.op, "d");
    const double eps = floatParam(call.op, "eps");
    std::vector<C> gamma(static_cast<std::size_t>(d));
    std::vector<C> beta(static_cast<std::size_t>(d));
    for (std::int64_t i = 0; i < d; ++i) {
      gamma[static_cast<std::size_t>(i)] = Num<T>::load(*call.inputs[1][0].at<T>(std::span(&i, 1)));
      beta[static_cast<std::size_t>(i)] = Num<T>::load(*call.inputs[2][0].at<T>(std::span(&i, 1)));
    }
    std::vector<double> row(static_cast<std::size_t>(d));
    const std::size_t last = call.inputs[0][0].strides.size() - 1;
    forEachRow<T>(call, last, [&](const T* x, std::int64_t sx, T* y, std::int64_t sy) {
      double sum = 0;
      for (std::int64_t i = 0; i < d; ++i) {
        const double v = static_cast<double>(Num<T>::load(x[i * sx]));
        row[static_cast<std::size_t>(i)] = v;
        sum += v;
      }
      const double mean = sum / static_cast<double>(d);
      double sq = 0;
      for (std::int64_t i = 0; i < d; ++i) {
        const double c = row[static_cast<std::size_t>(i)] - mean;
        sq += c * c;
      }
      const double inv = 1.0 / std::sqrt(sq / static_cast<double>(d) + eps);
      for (std::int64_t i = 0; i < d; ++i) {
        const auto k = static_cast<std::size_t>(i);
        const C norm = static_cast<C>((row[k] - mean) * inv);
        y[i * sy] = Num<T>::store(norm * gamma[k] + beta[k]);
      }
    });
  }
};

} // namespace

void registerNormalizationKernels(CpuRegistry& registry) {
  registry.add("softmax", &floatKernel<Softmax>);
  registry.add("layernorm", &floatKernel<Layernorm>);
}

} // namespace tapestry::backend::cpu
