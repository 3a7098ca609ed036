// Pooling over NCHW: maxpool2d and avgpool2d (a whole window per output
// element; the input view is the shard's window boxes clipped to the tensor,
// and window positions outside the tensor are padding: -infinity for max,
// left out of the sum for avg), and global_avgpool (H and W are reduction
// dims: a shard writes its partial sum divided by the full H*W).
#include <algorithm>
#include <limits>
#include <vector>

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

// One windowed pool over the shard, a row of outputs at a time: acc[j] for
// output column j starts at op.init and takes op.add(acc, v) for every window
// element inside the input, tap by tap (kh, kw) across the row, so that
// neighbouring outputs do not wait on each other; op.finish(acc, count) is the
// output, count being how many elements the window had inside the input.
template <class T, class Op> void poolRows(const KernelCall& call, const Window& w, const Op& op) {
  using C = typename Num<T>::C;
  const TensorView& in = call.inputs[0][0];
  const TensorView& out = call.outputs[0][0];
  const ZPoint& s = call.index.start();
  const ZPoint& e = call.index.end();
  if (call.index.isEmpty()) {
    return;
  }
  // With padding < kernel a shard's window box always overlaps the input, so a
  // non-empty shard has an input view; h0, w0 are its first row and column.
  const std::int64_t h0 = in.region.start()[2], w0 = in.region.start()[3];
  const std::int64_t ow0 = s[3], OWs = e[3] - s[3];
  // Per tap column kw, the output columns j whose tap lies inside the input;
  // per output column, how many of its taps do.
  std::vector<TapSpan> taps(static_cast<std::size_t>(w.KW));
  for (std::int64_t kw = 0; kw < w.KW; ++kw) {
    taps[static_cast<std::size_t>(kw)] = tapsInside(w.sw * ow0 + w.dw * kw - w.pw, w.sw, OWs, w.W);
  }
  std::vector<std::int64_t> colCount(static_cast<std::size_t>(OWs));
  for (std::int64_t j = 0; j < OWs; ++j) {
    const TapSpan k = tapsInside(w.sw * (ow0 + j) - w.pw, w.dw, w.KW, w.W);
    colCount[static_cast<std::size_t>(j)] = k.hi - k.lo;
  }
  const std::int64_t s2 = in.strides[2], s3 = in.strides[3], step = w.sw * s3;
  std::vector<C> acc(static_cast<std::size_t>(OWs));
  for (std::int64_t n = s[0]; n < e[0]; ++n) {
    for (std::int64_t c = s[1]; c < e[1]; ++c) {
      const std::int64_t corner[4] = {n, c, h0, w0};
      const T* plane = in.at<T>(corner);
      for (std::int64_t oh = s[2]; oh < e[2]; ++oh) {
        const std::int64_t ih0 = w.sh * oh - w.ph; // the window's first row
        const TapSpan rows = tapsInside(ih0, w.dh, w.KH, w.H);
        std::fill(acc.begin(), acc.end(), op.init);
        for (std::int64_t kh = rows.lo; kh < rows.hi; ++kh) {
          const T* row = plane + (ih0 + w.dh * kh - h0) * s2;
          for (std::int64_t kw = 0; kw < w.KW; ++kw) {
            const TapSpan j = taps[static_cast<std::size_t>(kw)];
            // Column of output column 0's tap, relative to the view's first.
            const std::int64_t col = (w.sw * ow0 + w.dw * kw - w.pw - w0) * s3;
            for (std::int64_t q = j.lo; q < j.hi; ++q) {
              op.add(acc[static_cast<std::size_t>(q)],
                     static_cast<C>(Num<T>::load(row[col + q * step])));
            }
          }
        }
        const std::int64_t at[4] = {n, c, oh, ow0};
        T* dst = out.at<T>(at);
        for (std::int64_t q = 0; q < OWs; ++q) {
          const auto k = static_cast<std::size_t>(q);
          dst[q * out.strides[3]] =
              Num<T>::store(op.finish(acc[k], (rows.hi - rows.lo) * colCount[k]));
        }
      }
    }
  }
}

template <class C> struct MaxOp {
  C init = -std::numeric_limits<C>::infinity();
  void add(C& acc, C v) const { acc = (v > acc || std::isnan(v)) ? v : acc; } // NaN propagates
  C finish(C acc, std::int64_t) const { return acc; }
};

template <class C> struct AvgOp {
  C init = 0;
  std::int64_t fixed = 0; // the divisor with count_include_pad (KH*KW), else 0
  void add(C& acc, C v) const { acc += v; }
  C finish(C acc, std::int64_t count) const {
    return acc / static_cast<C>(fixed > 0 ? fixed : count);
  }
};

struct Maxpool {
  template <class T> static void run(const KernelCall& call) {
    poolRows<T>(call, windowOf(call.op, true), MaxOp<typename Num<T>::C>{});
  }
};

struct Avgpool {
  template <class T> static void run(const KernelCall& call) {
    const Window w = windowOf(call.op, false);
    AvgOp<typename Num<T>::C> op;
    op.fixed = intBinding(call.op, "count_include_pad") != 0 ? w.KH * w.KW : 0;
    poolRows<T>(call, w, op);
  }
};

// global_avgpool: index [N, C, H, W]; result [N, C, 1, 1] gets the shard's
// sum over its (h, w) part divided by the full H*W.
struct GlobalAvgpool {
  template <class T> static void run(const KernelCall& call) {
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
};

} // namespace

void registerPoolKernels(CpuRegistry& registry) {
  registry.add("maxpool2d", &floatKernel<Maxpool>);
  registry.add("avgpool2d", &floatKernel<Avgpool>);
  registry.add("global_avgpool", &floatKernel<GlobalAvgpool>);
}

} // namespace tapestry::backend::cpu
