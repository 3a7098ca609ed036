// Pooling over NCHW as prepared kernels: maxpool2d and avgpool2d (a whole
// window per output element; the input view is the shard's window boxes
// clipped to the tensor, and window positions outside the tensor are padding:
// -infinity for max, left out of the sum for avg), and global_avgpool (H and
// W are reduction dims: a shard writes its partial sum divided by the full
// H*W).
//
// maxpool2d and avgpool2d in float32 and bfloat16 run on oneDNN's pooling
// over the views as they are (plain NCHW, any strides; the clipped rows and
// columns of a shard's selection become asymmetric padding): its AVX-512 code
// reads NCHW directly, 4x faster than the loops below on ResNet-18's max
// pool (bench_conv_cpu). Its max drops NaN, so a max pool first scans its
// input and leaves one with a NaN to the loops (maxpool2d's NaN propagates).
// Where oneDNN offers only its reference code (a view its kernels do not
// take: they want dense NCHW) and for the other dtypes, the loops run, their
// tap ranges and scratch worked out in prepare. global_avgpool stays on its
// loop: its partial divides by the full H*W, which no oneDNN average does,
// and it reads each element once.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/kernel_util.hpp"
#include "backends/cpu/onednn.hpp"
#include "backends/cpu/pool.hpp"
#include "backends/cpu/team.hpp"
#include "backends/cpu/vector_math.hpp"
#include "core/diag/error.hpp"

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

// One windowed pool over the shard, a row of outputs at a time: acc[j] for
// output column j starts at op.init and takes op.add(acc, v) for every window
// element inside the input, tap by tap (kh, kw) across the row, so that
// neighbouring outputs do not wait on each other; op.finish(acc, count) is the
// output, count being how many elements the window had inside the input. The
// tap ranges and the accumulator row are worked out in prepare.
template <class T, class Op> class LoopPool final : public PreparedPool {
  using C = typename Num<T>::C;

public:
  LoopPool(const KernelCall& call, const Window& w, const Op& op) : w_(w), op_(op) {
    const ZPoint& s = call.index.start();
    const ZPoint& e = call.index.end();
    n0_ = s[0], n1_ = e[0], c0_ = s[1], c1_ = e[1], oh0_ = s[2], oh1_ = e[2];
    ow0_ = s[3], OWs_ = e[3] - s[3];
    // With padding < kernel a shard's window box always overlaps the input, so
    // a non-empty shard has an input view; h0, w0 are its first row and column.
    const TensorView& in = call.inputs[0][0];
    h0_ = in.region.start()[2];
    w0_ = in.region.start()[3];
    // Per tap column kw, the output columns j whose tap lies inside the input;
    // per output column, how many of its taps do.
    for (std::int64_t kw = 0; kw < w.KW; ++kw) {
      taps_.push_back(tapsInside(w.sw * ow0_ + w.dw * kw - w.pw, w.sw, OWs_, w.W));
    }
    for (std::int64_t j = 0; j < OWs_; ++j) {
      const TapSpan k = tapsInside(w.sw * (ow0_ + j) - w.pw, w.dw, w.KW, w.W);
      colCount_.push_back(k.hi - k.lo);
    }
    acc_.resize(static_cast<std::size_t>(OWs_));
  }

  std::string implementation() const override { return "loops"; }

  void run(const KernelCall& call) override {
    const TensorView& in = call.inputs[0][0];
    const TensorView& out = call.outputs[0][0];
    const std::int64_t s2 = in.strides[2], s3 = in.strides[3], step = w_.sw * s3;
    for (std::int64_t n = n0_; n < n1_; ++n) {
      for (std::int64_t c = c0_; c < c1_; ++c) {
        const std::int64_t corner[4] = {n, c, h0_, w0_};
        const T* plane = in.at<T>(corner);
        for (std::int64_t oh = oh0_; oh < oh1_; ++oh) {
          const std::int64_t ih0 = w_.sh * oh - w_.ph; // the window's first row
          const TapSpan rows = tapsInside(ih0, w_.dh, w_.KH, w_.H);
          std::fill(acc_.begin(), acc_.end(), op_.init);
          for (std::int64_t kh = rows.lo; kh < rows.hi; ++kh) {
            const T* row = plane + (ih0 + w_.dh * kh - h0_) * s2;
            for (std::int64_t kw = 0; kw < w_.KW; ++kw) {
              const TapSpan j = taps_[static_cast<std::size_t>(kw)];
              // Column of output column 0's tap, relative to the view's first.
              const std::int64_t col = (w_.sw * ow0_ + w_.dw * kw - w_.pw - w0_) * s3;
              for (std::int64_t q = j.lo; q < j.hi; ++q) {
                op_.add(acc_[static_cast<std::size_t>(q)],
                        static_cast<C>(Num<T>::load(row[col + q * step])));
              }
            }
          }
          const std::int64_t at[4] = {n, c, oh, ow0_};
          T* dst = out.at<T>(at);
          for (std::int64_t q = 0; q < OWs_; ++q) {
            const auto k = static_cast<std::size_t>(q);
            dst[q * out.strides[3]] =
                Num<T>::store(op_.finish(acc_[k], (rows.hi - rows.lo) * colCount_[k]));
          }
        }
      }
    }
  }

private:
  Window w_;
  Op op_;
  std::int64_t n0_ = 0, n1_ = 0, c0_ = 0, c1_ = 0, oh0_ = 0, oh1_ = 0, ow0_ = 0, OWs_ = 0;
  std::int64_t h0_ = 0, w0_ = 0;
  std::vector<TapSpan> taps_;
  std::vector<std::int64_t> colCount_;
  std::vector<C> acc_;
};

// One shard as a oneDNN pooling over the views' boxes: the input selection
// (its clipped rows and columns as padding) and the output block.
// The element count of a box with these extents and strides when its
// elements fill a dense block (the strides, sorted, are those of a dense
// layout in some dim order); 0 otherwise.
std::int64_t denseElements(const std::vector<std::int64_t>& dims,
                           const std::vector<std::int64_t>& strides) {
  std::vector<std::pair<std::int64_t, std::int64_t>> byStride; // (stride, extent)
  std::int64_t count = 1;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    count *= dims[d];
    if (dims[d] != 1) {
      byStride.emplace_back(strides[d], dims[d]);
    }
  }
  std::sort(byStride.begin(), byStride.end());
  std::int64_t dense = 1;
  for (const auto& [stride, extent] : byStride) {
    if (stride != dense) {
      return 0;
    }
    dense *= extent;
  }
  return count;
}

class OnednnPool final : public PreparedPool {
public:
  // `loops`: what runs a max pool whose input has a NaN (null for avg).
  static std::unique_ptr<OnednnPool> make(const KernelCall& call, const Window& w,
                                          dnnl::algorithm algorithm,
                                          std::unique_ptr<PreparedPool> loops) {
    try {
      std::unique_ptr<OnednnPool> pool = describe(call, w, algorithm);
      if (pool) {
        pool->loops_ = std::move(loops);
      }
      return pool;
    } catch (const dnnl::error&) {
      return nullptr; // a view oneDNN cannot describe: the loops run it
    }
  }

  std::string implementation() const override { return "onednn " + impl_; }

  void run(const KernelCall& call) override {
    const int threads = CpuBackend::kernelThreads();
    if (threads != threads_ && !build(threads)) {
      throw InternalError("oneDNN refused a pooling it made for " + std::to_string(threads_) +
                          " threads when asked for " + std::to_string(threads));
    }
    // oneDNN's max drops NaN (the vector max returns its other operand);
    // maxpool2d's NaN propagates, so an input with a NaN runs on the loops.
    if (loops_ && anyNaN(call.inputs[0][0].data + srcOffset_ * elementSize_)) {
      loops_->run(call);
      return;
    }
    onednn::useThreads(threads);
    src_.set_data_handle(call.inputs[0][0].data + srcOffset_ * elementSize_);
    dst_.set_data_handle(call.outputs[0][0].data + dstOffset_ * elementSize_);
    pool_.run(stream_);
  }

private:
  OnednnPool() = default;

  // Whether the input box (the selection, from its first element) holds a NaN.
  // A box dense in memory (row-major or channels last) is one run; in
  // float32 it goes through the vector max (NaN when any element is NaN): the
  // scalar scan took longer than oneDNN's pooling itself (ResNet-18's max
  // pool: 55 us with the scan, 21 with the vector max).
  bool anyNaN(const std::byte* first) const {
    if (elementSize_ == 4 && denseElements_ > 0) {
      return std::isnan(vectorKernels().max(reinterpret_cast<const float*>(first), denseElements_));
    }
    bool nan = false;
    auto scan = [&](auto bits, auto isNaN) {
      using B = decltype(bits);
      const auto* p = reinterpret_cast<const B*>(first);
      if (denseElements_ > 0) {
        bool any = false;
        for (std::int64_t j = 0; j < denseElements_; ++j) {
          any |= isNaN(p[j]);
        }
        nan = any;
        return;
      }
      for (std::int64_t n = 0; n < srcDims_[0]; ++n) {
        for (std::int64_t c = 0; c < srcDims_[1]; ++c) {
          for (std::int64_t h = 0; h < srcDims_[2]; ++h) {
            const B* row = p + n * srcStrides_[0] + c * srcStrides_[1] + h * srcStrides_[2];
            bool any = false;
            for (std::int64_t w = 0; w < srcDims_[3]; ++w) {
              any |= isNaN(row[w * srcStrides_[3]]);
            }
            nan = nan || any;
          }
        }
      }
    };
    if (elementSize_ == 4) { // float32: exponent all ones and a mantissa
      scan(std::uint32_t{}, [](std::uint32_t b) { return (b & 0x7fffffffu) > 0x7f800000u; });
    } else { // bfloat16
      scan(std::uint16_t{}, [](std::uint16_t b) { return (b & 0x7fffu) > 0x7f80u; });
    }
    return nan;
  }

  static std::unique_ptr<OnednnPool> describe(const KernelCall& call, const Window& w,
                                              dnnl::algorithm algorithm) {
    const DType dtype = call.outputs[0][0].dtype;
    const std::optional<dnnl::memory::data_type> type = onednn::dataType(dtype);
    const ZRange sel =
        selection(inputIpf(call, 0), call.index, call.op.application.inputs[0].tensors[0].shape);
    if (!type || sel.isEmpty()) {
      return nullptr;
    }
    const ZPoint& s = call.index.start();
    const std::vector<std::int64_t> out = call.index.shape().vector(); // [N, C, OH, OW]
    const std::vector<std::int64_t> src = sel.shape().vector();
    // As for conv2d: what the selection clipped is padding before it, what
    // the last window reaches past its end padding after it.
    const std::int64_t padTop = sel.start()[2] - (w.sh * s[2] - w.ph);
    const std::int64_t padLeft = sel.start()[3] - (w.sw * s[3] - w.pw);
    const std::int64_t padBottom = (out[2] - 1) * w.sh + w.dh * (w.KH - 1) + 1 - src[2] - padTop;
    const std::int64_t padRight = (out[3] - 1) * w.sw + w.dw * (w.KW - 1) + 1 - src[3] - padLeft;
    if (padTop < 0 || padLeft < 0 || padBottom < 0 || padRight < 0) {
      throw InternalError("pool shard " + call.index.toString() + ": input selection " +
                          sel.toString() + " does not fit the window");
    }
    std::unique_ptr<OnednnPool> pool(new OnednnPool());
    pool->algorithm_ = algorithm;
    pool->elementSize_ = static_cast<std::int64_t>(dtypeSize(dtype));
    const TensorView& in = call.inputs[0][0];
    const TensorView& o = call.outputs[0][0];
    pool->srcDesc_ = onednn::stridedDesc(src, in.strides, *type);
    pool->srcDims_ = src;
    pool->srcStrides_ = in.strides;
    pool->denseElements_ = denseElements(src, in.strides);
    pool->dstDesc_ = onednn::stridedDesc(out, o.strides, *type);
    pool->srcOffset_ = in.offsetOf(sel.start().coords());
    pool->dstOffset_ = o.offsetOf(s.coords());
    pool->strides_ = {w.sh, w.sw};
    pool->kernel_ = {w.KH, w.KW};
    pool->dilation_ = {w.dh - 1, w.dw - 1};
    pool->padL_ = {padTop, padLeft};
    pool->padR_ = {padBottom, padRight};
    if (!pool->build(CpuBackend::kernelThreads())) {
      return nullptr;
    }
    return pool;
  }

  // The primitive for an OpenMP team of `threads`; false where oneDNN refuses
  // the shard or has only its reference code for it.
  bool build(int threads) {
    onednn::useThreads(threads);
    const dnnl::engine& engine = onednn::cpuEngine();
    try {
      const dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, algorithm_,
                                                srcDesc_, dstDesc_, strides_, kernel_, dilation_,
                                                padL_, padR_);
      const dnnl::pooling_v2_forward::primitive_desc pd(desc, onednn::userScratchpad(), engine);
      if (onednn::isReference(pd)) {
        return false;
      }
      stream_ = dnnl::stream(engine);
      src_ = dnnl::memory(srcDesc_, engine, nullptr);
      dst_ = dnnl::memory(dstDesc_, engine, nullptr);
      pool_ = onednn::Step(dnnl::pooling_v2_forward(pd), pd);
      pool_.arg(DNNL_ARG_SRC, src_);
      pool_.arg(DNNL_ARG_DST, dst_);
      impl_ = pd.impl_info_str();
    } catch (const dnnl::error&) {
      return false;
    }
    threads_ = threads;
    return true;
  }

  dnnl::algorithm algorithm_ = dnnl::algorithm::pooling_max;
  std::int64_t denseElements_ = 0; // the input box's elements, where it is dense; else 0
  dnnl::memory::desc srcDesc_, dstDesc_;
  dnnl::memory::dims strides_, kernel_, dilation_, padL_, padR_;
  std::int64_t srcOffset_ = 0, dstOffset_ = 0, elementSize_ = 4;
  std::vector<std::int64_t> srcDims_, srcStrides_;
  std::unique_ptr<PreparedPool> loops_;
  int threads_ = 0;
  dnnl::stream stream_;
  dnnl::memory src_, dst_;
  onednn::Step pool_;
  std::string impl_;
};

// global_avgpool: index [N, C, H, W]; result [N, C, 1, 1] gets the shard's
// sum over its (h, w) part divided by the full H*W.
template <class T> class GlobalAvgpool final : public PreparedPool {
  using C = typename Num<T>::C;

public:
  explicit GlobalAvgpool(const KernelCall& call)
      : s_(call.index.start()), e_(call.index.end()),
        hw_(static_cast<C>(intBinding(call.op, "HW"))),
        sums_(static_cast<std::size_t>(std::max<std::int64_t>(e_[1] - s_[1], 0))) {}
  // (sums_ grows to a row per team thread on the first channels-last run.)

  std::string implementation() const override { return "loops"; }

  // Pointer arithmetic from the box's first element on: offsetOf once a run,
  // not once a row (MobileNetV2's 1280 planes of 2 x 2 took 12 us).
  void run(const KernelCall& call) override {
    const TensorView& in = call.inputs[0][0];
    const TensorView& out = call.outputs[0][0];
    const std::int64_t first[4] = {s_[0], s_[1], s_[2], s_[3]};
    const std::int64_t origin[4] = {s_[0], s_[1], 0, 0};
    const std::int64_t N = e_[0] - s_[0], Cs = e_[1] - s_[1];
    const std::int64_t H = e_[2] - s_[2], W = e_[3] - s_[3];
    if (N <= 0 || Cs <= 0) {
      return;
    }
    T* y = out.at<T>(origin);
    const std::int64_t* os = out.strides.data();
    if (H <= 0 || W <= 0) { // no input: every mean is 0
      for (std::int64_t n = 0; n < N; ++n) {
        for (std::int64_t c = 0; c < Cs; ++c) {
          y[n * os[0] + c * os[1]] = Num<T>::store(C(0));
        }
      }
      return;
    }
    const T* x = in.at<T>(first);
    const std::int64_t* is = in.strides.data();
    if (is[1] == 1 && Cs > 1 && is[2] == W * is[3]) { // channels last, whole rows
      channelsLast(x, is, N, Cs, H * W, y, os);
      return;
    }
    if (is[1] == 1 && Cs > 1) { // channels last: a row of channels at a time
      for (std::int64_t n = 0; n < N; ++n) {
        std::fill(sums_.begin(), sums_.begin() + Cs, C(0));
        for (std::int64_t h = 0; h < H; ++h) {
          addPixels(x + n * is[0] + h * is[2], is[3], W, Cs, sums_.data());
        }
        for (std::int64_t c = 0; c < Cs; ++c) {
          y[n * os[0] + c * os[1]] = Num<T>::store(sums_[static_cast<std::size_t>(c)] / hw_);
        }
      }
      return;
    }
    for (std::int64_t n = 0; n < N; ++n) {
      for (std::int64_t c = 0; c < Cs; ++c) {
        const T* plane = x + n * is[0] + c * is[1];
        C total = 0;
        for (std::int64_t h = 0; h < H; ++h) {
          for (std::int64_t j = 0; j < W; ++j) {
            total += Num<T>::load(plane[h * is[2] + j * is[3]]);
          }
        }
        y[n * os[0] + c * os[1]] = Num<T>::store(total / hw_);
      }
    }
  }

private:
  // sums[c] += x[p * step + c] for the `pixels` pixels from x, c < Cs: four
  // pixels a pass, so that each sum is loaded and stored once per four.
  static void addPixels(const T* x, std::int64_t step, std::int64_t pixels, std::int64_t Cs,
                        C* __restrict sums) {
    std::int64_t p = 0;
    for (; p + 4 <= pixels; p += 4) {
      const T* __restrict a = x + p * step;
      const T* __restrict b = a + step;
      const T* __restrict c2 = b + step;
      const T* __restrict d = c2 + step;
      for (std::int64_t c = 0; c < Cs; ++c) {
        sums[c] +=
            (Num<T>::load(a[c]) + Num<T>::load(b[c])) + (Num<T>::load(c2[c]) + Num<T>::load(d[c]));
      }
    }
    for (; p < pixels; ++p) {
      const T* __restrict a = x + p * step;
      for (std::int64_t c = 0; c < Cs; ++c) {
        sums[c] += Num<T>::load(a[c]);
      }
    }
  }

  // Channels last with whole rows (the pixels of an image one run of
  // `pixels` x Cs): each image's pixels in memory order over the kernel
  // threads' team (team.hpp; from kTeamFrom elements), each thread summing
  // its share into its own row of sums_, then the rows added.
  void channelsLast(const T* x, const std::int64_t* is, std::int64_t N, std::int64_t Cs,
                    std::int64_t pixels, T* y, const std::int64_t* os) {
    const int threads = teamThreads(pixels * Cs);
    sums_.resize(static_cast<std::size_t>(threads * Cs));
    for (std::int64_t n = 0; n < N; ++n) {
      std::fill(sums_.begin(), sums_.end(), C(0));
      const T* image = x + n * is[0];
      if (threads > 1) {
        C* rows = sums_.data();
        overTeam(threads, pixels, 4, [&](std::int64_t lo, std::int64_t hi) {
          addPixels(image + lo * is[3], is[3], hi - lo, Cs, rows + omp_get_thread_num() * Cs);
        });
      } else {
        addPixels(image, is[3], pixels, Cs, sums_.data());
      }
      for (std::int64_t c = 0; c < Cs; ++c) {
        C total = 0;
        for (int t = 0; t < threads; ++t) {
          total += sums_[static_cast<std::size_t>(t * Cs + c)];
        }
        y[n * os[0] + c * os[1]] = Num<T>::store(total / hw_);
      }
    }
  }

  ZPoint s_, e_;
  C hw_;
  std::vector<C> sums_; // per channel of the shard (a row per team thread), channels last
};

std::unique_ptr<PreparedKernel> prepareFastest(const KernelCall& call) {
  return preparePool(call, PoolImplementation::Fastest);
}
void runOnce(const KernelCall& call) {
  preparePool(call, PoolImplementation::Fastest)->run(call);
}

} // namespace

std::unique_ptr<PreparedPool> preparePool(const KernelCall& call, PoolImplementation choice) {
  const std::string& kernel = call.op.kernel;
  if (kernel == "global_avgpool") {
    std::unique_ptr<PreparedPool> out;
    dispatchFloat(call, [&](auto tag) {
      out = std::make_unique<GlobalAvgpool<typename decltype(tag)::type>>(call);
    });
    return out;
  }
  const bool max = kernel == "maxpool2d";
  const Window w = windowOf(call.op, max);
  const bool includePad = !max && intBinding(call.op, "count_include_pad") != 0;
  auto loops = [&] {
    std::unique_ptr<PreparedPool> out;
    dispatchFloat(call, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = typename Num<T>::C;
      if (max) {
        out = std::make_unique<LoopPool<T, MaxOp<C>>>(call, w, MaxOp<C>{});
      } else {
        AvgOp<C> op;
        op.fixed = includePad ? w.KH * w.KW : 0;
        out = std::make_unique<LoopPool<T, AvgOp<C>>>(call, w, op);
      }
    });
    return out;
  };
  if (choice == PoolImplementation::Fastest) {
    const dnnl::algorithm algorithm = max          ? dnnl::algorithm::pooling_max
                                      : includePad ? dnnl::algorithm::pooling_avg_include_padding
                                                   : dnnl::algorithm::pooling_avg_exclude_padding;
    if (std::unique_ptr<OnednnPool> pool =
            OnednnPool::make(call, w, algorithm, max ? loops() : nullptr)) {
      return pool;
    }
  }
  return loops();
}

void registerPoolKernels(CpuRegistry& registry) {
  registry.add("maxpool2d", &runOnce, &prepareFastest);
  registry.add("avgpool2d", &runOnce, &prepareFastest);
  registry.add("global_avgpool", &runOnce, &prepareFastest);
}

} // namespace tapestry::backend::cpu
