// batchnorm (inference): index = the input's shape [N, C, spatial...]; per
// channel c, result = (input - mean[c]) * mul[c] + bias[c] with mul =
// scale / sqrt(var + epsilon), as a prepared kernel: the walk of one
// channel's part of the shard (dims of extent 1 dropped, contiguous dims
// merged) is worked out once, and a run computes the shard's C constants and
// then one multiply-add per element, innermost runs unit-stride where the
// views allow, with no allocation. On channels-last views (DenseNet's
// normalizations after its concatenations) the channels are the innermost run.
//
// Hand-written, not oneDNN's: its batch normalization on plain NCHW
// (ncsp_bnorm) took 27 us where this loop takes 1.4 us on a 1x64x16x16
// float32 tensor (one thread; 54 vs 5 us at 1x64x32x32), measured on the
// machine of docs/cost-model.md.
#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <vector>

#include "backends/cpu/kernel_util.hpp"
#include "backends/cpu/team.hpp"
#include "core/diag/error.hpp"
#include "core/graph/graph.hpp"

namespace tapestry::backend::cpu {

namespace {

template <class T> class Batchnorm final : public PreparedKernel {
  using C = typename Num<T>::C;

public:
  explicit Batchnorm(const KernelCall& call)
      : eps_(floatParam(call.op, "epsilon")), c0_(call.index.start()[1]), c1_(call.index.end()[1]) {
    // One channel's part of the shard, walked from its first element.
    std::vector<std::int64_t> start = call.index.start().vector();
    std::vector<std::int64_t> end = call.index.end().vector();
    end[1] = start[1] + 1;
    const ZRange part{ZPoint(start), ZPoint(end)};
    const TensorView& in = call.inputs[0][0];
    const TensorView& out = call.outputs[0][0];
    const Walk x = walkThrough(in, inputIpf(call, 0), part);
    const Walk y = walkThrough(out, outputIpf(call, 0), part);
    const std::int64_t size = static_cast<std::int64_t>(dtypeSize(in.dtype));
    xOffset_ = (x.base - in.data) / size;
    yOffset_ = (y.base - out.data) / size;
    xChannel_ = in.strides[1];
    yChannel_ = out.strides[1];
    const std::vector<std::int64_t> extent = part.shape().vector();
    std::vector<RunDim<2>> dims;
    runDims<2>(std::span<const std::int64_t>(extent), {&x, &y}, dims);
    if (dims.size() > graph::kMaxRank) {
      throw InternalError("batchnorm walk of rank " + std::to_string(dims.size()));
    }
    if (!dims.empty()) {
      inner_ = dims.back();
      dims.pop_back();
    }
    outer_ = std::move(dims);
    for (std::size_t p = 1; p <= 4; ++p) {
      vectorOffset_[p] = offsetIn(call.inputs[p][0], c0_);
      vectorStride_[p] = call.inputs[p][0].strides[0];
    }
    mean_.resize(static_cast<std::size_t>(c1_ - c0_));
    mul_.resize(mean_.size());
    bias_.resize(mean_.size());
  }

  void run(const KernelCall& call) override {
    // Ports: input, scale, bias, mean, var.
    auto channel = [&](std::size_t port, std::int64_t k) {
      const T* v = reinterpret_cast<const T*>(call.inputs[port][0].data) + vectorOffset_[port];
      return static_cast<double>(Num<T>::load(v[k * vectorStride_[port]]));
    };
    for (std::int64_t k = 0; k < c1_ - c0_; ++k) {
      const auto i = static_cast<std::size_t>(k);
      mul_[i] = static_cast<C>(channel(1, k) / std::sqrt(channel(4, k) + eps_));
      bias_[i] = static_cast<C>(channel(2, k));
      mean_[i] = static_cast<C>(channel(3, k));
    }
    const T* x = reinterpret_cast<const T*>(call.inputs[0][0].data) + xOffset_;
    T* y = reinterpret_cast<T*>(call.outputs[0][0].data) + yOffset_;
    if (xChannel_ == 1 && yChannel_ == 1) {
      pixelRuns(x, y);
      return;
    }
    for (std::int64_t k = 0; k < c1_ - c0_; ++k) {
      const auto i = static_cast<std::size_t>(k);
      channelRuns(x + k * xChannel_, y + k * yChannel_, mean_[i], mul_[i], bias_[i]);
    }
  }

private:
  static std::int64_t offsetIn(const TensorView& v, std::int64_t c) {
    return v.offsetOf(std::span<const std::int64_t>(&c, 1));
  }

  // Calls f(xo, yo) at the start of each innermost run of one channel's
  // part: the outer dims counted on the stack.
  template <class F> void forEachRun(F&& f) const {
    std::array<std::int64_t, graph::kMaxRank> counter{};
    std::int64_t xo = 0, yo = 0;
    const std::size_t depth = outer_.size();
    while (true) {
      f(xo, yo);
      std::size_t d = depth;
      while (true) {
        if (d == 0) {
          return;
        }
        --d;
        xo += outer_[d].stride[0];
        yo += outer_[d].stride[1];
        if (++counter[d] < outer_[d].extent) {
          break;
        }
        xo -= outer_[d].stride[0] * outer_[d].extent;
        yo -= outer_[d].stride[1] * outer_[d].extent;
        counter[d] = 0;
      }
    }
  }

  // y = (x - mean) * mul + bias over one channel's part, the innermost run
  // as one loop (unit stride: vectorized).
  void channelRuns(const T* x, T* y, C mean, C mul, C bias) const {
    forEachRun([&](std::int64_t xo, std::int64_t yo) {
      const T* xs = x + xo;
      T* ys = y + yo;
      const std::int64_t n = inner_.extent;
      if (inner_.stride[0] == 1 && inner_.stride[1] == 1) {
        for (std::int64_t j = 0; j < n; ++j) {
          ys[j] = Num<T>::store((Num<T>::load(xs[j]) - mean) * mul + bias);
        }
      } else {
        for (std::int64_t j = 0; j < n; ++j) {
          ys[j * inner_.stride[1]] =
              Num<T>::store((Num<T>::load(xs[j * inner_.stride[0]]) - mean) * mul + bias);
        }
      }
    });
  }

  // Both views channels last (channel stride 1, as the executor lays out
  // activations between convolutions): at each position of channel 0's part,
  // the shard's channels as one unit-stride loop, the same arithmetic per
  // element as channelRuns (walking each channel by itself there reads every
  // cache line once per channel it holds). From kTeamFrom elements the
  // positions are shared out over the kernel threads' team in memory order,
  // as the elementwise kernels share theirs (team.hpp).
  void pixelRuns(const T* x, T* y) const {
    std::int64_t runs = 1;
    for (const RunDim<2>& d : outer_) {
      runs *= d.extent;
    }
    const std::int64_t positions = runs * inner_.extent;
    const int threads = teamThreads(positions * (c1_ - c0_));
    if (threads > 1) {
      overTeam(threads, positions, 1,
               [&](std::int64_t lo, std::int64_t hi) { pixelRange(x, y, lo, hi); });
    } else {
      pixelRange(x, y, 0, positions);
    }
  }

  // Positions [lo, hi) of channel 0's part, counted run by run.
  void pixelRange(const T* x, T* y, std::int64_t lo, std::int64_t hi) const {
    const std::int64_t channels = c1_ - c0_;
    const C* mean = mean_.data();
    const C* mul = mul_.data();
    const C* bias = bias_.data();
    const std::int64_t n = inner_.extent;
    for (std::int64_t p = lo; p < hi;) {
      // The run's offsets: its number decoded over the outer dims.
      std::int64_t r = p / n;
      std::int64_t xo = 0, yo = 0;
      for (std::size_t d = outer_.size(); d-- > 0;) {
        const std::int64_t k = r % outer_[d].extent;
        r /= outer_[d].extent;
        xo += k * outer_[d].stride[0];
        yo += k * outer_[d].stride[1];
      }
      const std::int64_t j0 = p % n;
      const std::int64_t j1 = std::min(n, j0 + (hi - p));
      for (std::int64_t j = j0; j < j1; ++j) {
        const T* xs = x + xo + j * inner_.stride[0];
        T* ys = y + yo + j * inner_.stride[1];
        for (std::int64_t k = 0; k < channels; ++k) {
          ys[k] = Num<T>::store((Num<T>::load(xs[k]) - mean[k]) * mul[k] + bias[k]);
        }
      }
      p += j1 - j0;
    }
  }

  double eps_;
  std::int64_t c0_, c1_;
  std::int64_t xOffset_ = 0, yOffset_ = 0, xChannel_ = 0, yChannel_ = 0;
  std::array<std::int64_t, 5> vectorOffset_{}, vectorStride_{};
  RunDim<2> inner_{1, {0, 0}};
  std::vector<RunDim<2>> outer_;
  std::vector<C> mean_, mul_, bias_;
};

std::unique_ptr<PreparedKernel> prepareBatchnorm(const KernelCall& call) {
  std::unique_ptr<PreparedKernel> out;
  dispatchFloat(call, [&](auto tag) {
    out = std::make_unique<Batchnorm<typename decltype(tag)::type>>(call);
  });
  return out;
}

void runBatchnorm(const KernelCall& call) {
  prepareBatchnorm(call)->run(call);
}

} // namespace

void registerBatchnormKernels(CpuRegistry& registry) {
  registry.add("batchnorm", &runBatchnorm, &prepareBatchnorm);
}

} // namespace tapestry::backend::cpu
