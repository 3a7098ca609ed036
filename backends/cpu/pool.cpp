// Pooling over NCHW: maxpool2d and avgpool2d (a whole window per output
// element; the input view is the shard's window boxes clipped to the tensor,
// and window positions outside the tensor are padding: -infinity for max,
// left out of the sum for avg), and global_avgpool (H and W are reduction
// dims: a shard writes its partial sum divided by the full H*W).
#include <algorithm>
#include <limits>

#include "backends/cpu/kernel_util.hpp"

namespace tapestry::backend::cpu {

namespace {

struct Window {
  std::int64_t KH, KW, sh, sw, ph, pw, dh, dw, H, W;
};

Window windowOf(const graph::Operation& op, bool dilated) {
  return Window{intBinding(op, "KH"),
                intBinding(op, "KW"),
                intBinding(op, "sh"),
                intBinding(op, "sw"),
                intBinding(op, "ph"),
                intBinding(op, "pw"),
                dilated ? intBinding(op, "dh") : 1,
                dilated ? intBinding(op, "dw") : 1,
                intBinding(op, "H"),
                intBinding(op, "W")};
}

// For each output element of the shard: f(out, window) where window(g) calls
// g(value) for every window element inside the input.
template <class T, class F> void forEachWindow(const KernelCall& call, const Window& w, F&& f) {
  using C = typename Num<T>::C;
  const TensorView& in = call.inputs[0][0];
  const TensorView& out = call.outputs[0][0];
  const ZPoint& s = call.index.start();
  const ZPoint& e = call.index.end();
  // With padding < kernel a shard's window box always overlaps the input, so a
  // non-empty shard has an input view; h0, w0 are its first row and column.
  if (call.index.isEmpty()) {
    return;
  }
  const std::int64_t h0 = in.region.start()[2], w0 = in.region.start()[3];
  for (std::int64_t n = s[0]; n < e[0]; ++n) {
    for (std::int64_t c = s[1]; c < e[1]; ++c) {
      const std::int64_t corner[4] = {n, c, h0, w0};
      const T* plane = in.at<T>(corner);
      for (std::int64_t oh = s[2]; oh < e[2]; ++oh) {
        for (std::int64_t ow = s[3]; ow < e[3]; ++ow) {
          auto window = [&](auto&& g) {
            for (std::int64_t kh = 0; kh < w.KH; ++kh) {
              const std::int64_t ih = w.sh * oh + w.dh * kh - w.ph;
              if (ih < 0 || ih >= w.H) {
                continue;
              }
              for (std::int64_t kw = 0; kw < w.KW; ++kw) {
                const std::int64_t iw = w.sw * ow + w.dw * kw - w.pw;
                if (iw >= 0 && iw < w.W) {
                  g(static_cast<C>(
                      Num<T>::load(plane[(ih - h0) * in.strides[2] + (iw - w0) * in.strides[3]])));
                }
              }
            }
          };
          const std::int64_t at[4] = {n, c, oh, ow};
          f(*out.at<T>(at), window);
        }
      }
    }
  }
}

template <class T> void maxpoolTyped(const KernelCall& call) {
  using C = typename Num<T>::C;
  const Window w = windowOf(call.op, true);
  forEachWindow<T>(call, w, [&](T& out, auto&& window) {
    C best = -std::numeric_limits<C>::infinity();
    window([&](C v) { best = std::isnan(v) || v > best ? v : best; });
    out = Num<T>::store(best);
  });
}

template <class T> void avgpoolTyped(const KernelCall& call) {
  using C = typename Num<T>::C;
  const Window w = windowOf(call.op, false);
  const bool includePad = intBinding(call.op, "count_include_pad") != 0;
  forEachWindow<T>(call, w, [&](T& out, auto&& window) {
    C total = 0;
    std::int64_t count = 0;
    window([&](C v) {
      total += v;
      ++count;
    });
    const std::int64_t divisor = includePad ? w.KH * w.KW : count;
    out = Num<T>::store(total / static_cast<C>(divisor));
  });
}

// global_avgpool: index [N, C, H, W]; result [N, C, 1, 1] gets the shard's
// sum over its (h, w) part divided by the full H*W.
template <class T> void globalAvgpoolTyped(const KernelCall& call) {
  using C = typename Num<T>::C;
  const TensorView& in = call.inputs[0][0];
  const TensorView& out = call.outputs[0][0];
  const C hw = static_cast<C>(intBinding(call.op, "HW"));
  if (call.index.isEmpty()) {
    return;
  }
  const ZPoint& s = call.index.start();
  const ZPoint& e = call.index.end();
  for (std::int64_t n = s[0]; n < e[0]; ++n) {
    for (std::int64_t c = s[1]; c < e[1]; ++c) {
      C total = 0;
      for (std::int64_t h = s[2]; h < e[2]; ++h) {
        const std::int64_t row[4] = {n, c, h, s[3]};
        const T* p = in.at<T>(row);
        for (std::int64_t j = 0; j < e[3] - s[3]; ++j) {
          total += Num<T>::load(p[j * in.strides[3]]);
        }
      }
      const std::int64_t at[4] = {n, c, 0, 0};
      *out.at<T>(at) = Num<T>::store(total / hw);
    }
  }
}

void maxpoolKernel(const KernelCall& call) {
  dispatchFloat(call, [&](auto tag) { maxpoolTyped<typename decltype(tag)::type>(call); });
}
void avgpoolKernel(const KernelCall& call) {
  dispatchFloat(call, [&](auto tag) { avgpoolTyped<typename decltype(tag)::type>(call); });
}
void globalAvgpoolKernel(const KernelCall& call) {
  dispatchFloat(call, [&](auto tag) { globalAvgpoolTyped<typename decltype(tag)::type>(call); });
}

} // namespace

void registerPoolKernels(CpuRegistry& registry) {
  registry.add("maxpool2d", &maxpoolKernel);
  registry.add("avgpool2d", &avgpoolKernel);
  registry.add("global_avgpool", &globalAvgpoolKernel);
}

} // namespace tapestry::backend::cpu
